# The GEMM behind the dense layers (src/nn): Debian's OpenBLAS through
# Eigen's BLAS interface (EIGEN_USE_BLAS), or Eigen's own kernels. Chosen by
# measurement (docs/benchmarks.md, "GEMM backend"): OpenBLAS picks AVX2 /
# AVX-512 kernels at run time, while Eigen's are compiled for the baseline
# x86-64 ISA (SSE2) of a portable build. Only the nn layer multiplies
# matrices, so only it is built with EIGEN_USE_BLAS; the other layers' Eigen
# code (elementwise) is the same either way.
set(PSFLOW_GEMM "openblas" CACHE STRING "GEMM of the dense layers: openblas or eigen")
set_property(CACHE PSFLOW_GEMM PROPERTY STRINGS openblas eigen)

# OpenBLAS::OpenBLAS: Debian's libopenblas-dev (pkg-config module
# "openblas"); cmake/psflowConfig.cmake.in makes the same target for
# projects that use an installed psflow.
if(PSFLOW_GEMM STREQUAL "openblas" AND NOT TARGET OpenBLAS::OpenBLAS)
  find_library(PSFLOW_OPENBLAS_LIBRARY NAMES openblas REQUIRED)
  add_library(OpenBLAS::OpenBLAS UNKNOWN IMPORTED)
  set_target_properties(OpenBLAS::OpenBLAS PROPERTIES IMPORTED_LOCATION
    ${PSFLOW_OPENBLAS_LIBRARY})
endif()

function(psflow_use_gemm target)
  if(PSFLOW_GEMM STREQUAL "openblas")
    target_compile_definitions(${target} PRIVATE EIGEN_USE_BLAS PSFLOW_OPENBLAS)
    target_link_libraries(${target} PUBLIC OpenBLAS::OpenBLAS)
  elseif(NOT PSFLOW_GEMM STREQUAL "eigen")
    message(FATAL_ERROR "PSFLOW_GEMM is '${PSFLOW_GEMM}'; use openblas or eigen")
  endif()
endfunction()
