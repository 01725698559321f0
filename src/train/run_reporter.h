// What every training run reports per epoch, whatever the model (internal):
// the epoch line, TensorBoard scalars, the TrainSummary with its rollbacks,
// and summary.json.
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
#include "train/train_options.h"
#include "train/train_summary.h"

namespace psflow::internal {

// Thread-safety: use from one thread.
class RunReporter {
 public:
  // `options` must outlive the reporter.
  RunReporter(const TrainOptions& options, absl::Time start, TrainSummary summary);

  // Opens the TensorBoard event file in options.run_dir (none without one).
  [[nodiscard]] absl::Status open();
  // Records `epoch` and prints its line: the model's extra metrics (e.g.
  // AUC) come before the accuracy on each side ("train loss 0.51 auc 0.82
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

  // Completes the summary from the last epoch reported (there must be one)
  // and writes summary.json as `to_json` renders it, atomically (a reader
  // never sees half a file).
  [[nodiscard]] absl::StatusOr<TrainSummary> finish(
      const std::function<std::string(const TrainSummary&)>& to_json);

 private:
  const TrainOptions& options_;
  const absl::Time start_;
  TrainSummary summary_;
  std::optional<EventWriter> events_;
  double train_seconds_ = 0.0;
  int64_t train_examples_ = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_REPORTER_H_
