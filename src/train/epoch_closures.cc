#include "train/epoch_closures.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/status_macros.h"

namespace psflow::internal {

absl::Status run_epoch_closures(ClusterCoordinator& coordinator, std::string_view function,
                                const EpochClosures& epoch, ProgressBar& progress,
                                EpochTotals& totals, int64_t* completed_steps) {
  if (completed_steps != nullptr) *completed_steps = 0;
  std::vector<RemoteValue> results;
  const int64_t closures = epoch.count();
  results.reserve(static_cast<size_t>(closures));
  for (int64_t i = 0; i < closures; ++i) {
    const RemoteStructure& args =
        i + 1 == closures && epoch.last_args != nullptr ? *epoch.last_args : *epoch.args;
    PSFLOW_ASSIGN_OR_RETURN(RemoteValue r, coordinator.schedule(function, args));
    results.push_back(std::move(r));
  }
  for (const RemoteValue& r : results) {
    absl::StatusOr<Structure> value = r.fetch();
    if (!value.ok()) break;
    PSFLOW_RETURN_IF_ERROR(totals.add(*value));
    progress.update(totals.sums().steps, totals.sums().mean_loss());
  }
  if (completed_steps != nullptr) *completed_steps = totals.sums().steps;
  PSFLOW_RETURN_IF_ERROR(coordinator.join());
  progress.finish();
  return absl::OkStatus();
}

absl::StatusOr<EpochRun> run_training_epoch(ClusterCoordinator& coordinator,
                                            std::string_view function,
                                            const EpochClosures& closures,
                                            const TrainOptions& options, int epoch,
                                            std::unique_ptr<EpochTotals> totals,
                                            int64_t* completed_steps, int64_t run_steps_after) {
  const absl::Time start = absl::Now();
  ProgressBar progress = ProgressBar::for_epoch(options, epoch, closures.steps, run_steps_after);
  PSFLOW_RETURN_IF_ERROR(
      run_epoch_closures(coordinator, function, closures, progress, *totals, completed_steps));
  const int64_t steps = totals->sums().steps;
  return EpochRun{std::move(totals), steps, absl::ToDoubleSeconds(absl::Now() - start)};
}

}  // namespace psflow::internal
