#include "cli/signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "base/logging.h"

namespace psflow::internal {
namespace {

sigset_t termination_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

const char* signal_name(int signo) {
  const char* name = sigabbrev_np(signo);
  return name != nullptr ? name : "?";
}

}  // namespace

void block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

TerminationSignalWatcher::TerminationSignalWatcher(std::function<void(int)> on_signal)
    : on_signal_(std::move(on_signal)), watcher_([this] { watch(); }) {}

TerminationSignalWatcher::~TerminationSignalWatcher() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  // Wakes the sigwait() below; it sees closing_ and returns.
  pthread_kill(watcher_.native_handle(), SIGTERM);
  watcher_.join();
  if (handler_.joinable()) handler_.join();
}

void TerminationSignalWatcher::watch() {
  const sigset_t set = termination_signals();
  for (;;) {
    int signo = 0;
    if (sigwait(&set, &signo) != 0) continue;
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    if (fired_) {
      PSFLOW_LOG(Warning, "received SIG", signal_name(signo),
                 " again: exiting at once, without a clean shutdown");
      _exit(128 + signo);
    }
    fired_ = true;
    PSFLOW_LOG(Info, "received SIG", signal_name(signo), ": shutting down");
    handler_ = std::thread([this, signo] { on_signal_(signo); });
  }
}

}  // namespace psflow::internal
