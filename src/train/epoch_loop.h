// What every coordinator-driven training run (psflow train, any model) does
// around its epochs: a checkpoint after each epoch under
// <run_dir>/checkpoints, a rerun on the same run directory resuming from
// the latest one (also from the middle of an epoch), with
// TrainOptions::ps_recovery, surviving a restarted ps by restoring every ps
// from the latest checkpoint and training again from there
// (psflow/ps_recovery.h), and on a stop request (TrainOptions::stop, a
// signal), a last checkpoint of the steps done when it is consistent
// (docs/fault_tolerance.md, "Stopping").
#ifndef PSFLOW_TRAIN_EPOCH_LOOP_H_
#define PSFLOW_TRAIN_EPOCH_LOOP_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_spec.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/optimizer.h"
#include "psflow/ps_recovery.h"
#include "psflow/variable.h"
#include "train/train_options.h"

namespace psflow::internal {

// INVALID_ARGUMENT naming the flag: ps_recovery without run_dir, a
// recovery timeout outside (0, 86400] s, negative max_ps_recoveries.
[[nodiscard]] absl::Status validate_ps_recovery_options(const TrainOptions& options);

// The model-specific part of an epoch.
// Thread-safety: use from one thread.
struct EpochHooks {
  // Runs epoch `epoch` (its closures, evaluation and report), whose first
  // `done_steps` steps are in the model already (a run resumed from the
  // middle of it). Adds the steps whose closures completed to *completed,
  // also when it fails.
  std::function<absl::Status(int epoch, int64_t done_steps, int64_t* completed)> run_epoch;
  // After a stop request ended an epoch (its closures cancelled and back):
  // OK when the model holds exactly the steps that completed, else why
  // not (no checkpoint is saved then).
  std::function<absl::Status()> check_state_after_stop;
  // A ps recovery restored the model as it was before `epoch`: forget the
  // epochs from there on (they are trained again) and count the recovery
  // and its `rolled_back` completed steps.
  std::function<void(int epoch, int64_t rolled_back)> roll_back_to;
};

// Thread-safety: use from one thread.
class EpochLoop {
 public:
  // Tracks `variables` (under `names`, one each) and `optimizer` in
  // <options.run_dir>/checkpoints (no checkpoints when run_dir is empty)
  // and restores the checkpoint to resume from there: the newest intact
  // one, or options.checkpoint (train/resume_checkpoint.h), printing where
  // it resumes.
  // With options.ps_recovery, also watches the ps tasks of `spec` and
  // saves a first checkpoint when there is none, so that a recovery always
  // has one to go back to.
  [[nodiscard]] static absl::StatusOr<EpochLoop> create(
      const ClusterSpec& spec, const TrainOptions& options, const std::vector<std::string>& names,
      const std::vector<ShardedVariable>& variables, const Optimizer& optimizer,
      int64_t steps_per_epoch, std::map<std::string, DynamicEmbedding> tables = {});

  // Epochs 1 .. options.epochs with neither checkpoints nor ps tasks to
  // watch.
  [[nodiscard]] static absl::StatusOr<EpochLoop> without_checkpoints(const TrainOptions& options,
                                                                     int64_t steps_per_epoch);

  // The epoch training starts from: 1, or the restored checkpoint's
  // (from the optimizer's iterations, TF's advice for a restarted
  // coordinator): the one after it, or the one it stopped in the middle of.
  [[nodiscard]] int first_epoch() const { return first_epoch_; }
  // The steps the restored checkpoint holds (its optimizer iterations); 0
  // on a fresh run.
  [[nodiscard]] int64_t restored_steps() const { return restored_steps_; }

  // Runs epochs first_epoch() .. options.epochs, the first from where the
  // checkpoint left it, saving a checkpoint after each (or
  // nothing when there are none left: a rerun of a finished run, which the
  // trainer reports without calling run). A failed epoch ends
  // the run with its error, unless ps recovery is on and a ps restarted:
  // then every ps is restored from the latest checkpoint and training goes
  // on from there (at most options.max_ps_recoveries times). Once
  // options.stop is requested it starts nothing more: the epoch under way
  // ends (its closures cancelled), a checkpoint of the steps done is saved
  // when hooks.check_state_after_stop allows it, a line says what was
  // kept, and the stop's reason is returned.
  [[nodiscard]] absl::Status run(const EpochHooks& hooks);

 private:
  EpochLoop(const TrainOptions& options, int64_t steps_per_epoch)
      : options_(&options), steps_per_epoch_(steps_per_epoch) {}

  // The stop path of run(): `epoch` was under way (or about to start) and
  // ended with `epoch_status`.
  [[nodiscard]] absl::Status stop(const EpochHooks& hooks, int epoch,
                                  const absl::Status& epoch_status);
  [[nodiscard]] bool stop_requested() const {
    return options_->stop != nullptr && options_->stop->requested();
  }
  // StopRequest::set_activity, when there is a stop request; false once a
  // stop was requested.
  [[nodiscard]] bool set_activity(std::string what, bool at_once) const;

  const TrainOptions* options_;
  int64_t steps_per_epoch_;
  int first_epoch_ = 1;
  int64_t first_epoch_done_steps_ = 0;  // of first_epoch_, in the checkpoint
  int64_t restored_steps_ = 0;
  std::optional<CheckpointManager> checkpoints_;
  std::optional<PsRecovery> ps_recovery_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_EPOCH_LOOP_H_
