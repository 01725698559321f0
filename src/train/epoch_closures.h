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

// The closures of one epoch: `closures` calls, each with `args`, but the
// last with `last_args` when given (the remainder of the epoch's steps when
// they are not a multiple of the steps one closure runs).
// Thread-safety: a value type; the structures must outlive the epoch.
struct EpochClosures {
  const RemoteStructure* args = nullptr;
  const RemoteStructure* last_args = nullptr;
  int64_t closures = 0;
  int64_t steps = 0;  // what the closures run together, for the progress bar
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
// ("epoch 3/5 [=====>   ] ...", on options.out) and the epoch's wall time;
// their results added to `totals`; `completed_steps` as for
// run_epoch_closures.
[[nodiscard]] absl::StatusOr<EpochRun> run_training_epoch(ClusterCoordinator& coordinator,
                                                          std::string_view function,
                                                          const EpochClosures& closures,
                                                          const TrainOptions& options, int epoch,
                                                          std::unique_ptr<EpochTotals> totals,
                                                          int64_t* completed_steps);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_EPOCH_CLOSURES_H_
