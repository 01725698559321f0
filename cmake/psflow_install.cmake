# What `cmake --install <build> --prefix <prefix>` puts under <prefix>:
#
#   bin/psflow                          the command line
#   include/psflow/*.h                  the public API, nothing else
#   lib/libpsflow_<layer>.a             one static library per layer, and
#   lib/libpsflow_proto.a               the generated wire messages they use
#   lib/cmake/psflow/                   find_package(psflow CONFIG): psflow::psflow
#   lib/pkgconfig/psflow.pc             pkg-config --cflags --libs psflow
#
# Nothing of src/ and no path of the source or build tree is part of an
# installed target; tests/install/install_test.py checks the whole package
# from outside (`ctest -L install`).
include(CMakePackageConfigHelpers)

set(PSFLOW_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/psflow)
set(PSFLOW_PKGCONFIG_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

get_property(psflow_layers GLOBAL PROPERTY PSFLOW_LAYER_NAMES)
set(psflow_libraries psflow_proto)
foreach(layer ${psflow_layers})
  list(APPEND psflow_libraries psflow_${layer})
endforeach()

install(TARGETS psflow RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/psflow
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(TARGETS ${psflow_libraries} psflow_all EXPORT psflowTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT psflowTargets NAMESPACE psflow:: DESTINATION ${PSFLOW_CMAKE_INSTALL_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/psflowConfig.cmake.in
  ${PROJECT_BINARY_DIR}/psflowConfig.cmake
  INSTALL_DESTINATION ${PSFLOW_CMAKE_INSTALL_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/psflowConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/psflowConfig.cmake
  ${PROJECT_BINARY_DIR}/psflowConfigVersion.cmake
  DESTINATION ${PSFLOW_CMAKE_INSTALL_DIR})

# psflow.pc. Libs: the layers top first (the reverse of their declaration
# order, which psflow_layer keeps bottom first), then the proto library.
# Requires: the pkg-config module of every library a layer links, in the
# same order and read from the targets themselves, so that a dependency
# added to a layer without a module here stops the configure instead of
# breaking pkg-config users. The libraries are static, so their
# dependencies go in Requires (pkg-config --libs lists them without
# --static), not in Requires.private.
set(psflow_pc_modules
  gRPC::grpc++=grpc++ protobuf::libprotobuf=protobuf ZLIB::ZLIB=zlib
  Eigen3::Eigen=eigen3 nlohmann_json::nlohmann_json=nlohmann_json
  OpenSSL::SSL=libssl OpenSSL::Crypto=libcrypto OpenBLAS::OpenBLAS=openblas)
set(psflow_pc_libs)
set(psflow_pc_requires)
set(psflow_link_order ${psflow_layers})
list(REVERSE psflow_link_order)
foreach(layer ${psflow_link_order} proto)
  string(APPEND psflow_pc_libs " -lpsflow_${layer}")
  get_target_property(deps psflow_${layer} INTERFACE_LINK_LIBRARIES)
  foreach(dep ${deps})
    if(dep MATCHES "^psflow_" OR dep MATCHES "^\\$<BUILD_INTERFACE:" OR dep STREQUAL "Threads::Threads")
      continue()  # ours; build tree only; -pthread below
    endif()
    if(dep MATCHES "^absl::(.+)$")
      list(APPEND psflow_pc_requires absl_${CMAKE_MATCH_1})
      continue()
    endif()
    set(module)
    foreach(entry ${psflow_pc_modules})
      if(entry MATCHES "^(.+)=(.+)$" AND CMAKE_MATCH_1 STREQUAL dep)
        set(module ${CMAKE_MATCH_2})
      endif()
    endforeach()
    if(NOT module)
      message(FATAL_ERROR "psflow_${layer} links ${dep}: name its pkg-config module in "
        "cmake/psflow_install.cmake (psflow_pc_modules) and its package in "
        "cmake/psflowConfig.cmake.in")
    endif()
    list(APPEND psflow_pc_requires ${module})
  endforeach()
endforeach()
list(REMOVE_DUPLICATES psflow_pc_requires)
list(JOIN psflow_pc_requires " " psflow_pc_requires)
# The .pc file finds the prefix from where it lies (${pcfiledir}), so that
# --prefix at install time holds for it as for the CMake package.
file(RELATIVE_PATH psflow_pc_to_prefix /prefix/${PSFLOW_PKGCONFIG_INSTALL_DIR} /prefix)
string(REGEX REPLACE "/$" "" psflow_pc_to_prefix ${psflow_pc_to_prefix})
configure_file(${PROJECT_SOURCE_DIR}/cmake/psflow.pc.in ${PROJECT_BINARY_DIR}/psflow.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/psflow.pc DESTINATION ${PSFLOW_PKGCONFIG_INSTALL_DIR})
