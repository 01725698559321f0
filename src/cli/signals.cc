#include "cli/signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
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

std::string signal_name(int signo) {
  const char* name = sigabbrev_np(signo);
  return absl::StrCat("SIG", name != nullptr ? name : "?");
}

// How long the watcher sleeps at most while no signal came (it wakes to
// look again; nothing is due then).
constexpr absl::Duration kIdleWait = absl::Hours(1);

}  // namespace

void block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalShutdown::SignalShutdown(absl::Duration stop_timeout)
    : stop_timeout_(stop_timeout), watcher_([this] { watch(); }) {}

SignalShutdown::~SignalShutdown() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  // Wakes the sigtimedwait() below; it sees closing_ and returns.
  pthread_kill(watcher_.native_handle(), SIGTERM);
  watcher_.join();
  if (handler_.joinable()) handler_.join();
}

std::optional<int> SignalShutdown::exit_code() const {
  absl::MutexLock lock(&mu_);
  if (signo_ == 0) return std::nullopt;
  return exit_code_for_signal(signo_);
}

void SignalShutdown::watch() {
  const sigset_t set = termination_signals();
  std::optional<absl::Time> deadline;  // Once the first signal came.
  // Bounded: each pass waits at most kIdleWait, and the process ends by
  // the deadline once a signal came.
  for (;;) {
    const absl::Duration wait =
        deadline.has_value() ? std::max(absl::ZeroDuration(), *deadline - absl::Now()) : kIdleWait;
    const timespec timeout = absl::ToTimespec(wait);
    const int signo = sigtimedwait(&set, nullptr, &timeout);
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    if (signo < 0) {  // EAGAIN (the wait ended) or EINTR.
      if (deadline.has_value() && absl::Now() >= *deadline) {
        const std::string what = stop_.activity().what;
        PSFLOW_LOG(Error, "still ", what.empty() ? "stopping" : what, " ",
                   absl::FormatDuration(stop_timeout_), " after ", signal_name(signo_),
                   ": exiting now, without finishing (the stop timeout)");
        _exit(exit_code_for_signal(signo_));
      }
      continue;
    }
    if (signo_ != 0) {
      PSFLOW_LOG(Warning, "received ", signal_name(signo),
                 " again: exiting at once, without finishing the shutdown");
      _exit(exit_code_for_signal(signo));
    }
    signo_ = signo;
    deadline = absl::Now() + stop_timeout_;
    PSFLOW_LOG(Info, "received ", signal_name(signo), ": stopping within ",
               absl::FormatDuration(stop_timeout_), " (a second signal exits at once)");
    handler_ = std::thread([this, signo] { on_first_signal(signo); });
  }
}

void SignalShutdown::on_first_signal(int signo) {
  const std::string name = signal_name(signo);
  const std::optional<StopActivity> activity =
      stop_.request(absl::CancelledError(absl::StrCat("interrupted by ", name)));
  if (activity.has_value() && activity->at_once) {
    PSFLOW_LOG(Warning, "interrupted by ", name, " while ", activity->what, "; exiting");
    _exit(exit_code_for_signal(signo));
  }
}

}  // namespace psflow::internal
