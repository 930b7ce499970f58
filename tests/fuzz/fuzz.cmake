# Fuzzing (issue #10): libFuzzer targets tests/fuzz/fuzz_<target>.c, and the corpus replay test.
#
# Included from the top-level CMakeLists.txt (`include(tests/fuzz/fuzz.cmake OPTIONAL)`, or by
# tests/fuzz/run.sh through CMAKE_PROJECT_INCLUDE). Everything that needs other targets runs
# deferred, at the end of the top-level directory, so the include may sit anywhere.
#
#   AF_FUZZ=ON (clang, with AF_ASAN=ON): the library and the daemon core are compiled with
#     -fsanitize=fuzzer-no-link, and each harness becomes an executable `fuzz_<target>` linked
#     with -fsanitize=fuzzer. tests/fuzz/run.sh drives this build.
#   Always: tests/test_fuzz_corpus.c (made by the generic tests/test_*.c loop) replays every
#     corpus file through the same entry points; the daemon harnesses join it only when the
#     daemon core exists, so it is linked here and told so with AF_FUZZ_HAVE_DAEMON.
include_guard(GLOBAL)
option(AF_FUZZ "Build the libFuzzer harnesses (clang; use with AF_ASAN=ON)" OFF)

if(AF_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "AF_FUZZ needs clang (CC=clang); tests/fuzz/run.sh sets it up")
  endif()
  if(NOT AF_ASAN)
    message(WARNING "AF_FUZZ without AF_ASAN: memory errors will go unseen")
  endif()
endif()

function(af_fuzz_setup)
  if(TARGET test_fuzz_corpus AND TARGET arenaflowd_core)
    target_link_libraries(test_fuzz_corpus PRIVATE arenaflowd_core)
    target_compile_definitions(test_fuzz_corpus PRIVATE AF_FUZZ_HAVE_DAEMON=1)
  endif()
  if(NOT AF_FUZZ)
    return()
  endif()
  target_compile_options(arenaflow PRIVATE -fsanitize=fuzzer-no-link)
  if(TARGET arenaflowd_core)
    target_compile_options(arenaflowd_core PRIVATE -fsanitize=fuzzer-no-link)
  endif()
  file(GLOB srcs ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    file(READ ${src} text)
    if(text MATCHES "daemon/daemon_int.h" AND NOT TARGET arenaflowd_core)
      message(STATUS "${name}: skipped (no daemon core)")
      continue()
    endif()
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(${name} PRIVATE arenaflow PkgConfig::INIH)
    if(text MATCHES "daemon/daemon_int.h")
      target_link_libraries(${name} PRIVATE arenaflowd_core)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL af_fuzz_setup)
