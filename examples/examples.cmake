# C examples (examples/*.c): each a program linking the library, built with it. Included
# OPTIONALly from the top-level CMakeLists.txt.
option(AF_BUILD_EXAMPLES "Build the C example programs in examples/" ON)
if(AF_BUILD_EXAMPLES)
  add_executable(af_stream ${CMAKE_CURRENT_SOURCE_DIR}/examples/stream.c)
  target_link_libraries(af_stream PRIVATE arenaflow)
endif()
