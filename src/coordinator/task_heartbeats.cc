#include "coordinator/task_heartbeats.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "psflow/cluster_spec.h"
#include "rpc/channel.h"

namespace psflow::internal {

TaskHeartbeats::TaskHeartbeats(std::vector<Task> tasks, Options options, absl::Time start)
    : tasks_(std::move(tasks)), options_(options), seen_(tasks_.size(), Seen{start, {}, 0, 0}) {
  if (!options_.start_threads) return;
  threads_.reserve(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i) threads_.emplace_back([this, i] { loop(i); });
}

TaskHeartbeats::~TaskHeartbeats() {
  stop_.Notify();
  for (std::thread& thread : threads_) thread.join();
}

void TaskHeartbeats::loop(size_t index) {
  do {
    // A heartbeat never outlasts its period, so that a task that does not
    // answer (paused, unreachable) is asked again on time.
    absl::StatusOr<uint64_t> outcome = tasks_[index].beat(absl::Now() + options_.interval);
    record(index, outcome, absl::Now());
  } while (!stop_.WaitForNotificationWithTimeout(options_.interval));
}

void TaskHeartbeats::record(size_t index, const absl::StatusOr<uint64_t>& outcome, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Seen& seen = seen_[index];
  if (!outcome.ok()) {
    seen.last_error = outcome.status();
    return;
  }
  if (now - seen.last_answer >= options_.timeout) {
    PSFLOW_LOG(Info, tasks_[index].name, " answers heartbeats again");
  }
  seen.last_answer = std::max(seen.last_answer, now);
  if (*outcome != 0 && seen.incarnation != 0 && *outcome != seen.incarnation) {
    ++seen.restarts;
    PSFLOW_LOG(Warning, tasks_[index].name,
               " restarted (heartbeat from a new incarnation); a restarted ps task lost its "
               "variables");
  }
  if (*outcome != 0) seen.incarnation = *outcome;
}

std::vector<TaskState> TaskHeartbeats::states(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  std::vector<TaskState> out;
  out.reserve(tasks_.size());
  for (size_t i = 0; i < tasks_.size(); ++i) {
    const Seen& seen = seen_[i];
    TaskState state{tasks_[i].name, absl::OkStatus(), seen.restarts, seen.incarnation};
    const absl::Duration silent = now - seen.last_answer;
    if (silent >= options_.timeout) {
      state.error = absl::UnavailableError(absl::StrCat(
          "Task ", tasks_[i].name, " heartbeat timeout: no answer for ",
          absl::StrFormat("%.1f s", absl::ToDoubleSeconds(silent)), " (heartbeat_timeout ",
          absl::FormatDuration(options_.timeout), ")",
          seen.last_error.ok() ? "" : absl::StrCat("; last error: ", seen.last_error.ToString()),
          ". The task failed, was preempted, is paused or cannot be reached."));
    }
    out.push_back(std::move(state));
  }
  return out;
}

TaskHeartbeats::Task heartbeat_task(const std::string& address, std::string_view job, int index) {
  std::shared_ptr<grpc::Channel> channel = create_channel(address);
  return TaskHeartbeats::Task{task_name(job, index),
                              [channel = std::move(channel), address, job = std::string(job),
                               index](absl::Time deadline) -> absl::StatusOr<uint64_t> {
                                absl::StatusOr<v1::GetStatusResponse> status =
                                    get_status(channel, address, job, index, deadline);
                                if (!status.ok()) return status.status();
                                return status->incarnation();
                              }};
}

}  // namespace psflow::internal
