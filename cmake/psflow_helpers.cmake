# Warnings are errors on our own code; generated and third-party code is
# exempt, and so are programs built on an installed psflow: the flags are
# PRIVATE, never part of an exported target.
set(PSFLOW_WARNINGS -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter)
# Clang checks the ABSL_GUARDED_BY / ABSL_LOCKS_EXCLUDED annotations (GCC
# ignores them): every clang build of psflow (the sanitizer builds that
# make test compiles) is also the thread-safety check.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  list(APPEND PSFLOW_WARNINGS -Wthread-safety)
endif()

# Our own targets: warnings as errors, the public headers (include/ here,
# <prefix>/include once installed), and src/ as a private include path (src/
# is never part of any target's interface, in the build tree or installed).
function(psflow_target_defaults target)
  target_compile_options(${target} PRIVATE ${PSFLOW_WARNINGS})
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  # The public headers need C++20; programs that use them get it too.
  target_compile_features(${target} PUBLIC cxx_std_20)
endfunction()

# psflow_layer(NAME name DIR dir [DEPS layer ...] [LIBS lib ...])
# One static library per layer, psflow_<name>, from src/<dir>/*.cc (tests
# and registered_functions.cc, the function registrations, excluded). It
# links only the layers named in DEPS, which must lie below it: a call into
# a layer above fails to link. Layers are declared bottom first (a DEPS
# entry not declared yet is an error), so that the reverse of the order of
# declaration is a link order (psflow.pc). Installed as psflow::<name>.
function(psflow_layer)
  cmake_parse_arguments(L "" "NAME;DIR" "DEPS;LIBS" ${ARGN})
  get_property(declared GLOBAL PROPERTY PSFLOW_LAYER_NAMES)
  foreach(d ${L_DEPS})
    if(NOT d IN_LIST declared)
      message(FATAL_ERROR "psflow_layer(${L_NAME}): layer '${d}' must be declared before "
        "the layers above it")
    endif()
  endforeach()
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${L_DIR}/*.cc)
  list(FILTER sources EXCLUDE REGEX "(_test|registered_functions|/main)\\.cc$")
  add_library(psflow_${L_NAME} STATIC ${sources})
  psflow_target_defaults(psflow_${L_NAME})
  set(deps)
  foreach(d ${L_DEPS})
    list(APPEND deps psflow_${d})
  endforeach()
  target_link_libraries(psflow_${L_NAME} PUBLIC ${deps} ${L_LIBS})
  set_target_properties(psflow_${L_NAME} PROPERTIES EXPORT_NAME ${L_NAME})
  set_property(GLOBAL APPEND PROPERTY PSFLOW_LAYER_NAMES ${L_NAME})
  set_property(GLOBAL PROPERTY PSFLOW_LAYER_DIR_${L_NAME} ${L_DIR})
endfunction()

# psflow_test(NAME name SOURCES a_test.cc ... [LABELS l ...] [TIMEOUT s] [DEPS ...])
# One gtest binary per call; each TEST becomes its own ctest entry so that
# ctest -j spreads them over the cores.
function(psflow_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  psflow_target_defaults(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS}
    GTest::gtest GTest::gmock GTest::gtest_main)
  # Tests that start real tasks: the user's binary, and the one that also
  # registers the test-only functions (testing/*, examples/*).
  target_compile_definitions(${T_NAME} PRIVATE
    PSFLOW_BINARY_PATH="$<TARGET_FILE:psflow>"
    PSFLOW_TESTING_BINARY_PATH="$<TARGET_FILE:psflow_testing>")
  add_dependencies(${T_NAME} psflow psflow_testing)
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  if(NOT T_LABELS)
    set(T_LABELS unit)
  endif()
  gtest_discover_tests(${T_NAME}
    PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    DISCOVERY_TIMEOUT 60)
endfunction()
