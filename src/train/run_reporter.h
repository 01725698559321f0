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
#include "train/trainer.h"

namespace psflow {

// One epoch's figures. `extra` are metrics beyond loss and accuracy (e.g.
// AUC), each with its train and test value: printed before the accuracy
// ("train loss 0.51 auc 0.82 accuracy 0.74") and written as the scalars
// train/<name> and test/<name>.
struct EpochReport {
  struct Extra {
    std::string name;
    double train = 0.0;
    double test = 0.0;
  };
  int epoch = 0;
  int64_t steps = 0;
  int64_t examples = 0;
  double seconds = 0.0;
  double train_loss = 0.0;
  double train_accuracy = 0.0;
  double test_loss = 0.0;
  double test_accuracy = 0.0;
  std::vector<Extra> extra;
};

// Thread-safety: use from one thread.
class RunReporter {
 public:
  // `options` must outlive the reporter.
  RunReporter(const TrainOptions& options, absl::Time start, TrainSummary summary);

  // Opens the TensorBoard event file in options.run_dir (none without one).
  [[nodiscard]] absl::Status open();
  [[nodiscard]] absl::Status report(const EpochReport& epoch);
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

}  // namespace psflow

#endif  // PSFLOW_TRAIN_RUN_REPORTER_H_
