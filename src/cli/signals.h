// Clean shutdown on SIGTERM / SIGINT without async signal handlers.
#ifndef PSFLOW_CLI_SIGNALS_H_
#define PSFLOW_CLI_SIGNALS_H_

#include <functional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace psflow::internal {

// Blocks SIGTERM and SIGINT in the calling thread. Call first thing in
// main(), before any thread exists, so that every thread (gRPC's included)
// inherits the mask and the signals wait for a TerminationSignalWatcher
// instead of killing the process mid-write.
void block_termination_signals();

// Waits for SIGTERM/SIGINT with sigwait() on its own thread. The first one
// runs `on_signal(signo)` on a separate thread (so that a slow shutdown does
// not stop the watching); a second one exits the process at once with
// 128+signo, for users who do not want to wait.
// Thread-safety: construct and destroy on one thread; `on_signal` runs on
// another and must not destroy the watcher.
class TerminationSignalWatcher {
 public:
  explicit TerminationSignalWatcher(std::function<void(int)> on_signal);
  // Stops watching; waits for a running `on_signal` to return.
  ~TerminationSignalWatcher();
  TerminationSignalWatcher(const TerminationSignalWatcher&) = delete;
  TerminationSignalWatcher& operator=(const TerminationSignalWatcher&) = delete;

 private:
  void watch();

  const std::function<void(int)> on_signal_;
  absl::Mutex mu_;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  std::thread handler_;  // Runs on_signal_; started by watch().
  std::thread watcher_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_SIGNALS_H_
