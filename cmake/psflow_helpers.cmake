# Warnings are errors on our own code; generated and third-party code is exempt.
set(PSFLOW_WARNINGS -Wall -Wextra -Wpedantic -Werror -Wno-unused-parameter)

function(psflow_target_defaults target)
  target_compile_options(${target} PRIVATE ${PSFLOW_WARNINGS})
  target_include_directories(${target} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
endfunction()

# psflow_test(NAME name SOURCES a_test.cc ... [LABELS l ...] [TIMEOUT s])
# One gtest binary per call; each TEST becomes its own ctest entry so that
# ctest -j spreads them over the cores.
function(psflow_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LABELS;DEPS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  psflow_target_defaults(${T_NAME})
  target_link_libraries(${T_NAME} PRIVATE psflow_core ${T_DEPS}
    GTest::gtest GTest::gmock GTest::gtest_main)
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

include(GoogleTest)
