// One epoch of training closures on the coordinator: schedule them all,
// add up their results in order while drawing the progress bar, then join
// (internal).
#ifndef PSFLOW_TRAIN_EPOCH_CLOSURES_H_
#define PSFLOW_TRAIN_EPOCH_CLOSURES_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/cluster_coordinator.h"
#include "train/progress.h"
#include "train/step_result.h"
#include "train/train_options.h"
#include "train/training_session.h"

namespace psflow::internal {

// The closures of one epoch: `steps` steps, `steps_per_closure` in each
// closure (with `args`), the last closure running what is left (with
// `last_args`, when the steps are not a multiple).
// Thread-safety: a value type; the structures must outlive the epoch.
struct EpochClosures {
  const RemoteStructure* args = nullptr;
  const RemoteStructure* last_args = nullptr;
  int64_t steps = 0;
  int64_t steps_per_closure = 1;

  [[nodiscard]] int64_t count() const {
    return (steps + steps_per_closure - 1) / steps_per_closure;
  }
};

// Schedules the closures of `function` and adds their results to
// `totals`. A failed closure stops the adding; join() then reports the
// error (TF's model). `completed_steps`, when given, receives the steps of
// the closures that finished, also when the epoch fails (what a rollback
// undoes).
[[nodiscard]] absl::Status run_epoch_closures(ClusterCoordinator& coordinator,
                                              std::string_view function, const EpochClosures& epoch,
                                              ProgressBar& progress, EpochTotals& totals,
                                              int64_t* completed_steps = nullptr);

// Epoch `epoch` of a run: the closures of `function` with a progress bar
// ("epoch 3/5 [=====>   ] ...", on options.out, with the ETA of the epoch
// and of the run's `run_steps_after` steps after it; the steps also go to
// options.step_observer) and the epoch's wall time; their results added to
// `totals`; `completed_steps` as for run_epoch_closures.
[[nodiscard]] absl::StatusOr<EpochRun> run_training_epoch(
    ClusterCoordinator& coordinator, std::string_view function, const EpochClosures& closures,
    const TrainOptions& options, int epoch, std::unique_ptr<EpochTotals> totals,
    int64_t* completed_steps, int64_t run_steps_after = 0);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_EPOCH_CLOSURES_H_
