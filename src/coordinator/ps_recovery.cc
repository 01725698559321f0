#include "psflow/ps_recovery.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "coordinator/ps_monitor.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::PsMonitor;

struct PsRecovery::State {
  State(CheckpointManager checkpoints, PsRecoveryOptions options, PsMonitor monitor)
      : checkpoints(std::move(checkpoints)), options(options), monitor(std::move(monitor)) {}

  CheckpointManager checkpoints;
  const PsRecoveryOptions options;
  PsMonitor monitor;
  int recoveries = 0;
  // Tasks seen restarted whose restore has not succeeded yet: a restore
  // that failed part-way (another task lost meanwhile) left some tasks
  // restored and others not, so the next recover() restores again even if
  // nothing restarted since.
  std::vector<std::string> unrestored;
};

PsRecovery::PsRecovery(std::unique_ptr<State> state) : state_(std::move(state)) {}
PsRecovery::PsRecovery(PsRecovery&&) noexcept = default;
PsRecovery& PsRecovery::operator=(PsRecovery&&) noexcept = default;
PsRecovery::~PsRecovery() = default;

absl::StatusOr<PsRecovery> PsRecovery::create(const ClusterSpec& spec,
                                              CheckpointManager checkpoints,
                                              PsRecoveryOptions options) {
  if (!(options.timeout > absl::ZeroDuration()) || options.timeout > absl::Hours(24)) {
    return absl::InvalidArgumentError(
        absl::StrCat("PsRecoveryOptions::timeout ", absl::FormatDuration(options.timeout),
                     " is out of range; use more than 0 and at most 24h"));
  }
  if (options.max_recoveries < 0) {
    return absl::InvalidArgumentError(absl::StrCat("PsRecoveryOptions::max_recoveries ",
                                                   options.max_recoveries,
                                                   " is negative; use 0 or more"));
  }
  if (spec.num_tasks(kPsJob) == 0) {
    return absl::FailedPreconditionError(
        "PsRecovery needs a cluster with ps tasks; this one has none");
  }
  PSFLOW_ASSIGN_OR_RETURN(PsMonitor monitor,
                          PsMonitor::create(spec, absl::Now() + options.timeout));
  if (!checkpoints.latest_checkpoint().has_value()) {
    PSFLOW_RETURN_IF_ERROR(checkpoints.save().status());
  }
  return PsRecovery(std::make_unique<State>(std::move(checkpoints), options, std::move(monitor)));
}

absl::StatusOr<PsRecovery::Restored> PsRecovery::recover(const absl::Status& error) {
  if (error.ok()) {
    return absl::InvalidArgumentError(
        "PsRecovery::recover needs the error that stopped training; it got OK");
  }
  State& s = *state_;
  PSFLOW_ASSIGN_OR_RETURN(
      std::vector<std::string> restarted,
      s.monitor.restarted_since(error, absl::Now() + s.options.timeout, s.options.out));
  for (std::string& task : restarted) {
    if (std::find(s.unrestored.begin(), s.unrestored.end(), task) == s.unrestored.end()) {
      s.unrestored.push_back(std::move(task));
    }
  }
  // Every ps task is the one seen before. A task the error says was
  // unreachable (a cut link) is back with its variables, but the failed
  // steps may have reached some tasks and not others: restore all the same.
  // Any other error is not a ps fault.
  std::vector<std::string> unreachable;
  if (s.unrestored.empty()) {
    unreachable = s.monitor.unreachable_in(error);
    if (unreachable.empty()) return error;
  }
  const std::string tasks = absl::StrJoin(s.unrestored.empty() ? unreachable : s.unrestored, ", ");
  const char* what = s.unrestored.empty() ? "was unreachable and is back" : "restarted";
  if (s.recoveries >= s.options.max_recoveries) {
    return absl::UnavailableError(
        absl::StrCat("parameter server(s) ", tasks, " ", what, "; the ", s.options.max_recoveries,
                     " recoveries allowed are used up (last error: ", error.ToString(), ")"));
  }
  std::optional<std::string> latest = s.checkpoints.latest_checkpoint();
  if (!latest.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat("parameter server(s) ", tasks, " ", what, " but ", s.checkpoints.directory(),
                     " holds no checkpoint to restore (was it emptied?)"));
  }
  // Read before restoring, so that an unreadable index changes nothing.
  Restored restored;
  absl::StatusOr<int64_t> iterations = load_checkpoint_iterations(*latest);
  if (iterations.ok()) {
    restored.iterations = *iterations;
  } else if (!absl::IsNotFound(iterations.status())) {
    return iterations.status();
  }
  PSFLOW_RETURN_IF_ERROR(s.checkpoints.checkpoint().restore(*latest));
  ++s.recoveries;
  restored.restarted = std::exchange(s.unrestored, {});
  restored.unreachable = std::move(unreachable);
  restored.checkpoint = *latest;
  if (s.options.out != nullptr) {
    std::fprintf(s.options.out, "ps recovery %d: %s %s (%s); restored all %d ps tasks from %s%s\n",
                 s.recoveries, tasks.c_str(), what,
                 std::string(absl::StatusCodeToString(error.code())).c_str(), s.monitor.num_tasks(),
                 latest->c_str(),
                 restored.iterations.has_value()
                     ? absl::StrCat(" (", *restored.iterations, " steps)").c_str()
                     : "");
    std::fflush(s.options.out);
  }
  return restored;
}

int PsRecovery::recoveries() const { return state_->recoveries; }
int PsRecovery::num_ps_tasks() const { return state_->monitor.num_tasks(); }

}  // namespace psflow
