// TensorBoard scalars within an epoch (internal): every kStepScalarInterval
// steps of the run, "step/loss" (the mean over the steps since the last
// point), "step/learning_rate" (the schedule's at that step) and
// "step/examples_per_sec", each at the run's global step (the model's
// training steps, across resumes), beside the per-epoch scalars.
#ifndef PSFLOW_TRAIN_STEP_SCALARS_H_
#define PSFLOW_TRAIN_STEP_SCALARS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "train/event_writer.h"
#include "train/step_observer.h"

namespace psflow::internal {

// TF Estimator's save_summary_steps.
inline constexpr int64_t kStepScalarInterval = 100;

// The learning rate of a run at a step. Thread-safety: a value type.
struct LearningRateSchedule {
  double learning_rate = 0.0;
  int64_t decay_steps = 0;  // Keras's CosineDecay over these steps; 0: constant
  double alpha = 0.1;

  [[nodiscard]] double at(int64_t step) const;
};

// Thread-safety: use from one thread.
class StepScalars final : public StepObserver {
 public:
  // `events` null: writes nothing. Steps are batches of `batch_size`
  // examples. A point is written when a step count reaches the next
  // multiple of `interval` (with closures of many steps, at the closure
  // that passes it).
  StepScalars(EventWriter* events, LearningRateSchedule schedule, int64_t batch_size,
              int64_t interval = kStepScalarInterval);

  // An epoch's steps begin, the run being at global step `first_step`.
  void begin_epoch(int64_t first_step);
  void on_steps(int64_t done, double mean_loss) override;
  // The first error writing a point (the later ones are not tried).
  [[nodiscard]] const absl::Status& status() const { return status_; }

 private:
  EventWriter* events_;
  LearningRateSchedule schedule_;
  int64_t batch_size_;
  int64_t interval_;
  int64_t first_step_ = 0;
  // At the last point written (or the epoch's start).
  int64_t last_done_ = 0;
  double last_loss_sum_ = 0.0;  // mean loss times steps
  absl::Time last_time_;
  absl::Status status_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STEP_SCALARS_H_
