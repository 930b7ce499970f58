# arenaflowd (daemon/*.c): HTTP/1.1 through Debian's libh2o, which is the H2O library built with
# libuv (its pkg-config file is libh2o.pc; the other flavour, libh2o-evloop.pc, has its own event
# loop and is not what we want). h2o's headers include OpenSSL's, and the library itself links
# OpenSSL, zlib and wslay. Included OPTIONALly from the top-level CMakeLists.txt; without libh2o
# the daemon is skipped with a message instead of failing the whole build.
pkg_check_modules(H2O IMPORTED_TARGET libh2o)
pkg_check_modules(OPENSSL IMPORTED_TARGET openssl)
file(GLOB AF_DAEMON_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/daemon/*.c)

if(H2O_FOUND AND OPENSSL_FOUND AND AF_DAEMON_SOURCES)
  add_executable(arenaflowd ${AF_DAEMON_SOURCES})
  target_include_directories(arenaflowd PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
  # h2o 2.2 selects its libuv backend with H2O_USE_LIBUV (default on when no other is chosen);
  # say it explicitly so a stray define cannot switch the socket layer under us.
  target_compile_definitions(arenaflowd PRIVATE H2O_USE_LIBUV=1)
  target_link_libraries(arenaflowd PRIVATE arenaflow PkgConfig::H2O PkgConfig::OPENSSL
                        PkgConfig::INIH PkgConfig::JANSSON PkgConfig::LIBUV m)
  install(TARGETS arenaflowd RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  message(STATUS "arenaflowd: on (libh2o ${H2O_VERSION}, libuv flavour)")
else()
  message(STATUS "arenaflowd: off (needs libh2o-dev with libuv, libssl-dev)")
endif()
