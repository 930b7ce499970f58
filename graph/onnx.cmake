# ONNX importer (graph/onnx*.c): C code for the ONNX protobuf schema is generated at build time
# from the system's onnx.proto (Debian libonnx-dev) with protoc-c; nothing is copied into the
# tree. Included by the top-level CMakeLists.txt right after the arenaflow target exists. When a
# piece is missing, the importer is left out and `arenaflow` reports that ONNX is not built in.
find_program(AF_PROTOC_C protoc-c)
find_file(AF_ONNX_PROTO onnx.proto PATHS /usr/include/onnx /usr/local/include/onnx NO_DEFAULT_PATH)
pkg_check_modules(PROTOBUF_C IMPORTED_TARGET libprotobuf-c)

if(AF_PROTOC_C AND AF_ONNX_PROTO AND PROTOBUF_C_FOUND)
  get_filename_component(AF_ONNX_PROTO_DIR ${AF_ONNX_PROTO} DIRECTORY)
  set(AF_ONNX_GEN_DIR ${CMAKE_CURRENT_BINARY_DIR}/onnx-gen)
  file(MAKE_DIRECTORY ${AF_ONNX_GEN_DIR})
  add_custom_command(
    OUTPUT ${AF_ONNX_GEN_DIR}/onnx.pb-c.c ${AF_ONNX_GEN_DIR}/onnx.pb-c.h
    COMMAND ${AF_PROTOC_C} --c_out=${AF_ONNX_GEN_DIR} -I${AF_ONNX_PROTO_DIR} ${AF_ONNX_PROTO}
    DEPENDS ${AF_ONNX_PROTO}
    COMMENT "protoc-c: generating C code for onnx.proto"
    VERBATIM)
  # The header is listed too, so every object of the target waits for the generator.
  target_sources(arenaflow PRIVATE ${AF_ONNX_GEN_DIR}/onnx.pb-c.c ${AF_ONNX_GEN_DIR}/onnx.pb-c.h)
  # Generated code is not ours to warn about.
  set_source_files_properties(${AF_ONNX_GEN_DIR}/onnx.pb-c.c PROPERTIES COMPILE_OPTIONS "-w")
  target_include_directories(arenaflow PRIVATE ${AF_ONNX_GEN_DIR})
  target_link_libraries(arenaflow PUBLIC PkgConfig::PROTOBUF_C)
  target_compile_definitions(arenaflow PUBLIC AF_HAVE_ONNX=1)
  message(STATUS "ONNX importer: on (${AF_ONNX_PROTO})")
else()
  # The glob put graph/onnx*.c into the library; without protobuf-c they compile to nothing
  # (they test AF_HAVE_ONNX).
  message(STATUS "ONNX importer: off (needs protoc-c, onnx.proto and libprotobuf-c)")
endif()
