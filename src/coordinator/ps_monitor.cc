#include "coordinator/ps_monitor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "psflow/status_macros.h"
#include "rpc/channel.h"

namespace psflow::internal {
namespace {

// Between rounds of GetStatus calls to tasks that did not answer: a
// restarting task is back within about a second (launcher backoff plus
// start-up), so this keeps the added delay small without spinning.
constexpr absl::Duration kPollInterval = absl::Milliseconds(200);
// One GetStatus call; a task that is up answers in well under a second.
constexpr absl::Duration kCallTimeout = absl::Seconds(2);

}  // namespace

absl::StatusOr<PsMonitor> PsMonitor::create(const ClusterSpec& spec, absl::Time deadline) {
  std::vector<Task> tasks;
  for (int index : spec.task_indices(kPsJob)) {
    PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(kPsJob, index));
    tasks.push_back(Task{std::move(address), task_name(kPsJob, index), 0});
  }
  PsMonitor monitor(std::move(tasks));
  // Every incarnation starts unknown (0): this records the first ones.
  PSFLOW_RETURN_IF_ERROR(monitor.restarted_since(absl::OkStatus(), deadline, nullptr).status());
  return monitor;
}

absl::StatusOr<std::vector<std::string>> PsMonitor::restarted_since(const absl::Status& error,
                                                                    absl::Time deadline,
                                                                    std::FILE* out) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<uint64_t> seen, await_incarnations(error, deadline, out));
  std::vector<std::string> restarted;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (seen[i] != tasks_[i].incarnation) restarted.push_back(tasks_[i].name);
    tasks_[i].incarnation = seen[i];
  }
  return restarted;
}

std::vector<std::string> PsMonitor::unreachable_in(const absl::Status& error) const {
  std::vector<std::string> out;
  if (!absl::IsUnavailable(error) && !absl::IsDeadlineExceeded(error)) return out;
  for (const Task& task : tasks_) {
    // The name followed by a character that cannot continue it, so that
    // task:1 does not match task:10.
    for (size_t at = error.message().find(task.name); at != std::string_view::npos;
         at = error.message().find(task.name, at + 1)) {
      const size_t end = at + task.name.size();
      if (end == error.message().size() || !absl::ascii_isdigit(error.message()[end])) {
        out.push_back(task.name);
        break;
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<uint64_t>> PsMonitor::await_incarnations(const absl::Status& error,
                                                                    absl::Time deadline,
                                                                    std::FILE* out) const {
  std::vector<uint64_t> seen(tasks_.size(), 0);
  std::vector<std::string> down;
  bool announced = false;
  while (true) {
    down.clear();
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (seen[i] != 0) continue;
      // A fresh channel each poll: a kept one would first wait out its
      // reconnect backoff once the task went down.
      absl::StatusOr<v1::GetStatusResponse> status =
          get_status(tasks_[i].address, kPsJob, static_cast<int>(i),
                     std::min(deadline, absl::Now() + kCallTimeout));
      if (status.ok() && status->incarnation() != 0) {
        seen[i] = status->incarnation();
      } else {
        down.push_back(tasks_[i].name);
      }
    }
    if (down.empty()) break;
    if (absl::Now() + kPollInterval >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("parameter server task(s) ", absl::StrJoin(down, ", "),
                       " did not come back within the recovery timeout",
                       error.ok() ? "" : absl::StrCat(" after: ", error.ToString())));
    }
    if (!announced && out != nullptr) {
      std::fprintf(out, "waiting for %s to come back (%s)\n", absl::StrJoin(down, ", ").c_str(),
                   error.ToString().c_str());
      std::fflush(out);
      announced = true;
    }
    absl::SleepFor(kPollInterval);
  }
  return seen;
}

}  // namespace psflow::internal
