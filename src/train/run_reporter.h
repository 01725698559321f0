// What every training run reports, whatever the model (internal): the
// epoch line, TensorBoard scalars per epoch and per step (at the run's
// global step, across resumes), the TrainSummary with its rollbacks, and
// the run's record: run_record.json after every epoch and when the
// invocation ends, summary.json when the run completes
// (train/run_record.h).
#ifndef PSFLOW_TRAIN_RUN_REPORTER_H_
#define PSFLOW_TRAIN_RUN_REPORTER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "train/event_writer.h"
#include "train/step_scalars.h"
#include "train/train_options.h"
#include "train/train_summary.h"

namespace psflow::internal {

// Thread-safety: use from one thread.
class RunReporter {
 public:
  // Renders summary.json (and run_record.json) from the summary.
  using ToJson = std::function<std::string(const TrainSummary&)>;

  // `summary` holds what the run directory's record carries on (earlier
  // epochs and invocations, train/run_record.h carry_on), the steps the
  // model has (restored) and, last in its invocations, this one.
  // `schedule` gives the per-step learning rate. `options` must outlive the
  // reporter.
  RunReporter(const TrainOptions& options, absl::Time start, TrainSummary summary, ToJson to_json,
              LearningRateSchedule schedule);
  RunReporter(const RunReporter&) = delete;
  RunReporter& operator=(const RunReporter&) = delete;

  // Opens the TensorBoard event file in options.run_dir and records this
  // invocation's start in run_record.json (neither without a run_dir).
  [[nodiscard]] absl::Status open();
  // What sees the steps of an epoch (per-step scalars); null before open()
  // or without a run_dir.
  [[nodiscard]] StepObserver* step_observer();
  // An epoch's steps begin (at the run's global step summary().steps).
  void begin_epoch();
  // Steps this invocation applied (also those a rollback undoes).
  void count_steps(int64_t steps);

  // Records `epoch` (its end_step and invocation filled in), prints its
  // line and rewrites run_record.json: the model's extra metrics (e.g. AUC)
  // come before the accuracy on each side ("train loss 0.51 auc 0.82
  // accuracy 0.74") and are written as the scalars train/<name> and
  // test/<name>.
  [[nodiscard]] absl::Status report(const EpochMetrics& epoch);
  // Epochs reported (and not rolled back), oldest first.
  [[nodiscard]] const TrainSummary& summary() const { return summary_; }

  // A ps recovery restored the model as it was before `epoch`: the epochs
  // from there on are forgotten (they are trained again), and the recovery
  // and its `rolled_back` completed steps are counted.
  void roll_back_to(int epoch, int64_t rolled_back);
  void set_optimizer_iterations(int64_t n) { summary_.optimizer_iterations = n; }

  // The run is complete: completes the summary from the last epoch
  // reported (there must be one) and writes run_record.json and
  // summary.json, each atomically (a reader never sees half a file).
  [[nodiscard]] absl::StatusOr<TrainSummary> finish();
  // This invocation ends with `status` (not OK): it was stopped by a signal
  // (`stopped`) or failed. Records how in run_record.json; the error
  // writing it, if any.
  [[nodiscard]] absl::Status end(const absl::Status& status, bool stopped);

 private:
  // The whole run's figures, from the history and the invocations.
  void update_figures();
  [[nodiscard]] absl::Status write_record();

  const TrainOptions& options_;
  const absl::Time start_;
  TrainSummary summary_;
  ToJson to_json_;
  LearningRateSchedule schedule_;
  std::optional<EventWriter> events_;
  std::optional<StepScalars> step_scalars_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_REPORTER_H_
