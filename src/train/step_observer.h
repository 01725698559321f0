// What sees a training epoch's steps as they complete, besides the progress
// line (internal): the per-step TensorBoard scalars (train/step_scalars.h).
#ifndef PSFLOW_TRAIN_STEP_OBSERVER_H_
#define PSFLOW_TRAIN_STEP_OBSERVER_H_

#include <cstdint>

namespace psflow::internal {

// Thread-safety: called from the one thread that trains.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  // `done` steps of the epoch under way completed in this invocation so far
  // (a resumed epoch counts from its first step not yet in the model), with
  // `mean_loss` their mean loss. Called in increasing order of `done`
  // within an epoch; an epoch begins with RunReporter::begin_epoch.
  virtual void on_steps(int64_t done, double mean_loss) = 0;
};

// Both of two observers (either may be null), in order.
// Thread-safety: as StepObserver.
class StepObserverPair final : public StepObserver {
 public:
  StepObserverPair(StepObserver* first, StepObserver* second) : first_(first), second_(second) {}
  void on_steps(int64_t done, double mean_loss) override {
    if (first_ != nullptr) first_->on_steps(done, mean_loss);
    if (second_ != nullptr) second_->on_steps(done, mean_loss);
  }

 private:
  StepObserver* const first_;
  StepObserver* const second_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STEP_OBSERVER_H_
