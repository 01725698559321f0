// The worker side of the classifiers of `psflow train` (`mlp`, `logreg`):
// the scheduled training closure, the per-worker dataset it reads, and the
// classifier's part of the closure's result (internal).
#ifndef PSFLOW_TRAIN_TRAIN_STEP_H_
#define PSFLOW_TRAIN_TRAIN_STEP_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"
#include "train/mlp.h"
#include "train/step_runner.h"

namespace psflow::internal {

// The registered name of the training closure; its arguments are a
// TrainStepConfig.
inline constexpr char kTrainStepFunction[] = "train/classifier_steps";
// The registered per-worker dataset of training batches: Fashion-MNIST's
// training set, shuffled with a per-worker seed, repeated, batched
// (drop_remainder) and prefetched. Args: {"data_dir", "batch_size", "seed"}.
inline constexpr char kTrainDataset[] = "train/fashion_mnist";

using TrainStepConfig = StepConfig<MlpSpec>;

// The classifier's entries of a closure result: {"correct"}, the examples
// whose most probable class was the label. Thread-safety: a value type.
struct ClassifierStepMetrics {
  int64_t correct = 0;

  [[nodiscard]] Structure::Fields fields() const;
  [[nodiscard]] static absl::StatusOr<ClassifierStepMetrics> from_structure(const Structure& s);
  [[nodiscard]] absl::Status merge(const ClassifierStepMetrics& other);
  [[nodiscard]] ModelMetrics figures(const StepSums& sums) const;
};
using TrainStepResult = StepResult<ClassifierStepMetrics>;

// Examples of a batch whose most probable class (probabilities [N, C]) is
// the label (labels [N]).
[[nodiscard]] absl::StatusOr<int64_t> correct_predictions(const Tensor& labels,
                                                          const Tensor& probabilities);

[[nodiscard]] absl::StatusOr<Dataset> make_train_dataset(const DatasetContext& ctx,
                                                         const Structure& args);

// Runs config.steps steps on ctx's worker: next batch of the worker's copy
// of the training dataset -> read the parameters (one batched request per
// ps) -> forward/backward -> apply the gradients on the ps (one request
// per ps).
[[nodiscard]] absl::StatusOr<Structure> run_train_steps(WorkerContext& ctx, const Structure& args);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_TRAIN_STEP_H_
