// Every thread's stack of this process, for diagnosing a hang without a
// debugger (TF's watchdog dumps them with Python's faulthandler).
//
// How: the calling thread sends a real-time signal (kStackSignal) to each
// other thread of the process (tgkill over /proc/self/task); each records
// its own frames with glibc's backtrace() in the signal handler and wakes
// the caller. Frames are named with backtrace_symbols (demangled) and, for
// those it cannot name (functions not exported), with addr2line when the
// system has it. A thread that blocks the signal or is stuck in the kernel
// does not answer within the per-thread timeout and is listed as such.
#ifndef PSFLOW_BASE_THREAD_STACKS_H_
#define PSFLOW_BASE_THREAD_STACKS_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace psflow::internal {

// The signal the dump uses (SIGRTMAX - 3, which glibc and gRPC leave alone).
[[nodiscard]] int stack_dump_signal();

// One block per thread, this one first:
//   Thread <tid> "<name>" (this thread):
//     #0 <frame>
//   ...
// ending with "==== End of stack traces ====" (as TF's dump). Dumps are
// serialised (one at a time per process). FAILED_PRECONDITION when another
// handler owns the signal.
// Thread-safety: thread-safe.
[[nodiscard]] absl::StatusOr<std::string> all_thread_stacks(
    absl::Duration per_thread_timeout = absl::Milliseconds(500));

// Writes all_thread_stacks() to a new file
// <dir>/<prefix>-<YYYYmmdd-HHMMSS.ffffff>-<pid>.txt and returns its path.
// Errors name the file (a directory that does not exist, no space).
[[nodiscard]] absl::StatusOr<std::string> write_thread_stacks(const std::string& dir,
                                                              std::string_view prefix = "stacks");

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_THREAD_STACKS_H_
