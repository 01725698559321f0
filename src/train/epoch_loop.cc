#include "train/epoch_loop.h"

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/status_macros.h"

namespace psflow {
namespace {

// The checkpoint a ps recovery went back to.
struct PsRollback {
  std::string path;
  int64_t iterations = 0;
};

// Restores every ps task from the latest checkpoint (recreating the parts a
// restarted ps lost).
absl::StatusOr<PsRollback> restore_after_ps_loss(const CheckpointManager& checkpoints) {
  std::optional<std::string> latest = checkpoints.latest_checkpoint();
  if (!latest.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "a ps restarted but ", checkpoints.directory(), " holds no checkpoint to restore"));
  }
  PSFLOW_RETURN_IF_ERROR(checkpoints.checkpoint().restore(*latest));
  PSFLOW_ASSIGN_OR_RETURN(int64_t iterations, load_checkpoint_iterations(*latest));
  return PsRollback{*latest, iterations};
}

}  // namespace

absl::Status validate_ps_recovery_options(const TrainOptions& o) {
  if (o.ps_recovery && o.run_dir.empty()) {
    return absl::InvalidArgumentError(
        "--ps-recovery needs --run-dir: a restarted ps is restored from the checkpoints there");
  }
  if (!(o.ps_recovery_timeout_seconds > 0) || o.ps_recovery_timeout_seconds > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("--ps-recovery-timeout ", o.ps_recovery_timeout_seconds,
                     " is out of range; use 1 to 86400 seconds"));
  }
  if (o.max_ps_recoveries < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_ps_recoveries ", o.max_ps_recoveries,
                                                   " is negative; use 0 or more"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EpochLoop> EpochLoop::create(const ClusterSpec& spec, const TrainOptions& options,
                                            const std::vector<ShardedVariable>& variables,
                                            const Optimizer& optimizer,
                                            int64_t steps_per_epoch) {
  if (steps_per_epoch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("an epoch of ", steps_per_epoch, " steps trains nothing"));
  }
  PSFLOW_RETURN_IF_ERROR(validate_ps_recovery_options(options));
  EpochLoop loop(options, steps_per_epoch);
  if (!options.run_dir.empty()) {
    std::map<std::string, ShardedVariable> named;
    for (const ShardedVariable& v : variables) named.emplace(v.name(), v);
    PSFLOW_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::create(std::move(named), optimizer));
    PSFLOW_ASSIGN_OR_RETURN(CheckpointManager manager,
                            CheckpointManager::create(std::move(checkpoint),
                                                      options.run_dir + "/checkpoints", 3));
    PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> restored, manager.restore_or_initialize());
    if (restored.has_value()) {
      PSFLOW_ASSIGN_OR_RETURN(int64_t iterations, load_checkpoint_iterations(*restored));
      loop.first_epoch_ = static_cast<int>(iterations / steps_per_epoch) + 1;
      if (options.out != nullptr) {
        std::fprintf(options.out, "resuming from %s: %lld steps done, starting at epoch %d\n",
                     restored->c_str(), static_cast<long long>(iterations), loop.first_epoch_);
        std::fflush(options.out);
      }
    }
    loop.checkpoints_.emplace(std::move(manager));
  }
  if (options.ps_recovery) {
    PSFLOW_ASSIGN_OR_RETURN(loop.ps_monitor_,
                            PsMonitor::create(spec, absl::Now() + absl::Seconds(60)));
    // Recovery restores the latest checkpoint: there must be one from the
    // start (ckpt-0 on a fresh run).
    if (!loop.checkpoints_->latest_checkpoint().has_value()) {
      PSFLOW_RETURN_IF_ERROR(loop.checkpoints_->save().status());
    }
  }
  return loop;
}

absl::Status EpochLoop::run(const EpochHooks& hooks) {
  const TrainOptions& options = *options_;
  // Steps applied since the model was last checkpointed or restored: what a
  // ps recovery rolls back.
  if (first_epoch_ > options.epochs) return hooks.report_restored();
  int64_t unsaved_steps = 0;
  int recoveries = 0;
  for (int epoch = first_epoch_; epoch <= options.epochs;) {
    int64_t completed = 0;
    absl::Status epoch_status = hooks.run_epoch(epoch, &completed);
    if (epoch_status.ok() && checkpoints_.has_value()) {
      epoch_status = checkpoints_->save().status();
    }
    unsaved_steps += completed;
    if (epoch_status.ok()) {
      if (checkpoints_.has_value()) unsaved_steps = 0;
      ++epoch;
      continue;
    }
    if (!ps_monitor_.has_value()) return epoch_status;
    PSFLOW_ASSIGN_OR_RETURN(
        std::vector<std::string> restarted,
        ps_monitor_->restarted_since(
            epoch_status, absl::Now() + absl::Seconds(options.ps_recovery_timeout_seconds),
            options.out));
    if (restarted.empty()) return epoch_status;  // Not a ps fault.
    if (++recoveries > options.max_ps_recoveries) {
      return absl::UnavailableError(absl::StrCat(
          "parameter server(s) ", absl::StrJoin(restarted, ", "), " restarted; the ",
          options.max_ps_recoveries, " recoveries allowed per run are used up (last error: ",
          epoch_status.ToString(), ")"));
    }
    PSFLOW_ASSIGN_OR_RETURN(PsRollback rollback, restore_after_ps_loss(*checkpoints_));
    epoch = static_cast<int>(rollback.iterations / steps_per_epoch_) + 1;
    hooks.roll_back_to(epoch, unsaved_steps);
    if (options.out != nullptr) {
      std::fprintf(options.out,
                   "ps recovery %d: %s restarted (%s); restored all %d ps tasks from %s "
                   "(%lld steps); %lld completed steps rolled back, training again from "
                   "epoch %d\n",
                   recoveries, absl::StrJoin(restarted, ", ").c_str(),
                   std::string(absl::StatusCodeToString(epoch_status.code())).c_str(),
                   ps_monitor_->num_tasks(), rollback.path.c_str(),
                   static_cast<long long>(rollback.iterations),
                   static_cast<long long>(unsaved_steps), epoch);
      std::fflush(options.out);
    }
    unsaved_steps = 0;
  }
  return absl::OkStatus();
}

}  // namespace psflow
