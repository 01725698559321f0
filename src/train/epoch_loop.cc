#include "train/epoch_loop.h"

#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "psflow/status_macros.h"
#include "train/resume_checkpoint.h"

namespace psflow::internal {

absl::Status validate_ps_recovery_options(const TrainOptions& o) {
  if (o.ps_recovery && o.run_dir.empty()) {
    return absl::InvalidArgumentError(
        "--ps-recovery needs --run-dir: a restarted ps is restored from the checkpoints there");
  }
  if (!(o.ps_recovery_timeout_seconds > 0) || o.ps_recovery_timeout_seconds > 86400) {
    return absl::InvalidArgumentError(absl::StrCat("--ps-recovery-timeout ",
                                                   o.ps_recovery_timeout_seconds,
                                                   " is out of range; use 1 to 86400 seconds"));
  }
  if (o.max_ps_recoveries < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_ps_recoveries ", o.max_ps_recoveries, " is negative; use 0 or more"));
  }
  return absl::OkStatus();
}

absl::StatusOr<EpochLoop> EpochLoop::without_checkpoints(const TrainOptions& options,
                                                         int64_t steps_per_epoch) {
  if (steps_per_epoch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("an epoch of ", steps_per_epoch, " steps trains nothing"));
  }
  return EpochLoop(options, steps_per_epoch);
}

absl::StatusOr<EpochLoop> EpochLoop::create(const ClusterSpec& spec, const TrainOptions& options,
                                            const std::vector<std::string>& names,
                                            const std::vector<ShardedVariable>& variables,
                                            const Optimizer& optimizer, int64_t steps_per_epoch,
                                            std::map<std::string, DynamicEmbedding> tables) {
  PSFLOW_ASSIGN_OR_RETURN(EpochLoop loop, without_checkpoints(options, steps_per_epoch));
  PSFLOW_RETURN_IF_ERROR(validate_ps_recovery_options(options));
  if (options.run_dir.empty() && !options.checkpoint.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--checkpoint '", options.checkpoint,
                                                   "' needs --run-dir: the run resumes there"));
  }
  if (!options.run_dir.empty()) {
    if (names.size() != variables.size()) {
      return absl::InternalError(
          absl::StrCat(names.size(), " checkpoint names for ", variables.size(), " variables"));
    }
    std::map<std::string, ShardedVariable> named;
    for (size_t i = 0; i < variables.size(); ++i) named.emplace(names[i], variables[i]);
    // Every dynamic table of the model is saved and restored with it.
    PSFLOW_ASSIGN_OR_RETURN(Checkpoint checkpoint,
                            Checkpoint::create(std::move(named), optimizer, std::move(tables)));
    PSFLOW_ASSIGN_OR_RETURN(
        CheckpointManager manager,
        CheckpointManager::create(std::move(checkpoint), options.run_dir + "/checkpoints", 3));
    // Not manager.restore_or_initialize(): that keeps TF's meaning (the
    // latest or an error), and a run must get past a damaged checkpoint.
    PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> restored,
                            restore_resume_checkpoint(manager, options.checkpoint, options.out));
    if (restored.has_value()) {
      PSFLOW_ASSIGN_OR_RETURN(int64_t iterations, load_checkpoint_iterations(*restored));
      loop.restored_steps_ = iterations;
      loop.first_epoch_ = static_cast<int>(iterations / steps_per_epoch) + 1;
      // A checkpoint saved on a stop request may end mid-epoch.
      loop.first_epoch_done_steps_ = iterations % steps_per_epoch;
      if (options.out != nullptr) {
        const std::string within =
            loop.first_epoch_done_steps_ == 0 || loop.first_epoch_ > options.epochs
                ? ""
                : absl::StrCat(" at step ", loop.first_epoch_done_steps_ + 1, " of ",
                               steps_per_epoch);
        std::fprintf(options.out, "resuming from %s: %lld steps done, starting at epoch %d%s\n",
                     restored->c_str(), static_cast<long long>(iterations), loop.first_epoch_,
                     within.c_str());
        std::fflush(options.out);
      }
    }
    loop.checkpoints_.emplace(std::move(manager));
  }
  // Without ps tasks (the mirrored strategy) there is no ps to recover.
  if (options.ps_recovery && spec.num_tasks(kPsJob) > 0) {
    // Saves ckpt-0 on a fresh run: a recovery always has a checkpoint.
    PsRecoveryOptions recovery;
    recovery.timeout = absl::Seconds(options.ps_recovery_timeout_seconds);
    recovery.max_recoveries = options.max_ps_recoveries;
    recovery.out = options.out;
    PSFLOW_ASSIGN_OR_RETURN(loop.ps_recovery_,
                            PsRecovery::create(spec, *loop.checkpoints_, recovery));
  }
  return loop;
}

bool EpochLoop::set_activity(std::string what, bool at_once) const {
  return options_->stop == nullptr || options_->stop->set_activity({std::move(what), at_once});
}

absl::Status EpochLoop::run(const EpochHooks& hooks) {
  const TrainOptions& options = *options_;
  if (first_epoch_ > options.epochs) return absl::OkStatus();
  // Steps applied since the model was last checkpointed or restored: what a
  // ps recovery rolls back.
  int64_t unsaved_steps = 0;
  int epoch = first_epoch_;
  int64_t done_steps = first_epoch_done_steps_;  // of `epoch`, in the model
  // Bounded: every pass trains an epoch, or ends the run, or is one of at
  // most options.max_ps_recoveries recoveries.
  while (epoch <= options.epochs) {
    if (!set_activity(absl::StrCat("training epoch ", epoch, "/", options.epochs,
                                   ": waiting for the closures running on workers to come back "
                                   "before saving a checkpoint"),
                      /*at_once=*/false)) {
      return stop(hooks, epoch, absl::OkStatus());
    }
    int64_t completed = 0;
    absl::Status epoch_status = hooks.run_epoch(epoch, done_steps, &completed);
    if (epoch_status.ok() && checkpoints_.has_value()) {
      epoch_status = checkpoints_->save().status();
    }
    unsaved_steps += completed;
    if (epoch_status.ok()) {
      if (checkpoints_.has_value()) unsaved_steps = 0;
      ++epoch;
      done_steps = 0;
      continue;
    }
    if (stop_requested()) return stop(hooks, epoch, epoch_status);
    if (!ps_recovery_.has_value()) return epoch_status;
    // Nothing to save while the ps tasks are restored: a stop ends it.
    if (!set_activity("recovering from a lost ps task (every ps is restored from the latest "
                      "checkpoint)",
                      /*at_once=*/true)) {
      return stop(hooks, epoch, epoch_status);
    }
    // Returns epoch_status itself when it was no ps fault.
    PSFLOW_ASSIGN_OR_RETURN(PsRecovery::Restored restored, ps_recovery_->recover(epoch_status));
    const int64_t iterations = restored.iterations.value_or(0);
    epoch = static_cast<int>(iterations / steps_per_epoch_) + 1;
    done_steps = iterations % steps_per_epoch_;
    hooks.roll_back_to(epoch, unsaved_steps);
    if (options.out != nullptr) {
      std::fprintf(options.out, "%lld completed steps rolled back, training again from epoch %d\n",
                   static_cast<long long>(unsaved_steps), epoch);
      std::fflush(options.out);
    }
    unsaved_steps = 0;
  }
  return absl::OkStatus();
}

absl::Status EpochLoop::stop(const EpochHooks& hooks, int epoch, const absl::Status& epoch_status) {
  const TrainOptions& options = *options_;
  const absl::Status reason = options.stop->reason();
  const std::string where =
      absl::StrCat(reason.message(), " during epoch ", epoch, "/", options.epochs);
  std::string kept;
  if (!checkpoints_.has_value()) {
    kept = "this run keeps no checkpoints";
  } else if (epoch_status.ok()) {
    // Stopped between epochs: the last one was saved (or nothing trained).
    const std::optional<std::string> latest = checkpoints_->latest_checkpoint();
    kept = latest.has_value() ? absl::StrCat("every step done is in ", *latest,
                                             "; rerun with the same --run-dir to resume")
                              : "nothing was trained";
  } else {
    // The epoch's closures were cancelled and are back (join returned).
    const absl::Status consistent =
        epoch_status == reason
            ? (hooks.check_state_after_stop ? hooks.check_state_after_stop() : absl::OkStatus())
            : absl::AbortedError(absl::StrCat("the epoch failed: ", epoch_status.ToString()));
    absl::StatusOr<std::string> saved = absl::UnknownError("not saved");
    if (consistent.ok()) {
      (void)set_activity("saving a checkpoint of the steps done", /*at_once=*/false);
      saved = checkpoints_->save();
    } else {
      saved = consistent;
    }
    const std::optional<std::string> latest = checkpoints_->latest_checkpoint();
    const std::string resume = latest.has_value()
                                   ? absl::StrCat("; rerun with the same --run-dir to resume from ",
                                                  saved.ok() ? "it" : *latest)
                                   : "";
    kept = saved.ok()
               ? absl::StrCat("saved ", *saved, resume)
               : absl::StrCat("no checkpoint saved (", saved.status().message(), ")", resume);
  }
  if (options.out != nullptr) {
    std::fprintf(options.out, "%s: %s\n", where.c_str(), kept.c_str());
    std::fflush(options.out);
  }
  // What the stop timeout may still catch: the teardown releases each
  // worker's datasets and values, and a worker that does not answer (paused,
  // or its host gone) holds it up to the timeout.
  (void)set_activity("shutting down: releasing what the workers hold for this run",
                     /*at_once=*/false);
  return reason;
}

}  // namespace psflow::internal
