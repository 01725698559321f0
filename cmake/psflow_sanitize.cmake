# Sanitizer and fuzzing builds (make sanitize, make tsan, make fuzz): the
# same targets compiled by clang with instrumentation. They live in build
# directories of their own (build/clang-sanitize, build/clang-tsan): ASan
# and TSan cannot share one, and neither may mix with the release build.
#
#   -DPSFLOW_SANITIZE=address,undefined  ASan + UBSan, every UB check fatal
#   -DPSFLOW_SANITIZE=thread             TSan
#   -DPSFLOW_FUZZ=ON                     the libFuzzer harnesses (fuzz/); every
#                                        library gets coverage instrumentation
#                                        (-fsanitize=fuzzer-no-link)
# The Debian libraries we link (gRPC, protobuf, abseil) are not
# instrumented; see docs/security.md for what that means for each tool.
set(PSFLOW_SANITIZE "" CACHE STRING
  "Sanitizers for every target: address,undefined or thread (clang only)")
option(PSFLOW_FUZZ "Build the libFuzzer harnesses in fuzz/ (clang only)" OFF)

if(PSFLOW_SANITIZE OR PSFLOW_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "PSFLOW_SANITIZE / PSFLOW_FUZZ need clang (CXX=clang++-14), not "
      "${CMAKE_CXX_COMPILER_ID}; make sanitize, make tsan and make fuzz configure it")
  endif()
endif()
if(PSFLOW_SANITIZE)
  if(NOT PSFLOW_SANITIZE MATCHES "^(address,undefined|address|undefined|thread)$")
    message(FATAL_ERROR "PSFLOW_SANITIZE='${PSFLOW_SANITIZE}': use address,undefined or thread")
  endif()
  add_compile_options(-fsanitize=${PSFLOW_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${PSFLOW_SANITIZE})
  if(PSFLOW_SANITIZE MATCHES "undefined")
    # Every UB report fails the program (and so the test) instead of
    # printing and carrying on.
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
if(PSFLOW_FUZZ)
  # Coverage feedback from every library; the harnesses link libFuzzer's
  # main with -fsanitize=fuzzer (fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
