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
if(PSFLOW_SANITIZE STREQUAL "thread")
  # Debian's abseil is not built with TSan: its synchronization primitives
  # are invisible to it. src/base/tsan_absl_sync.cc defines their entry
  # points in every executable, which tell TSan the happens-before edges
  # they make; exported, they interpose the library's for libgrpc and
  # libgpr too. The symbols are mangled with abseil's inline namespace.
  find_file(PSFLOW_ABSL_OPTIONS_H absl/base/options.h REQUIRED)
  file(STRINGS ${PSFLOW_ABSL_OPTIONS_H} ns_line
    REGEX "^#define ABSL_OPTION_INLINE_NAMESPACE_NAME ")
  string(REGEX REPLACE ".* ([A-Za-z0-9_]+)$" "\\1" absl_ns "${ns_line}")
  string(LENGTH "${absl_ns}" absl_ns_length)
  set(mangled "4absl${absl_ns_length}${absl_ns}")
  add_compile_definitions(PSFLOW_ABSL_MANGLED_NAMESPACE="${mangled}")
  foreach(member
      5Mutex4LockEv 5Mutex6UnlockEv 5Mutex7TryLockEv 5Mutex10ReaderLockEv
      5Mutex12ReaderUnlockEv 5Mutex13ReaderTryLockEv 5Mutex8LockWhenERKNS0_9ConditionE
      5Mutex14ReaderLockWhenERKNS0_9ConditionE
      5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE
      5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE
      5Mutex5AwaitERKNS0_9ConditionE
      5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE
      5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE
      7CondVar4WaitEPNS0_5MutexE 7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE
      7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE 12Notification6NotifyEv
      15BlockingCounter14DecrementCountEv 15BlockingCounter4WaitEv 7Barrier5BlockEv
      6Status15UnrefNonInlinedEm)
    add_link_options(-Wl,--export-dynamic-symbol=_ZN${mangled}${member})
  endforeach()
  foreach(member 12Notification19WaitForNotificationEv
      12Notification30WaitForNotificationWithTimeoutENS0_8DurationE
      12Notification31WaitForNotificationWithDeadlineENS0_4TimeE)
    add_link_options(-Wl,--export-dynamic-symbol=_ZNK${mangled}${member})
  endforeach()
endif()
if(PSFLOW_FUZZ)
  # Coverage feedback from every library; the harnesses link libFuzzer's
  # main with -fsanitize=fuzzer (fuzz/CMakeLists.txt).
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
