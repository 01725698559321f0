#include "cli/signals.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

// The thread of the live SignalShutdown's watcher (0: none), and a signal
// that came while there was none. Lock-free: the handler below reads them.
std::atomic<pid_t> g_watcher_tid{0};
std::atomic<int> g_pending_signal{0};
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<int>::is_always_lock_free);

// Sends a signal kept in g_pending_signal to the watcher, if there is one.
// The exchange lets exactly one of the handler and a starting watcher send
// it, so one signal is never taken for two.
void deliver_pending_signal() {
  const pid_t watcher = g_watcher_tid.load();
  if (watcher == 0) return;
  const int signo = g_pending_signal.exchange(0);
  if (signo != 0) syscall(SYS_tgkill, getpid(), watcher, signo);
}

// Runs only on a thread that does not block the signals: one a shared
// library started before main() blocked them (OpenBLAS's threaded build
// starts its pool when it is loaded). The kernel may hand a process-wide
// SIGTERM to such a thread; it is passed on to the watcher, which blocks it
// and takes it with sigtimedwait(), as if it had come there.
void forward_termination_signal(int signo) {
  const int saved_errno = errno;
  g_pending_signal.store(signo);
  deliver_pending_signal();
  errno = saved_errno;
}

}  // namespace

void block_termination_signals() {
  const sigset_t set = termination_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  struct sigaction action = {};
  action.sa_handler = &forward_termination_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

SignalShutdown::SignalShutdown(absl::Duration stop_timeout)
    : stop_timeout_(stop_timeout), watcher_([this] { watch(); }) {}

SignalShutdown::~SignalShutdown() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
  }
  g_watcher_tid.store(0);
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
  g_watcher_tid.store(static_cast<pid_t>(syscall(SYS_gettid)));
  deliver_pending_signal();            // One that came before this watcher existed.
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
        join_handler_if_done();
        _exit(exit_code_for_signal(signo_));
      }
      continue;
    }
    if (signo_ != 0) {
      PSFLOW_LOG(Warning, "received ", signal_name(signo),
                 " again: exiting at once, without finishing the shutdown");
      join_handler_if_done();
      _exit(exit_code_for_signal(signo));
    }
    signo_ = signo;
    deadline = absl::Now() + stop_timeout_;
    PSFLOW_LOG(Info, "received ", signal_name(signo), ": stopping within ",
               absl::FormatDuration(stop_timeout_), " (a second signal exits at once)");
    handler_ = std::thread([this, signo] {
      on_first_signal(signo);
      absl::MutexLock done(&mu_);
      handler_done_ = true;
    });
  }
}

void SignalShutdown::join_handler_if_done() {
  // mu_ is held: a handler not done yet cannot finish (it waits for mu_ to
  // say so), and one that is done has left mu_ and only returns.
  if (handler_done_ && handler_.joinable()) handler_.join();
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
