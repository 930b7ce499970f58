# arenaflowd (daemon/*.c): HTTP/1.1 through Debian's libh2o, which is the H2O library built with
# libuv (its pkg-config file is libh2o.pc; the other flavour, libh2o-evloop.pc, has its own event
# loop and is not what we want). h2o's headers include OpenSSL's, and the library itself links
# OpenSSL, zlib and wslay. Included OPTIONALly from the top-level CMakeLists.txt.
#
# Two targets: `arenaflowd_core`, everything but the sockets (api, config, store, work, metrics:
# af__daemon_handle() is callable without a network — tests/test_daemon.c and fuzz harnesses link
# it), and `arenaflowd`, the core plus daemon/server*.c (h2o, TLS, signals, main). The core needs no
# h2o, so its test builds even where libh2o is missing.
pkg_check_modules(H2O IMPORTED_TARGET libh2o)
pkg_check_modules(OPENSSL IMPORTED_TARGET openssl)
file(GLOB AF_DAEMON_CORE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/daemon/*.c)
file(GLOB AF_DAEMON_SERVER_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/daemon/server*.c)
list(REMOVE_ITEM AF_DAEMON_CORE_SOURCES ${AF_DAEMON_SERVER_SOURCES})

add_library(arenaflowd_core STATIC ${AF_DAEMON_CORE_SOURCES})
target_include_directories(arenaflowd_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(arenaflowd_core PUBLIC arenaflow PkgConfig::INIH PkgConfig::JANSSON
                      PkgConfig::LIBUV PkgConfig::XXHASH m)

if(H2O_FOUND AND OPENSSL_FOUND)
  add_executable(arenaflowd ${AF_DAEMON_SERVER_SOURCES})
  # h2o 2.2 selects its libuv backend with H2O_USE_LIBUV (default on when no other is chosen);
  # say it explicitly so a stray define cannot switch the socket layer under us.
  target_compile_definitions(arenaflowd PRIVATE H2O_USE_LIBUV=1)
  target_link_libraries(arenaflowd PRIVATE arenaflowd_core PkgConfig::H2O PkgConfig::OPENSSL)
  install(TARGETS arenaflowd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  message(STATUS "arenaflowd: on (libh2o ${H2O_VERSION}, libuv flavour)")
else()
  message(STATUS "arenaflowd: off (needs libh2o-dev with libuv, libssl-dev); core and its test still build")
endif()

# tests/test_daemon*.c are created by the generic tests/test_*.c loop, which runs after this file
# is included and links only arenaflow; link the core into them once every target exists.
function(af_daemon_link_tests)
  file(GLOB srcs ${CMAKE_SOURCE_DIR}/tests/test_daemon*.c)
  foreach(src ${srcs})
    get_filename_component(name ${src} NAME_WE)
    if(TARGET ${name})
      target_link_libraries(${name} PRIVATE arenaflowd_core)
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL af_daemon_link_tests)
