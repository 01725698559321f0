#include "coordinator/watchdog.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/logging.h"

namespace psflow::internal {
namespace {

// How often the thread checks: a tenth of the shorter bound, within
// [10 ms, 1 s], so that a bound is overrun by at most a tenth.
absl::Duration check_period(const CoordinatorWatchdog::Options& o) {
  absl::Duration shortest = absl::InfiniteDuration();
  if (o.stall_timeout > absl::ZeroDuration()) shortest = std::min(shortest, o.stall_timeout);
  if (o.all_workers_lost_timeout > absl::ZeroDuration()) {
    shortest = std::min(shortest, o.all_workers_lost_timeout);
  }
  return std::clamp(shortest / 10, absl::Milliseconds(10), absl::Seconds(1));
}

std::string seconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

}  // namespace

std::string describe_waiting(const WatchdogSnapshot& s, absl::Time now) {
  std::vector<std::string> lost;
  for (const WatchdogSnapshot::Worker& w : s.workers) {
    if (!w.lost_since.has_value()) continue;
    lost.push_back(absl::StrCat(w.task_name, " (lost for ", seconds(now - *w.lost_since),
                                w.last_error.ok() ? "" : ": ", w.last_error.ToString(), ")"));
  }
  std::vector<std::string> unhealthy;
  for (const TaskState& t : s.tasks) {
    if (!t.healthy()) unhealthy.push_back(t.error.ToString());
  }
  std::string tasks;
  if (!s.tasks.empty()) {
    tasks = unhealthy.empty()
                ? absl::StrCat("; task states: all ", s.tasks.size(), " healthy")
                : absl::StrCat("; task states: ", unhealthy.size(), " of ", s.tasks.size(),
                               " unhealthy: ", absl::StrJoin(unhealthy, "; "));
  }
  return absl::StrCat(
      s.queued, " closure(s) queued and ", s.in_flight, " running; ",
      s.workers.size() - lost.size(), " of ", s.workers.size(), " worker(s) answering",
      lost.empty() ? "" : absl::StrCat("; not answering: ", absl::StrJoin(lost, ", ")), tasks);
}

CoordinatorWatchdog::CoordinatorWatchdog(Options options,
                                         std::function<WatchdogSnapshot()> snapshot,
                                         std::function<void(const absl::Status&)> abort_queued)
    : options_(options), snapshot_(std::move(snapshot)), abort_queued_(std::move(abort_queued)) {
  const bool any = options_.stall_timeout > absl::ZeroDuration() ||
                   options_.all_workers_lost_timeout > absl::ZeroDuration();
  if (options_.start_thread && any) thread_ = std::thread([this] { loop(); });
}

CoordinatorWatchdog::~CoordinatorWatchdog() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void CoordinatorWatchdog::loop() {
  const absl::Duration period = check_period(options_);
  while (!stop_.WaitForNotificationWithTimeout(period)) (void)check(absl::Now());
}

std::optional<std::string> CoordinatorWatchdog::check(absl::Time now) {
  const WatchdogSnapshot s = snapshot_();
  if (s.queued + s.in_flight == 0) {
    busy_since_.reset();
    last_warning_.reset();
    return std::nullopt;
  }
  if (!busy_since_.has_value()) busy_since_ = now;

  // The no-worker bound: every worker lost, the last of them long enough.
  if (options_.all_workers_lost_timeout > absl::ZeroDuration() && s.queued > 0 &&
      !s.workers.empty()) {
    std::optional<absl::Time> all_lost_since;
    for (const WatchdogSnapshot::Worker& w : s.workers) {
      if (!w.lost_since.has_value()) {
        all_lost_since.reset();
        break;
      }
      all_lost_since = std::max(all_lost_since.value_or(absl::InfinitePast()), *w.lost_since);
    }
    if (all_lost_since.has_value() &&
        now - std::max(*all_lost_since, *busy_since_) >= options_.all_workers_lost_timeout) {
      const absl::Status error = absl::UnavailableError(absl::StrCat(
          "no worker has answered for ", seconds(now - *all_lost_since),
          " (all_workers_lost_timeout ", seconds(options_.all_workers_lost_timeout),
          "): ", describe_waiting(s, now),
          ". Bring a worker back or raise ClusterCoordinatorOptions::all_workers_lost_timeout"));
      PSFLOW_LOG(Error, error.message());
      abort_queued_(error);
      // Closures scheduled after this get the whole bound again.
      busy_since_.reset();
      return std::string(error.message());
    }
  }

  // The stall report.
  if (options_.stall_timeout > absl::ZeroDuration()) {
    const absl::Time quiet_since =
        std::max({s.last_finish, *busy_since_, last_warning_.value_or(absl::InfinitePast())});
    if (now - quiet_since >= options_.stall_timeout) {
      last_warning_ = now;
      std::string message = absl::StrCat("no closure has finished for ",
                                         seconds(now - std::max(s.last_finish, *busy_since_)), ": ",
                                         describe_waiting(s, now));
      if (options_.dump_stacks) {
        const absl::StatusOr<std::string> path = options_.dump_stacks();
        absl::StrAppend(&message, path.ok()
                                      ? "; thread stacks written to " + *path
                                      : "; thread stacks not written: " + path.status().ToString());
      }
      PSFLOW_LOG(Warning, "watchdog: ", message);
      return message;
    }
  }
  return std::nullopt;
}

}  // namespace psflow::internal
