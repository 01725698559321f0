// What every command does on SIGTERM and SIGINT, without async signal
// handlers (docs/fault_tolerance.md, "Stopping").
#ifndef PSFLOW_CLI_SIGNALS_H_
#define PSFLOW_CLI_SIGNALS_H_

#include <optional>
#include <string_view>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/stop_request.h"

namespace psflow::internal {

// How long a command may take to stop after the first SIGTERM or SIGINT,
// unless told otherwise (psflow train --stop-timeout): well within the 30 s
// Kubernetes waits before SIGKILL.
inline constexpr absl::Duration kDefaultStopTimeout = absl::Seconds(10);

// Blocks SIGTERM and SIGINT in the calling thread. Call first thing in
// main(), before any thread exists, so that every thread (gRPC's included)
// inherits the mask and the signals wait for a SignalShutdown instead of
// killing the process mid-write. Threads that shared libraries started
// before main() do not inherit it; a handler installed here passes a signal
// that reaches one of them on to the SignalShutdown.
void block_termination_signals();

// The exit status of a process stopped by `signo`: 128 + signo, as a shell
// reports a process the signal killed (130 for SIGINT, 143 for SIGTERM).
[[nodiscard]] constexpr int exit_code_for_signal(int signo) { return 128 + signo; }

// Takes SIGTERM and SIGINT (blocked by block_termination_signals) with
// sigtimedwait() on a thread of its own:
//  * The first one requests a stop of stop_request(), with CANCELLED
//    "interrupted by SIG<NAME>", on another thread (the stop's handlers may
//    take a while); the command stops its work and returns exit_code().
//    When the work was in an activity that loses nothing when cut short
//    (StopActivity::at_once: waiting for tasks, starting up), the process
//    exits at once instead, with 128+signal, saying what it was waiting
//    for.
//  * If the process still runs `stop_timeout` after it, it exits with
//    128+signal, saying what the work was still doing.
//  * A second one exits at once with 128+signal.
// Thread-safety: construct and destroy on one thread; stop_request() and
// exit_code() may be used from any thread.
class SignalShutdown {
 public:
  explicit SignalShutdown(absl::Duration stop_timeout = kDefaultStopTimeout);
  // Stops watching; waits for the stop's handlers if they run.
  ~SignalShutdown();
  SignalShutdown(const SignalShutdown&) = delete;
  SignalShutdown& operator=(const SignalShutdown&) = delete;

  [[nodiscard]] StopRequest& stop_request() { return stop_; }
  // 128+signal once a signal requested the stop; nullopt before.
  [[nodiscard]] std::optional<int> exit_code() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void watch() ABSL_LOCKS_EXCLUDED(mu_);
  void join_handler_if_done() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void on_first_signal(int signo);

  const absl::Duration stop_timeout_;
  StopRequest stop_;
  mutable absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  int signo_ ABSL_GUARDED_BY(mu_) = 0;  // The first signal; 0: none yet.
  // Set by handler_ as the last thing it does: once true, handler_ is
  // joined before watch() ends the process (a finished thread left unjoined
  // at exit is what TSan reports as a thread leak).
  bool handler_done_ ABSL_GUARDED_BY(mu_) = false;
  std::thread handler_;  // Runs on_first_signal; started by watch().
  std::thread watcher_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_SIGNALS_H_
