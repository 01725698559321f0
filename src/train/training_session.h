// How a run trains and evaluates its model, whatever the strategy
// (internal): the part of the one trainer (train/trainer.h) that the
// strategy decides. Parameter servers: train/ps_training.h; mirrored
// replicas in this process: train/mirrored_training.h.
#ifndef PSFLOW_TRAIN_TRAINING_SESSION_H_
#define PSFLOW_TRAIN_TRAINING_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "train/epoch_loop.h"
#include "train/step_result.h"
#include "train/train_summary.h"

namespace psflow::internal {

// One epoch as the strategy trained it. Thread-safety: use from one thread.
struct EpochRun {
  std::unique_ptr<EpochTotals> totals;  // the model's, over the epoch
  int64_t steps = 0;                    // training steps (synchronous ones count once)
  double seconds = 0.0;
};

// Thread-safety: use from one thread.
class TrainingSession {
 public:
  virtual ~TrainingSession() = default;

  // Where training runs, as the summary tells it (tasks or replicas).
  virtual void describe(TrainSummary& summary) const = 0;
  // What runs around the epochs: checkpoints, resuming, ps recovery.
  [[nodiscard]] virtual absl::StatusOr<EpochLoop> epoch_loop() = 0;
  // Trains epoch `epoch` with a progress bar, less its first `done_steps`
  // steps (in the model already: a resumed run). Sets *completed to the
  // steps whose updates were applied, also when it fails. Once
  // options.stop is requested it stops early with the request's reason.
  [[nodiscard]] virtual absl::StatusOr<EpochRun> train_epoch(int epoch, int64_t done_steps,
                                                             int64_t* completed) = 0;
  // After a stop request ended train_epoch: OK when the model holds
  // exactly the steps that completed, every step whole (what a checkpoint
  // then saves); FAILED_PRECONDITION saying why not.
  [[nodiscard]] virtual absl::Status check_state_after_stop() const = 0;
  // The test-set figures of the model as trained so far.
  [[nodiscard]] virtual absl::StatusOr<ModelMetrics> evaluate() = 0;
  // The optimizer's iterations as the ps tasks hold them; nullopt without
  // ps tasks.
  [[nodiscard]] virtual absl::StatusOr<std::optional<int64_t>> optimizer_iterations() const = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_TRAINING_SESSION_H_
