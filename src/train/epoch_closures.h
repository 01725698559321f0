// One epoch of training closures on the coordinator: schedule them all,
// add up their results in order while drawing the progress bar, then join
// (internal).
#ifndef PSFLOW_TRAIN_EPOCH_CLOSURES_H_
#define PSFLOW_TRAIN_EPOCH_CLOSURES_H_

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/status_macros.h"
#include "train/progress.h"
#include "train/trainer.h"

namespace psflow {

// `Result` has static from_structure(const Structure&) -> StatusOr<Result>,
// add(const Result&) (returning void or absl::Status), and the sums
// `steps`, `examples` and `loss_sum` the progress bar shows. A failed
// closure stops the adding; join() then reports the error (TF's model).
// `completed_steps`, when given, receives the steps of the closures that
// finished, also when the epoch fails (what a rollback undoes).
template <typename Result>
[[nodiscard]] absl::StatusOr<Result> run_epoch_closures(ClusterCoordinator& coordinator,
                                                        std::string_view function,
                                                        const RemoteStructure& args,
                                                        int64_t closures, ProgressBar& progress,
                                                        int64_t* completed_steps = nullptr) {
  if (completed_steps != nullptr) *completed_steps = 0;
  std::vector<RemoteValue> results;
  results.reserve(static_cast<size_t>(closures));
  for (int64_t i = 0; i < closures; ++i) {
    PSFLOW_ASSIGN_OR_RETURN(RemoteValue r, coordinator.schedule(function, args));
    results.push_back(std::move(r));
  }
  Result totals;
  for (const RemoteValue& r : results) {
    absl::StatusOr<Structure> value = r.fetch();
    if (!value.ok()) break;
    PSFLOW_ASSIGN_OR_RETURN(Result step, Result::from_structure(*value));
    if constexpr (std::is_same_v<decltype(totals.add(step)), absl::Status>) {
      PSFLOW_RETURN_IF_ERROR(totals.add(step));
    } else {
      totals.add(step);
    }
    progress.update(totals.steps, totals.examples > 0
                                      ? totals.loss_sum / static_cast<double>(totals.examples)
                                      : 0.0);
  }
  if (completed_steps != nullptr) *completed_steps = totals.steps;
  PSFLOW_RETURN_IF_ERROR(coordinator.join());
  progress.finish();
  return totals;
}

// One epoch's results and wall time.
template <typename Result>
struct TimedEpoch {
  Result totals;
  double seconds = 0.0;
};

// Epoch `epoch` of a run: `closures` closures of `function` with a progress
// bar ("epoch 3/5 [=====>   ] ...", on options.out) and the epoch's wall
// time; `completed_steps` as for run_epoch_closures.
template <typename Result>
[[nodiscard]] absl::StatusOr<TimedEpoch<Result>> run_training_epoch(
    ClusterCoordinator& coordinator, std::string_view function, const RemoteStructure& args,
    int64_t closures, const TrainOptions& options, int epoch, int64_t* completed_steps) {
  const absl::Time start = absl::Now();
  ProgressBar progress(options.out, options.interactive_progress,
                       absl::StrCat("epoch ", epoch, "/", options.epochs),
                       closures * options.steps_per_execution);
  PSFLOW_ASSIGN_OR_RETURN(
      Result totals,
      run_epoch_closures<Result>(coordinator, function, args, closures, progress, completed_steps));
  return TimedEpoch<Result>{std::move(totals), absl::ToDoubleSeconds(absl::Now() - start)};
}

}  // namespace psflow

#endif  // PSFLOW_TRAIN_EPOCH_CLOSURES_H_
