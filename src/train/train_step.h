// The worker side of `psflow train`: what one scheduled training closure
// does, and the per-worker state it keeps between closures (internal).
#ifndef PSFLOW_TRAIN_TRAIN_STEP_H_
#define PSFLOW_TRAIN_TRAIN_STEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/optimizer.h"
#include "psflow/optimizer_config.h"
#include "psflow/per_worker.h"
#include "psflow/structure.h"
#include "psflow/variable.h"
#include "psflow/worker_context.h"
#include "train/mlp.h"
#include "train/step_config.h"

namespace psflow {

// The registered name of the training closure.
inline constexpr char kTrainStepFunction[] = "train/classifier_steps";
// The registered per-worker dataset of training batches: Fashion-MNIST's
// training set, shuffled with a per-worker seed, repeated, batched
// (drop_remainder) and prefetched. Args: {"data_dir", "batch_size", "seed"}.
inline constexpr char kTrainDataset[] = "train/fashion_mnist";

[[nodiscard]] absl::StatusOr<Dataset> make_train_dataset(const DatasetContext& ctx,
                                                         const Structure& args);

// The classifier closure's arguments (train/step_config.h).
// Thread-safety: a value type.
struct TrainStepConfig : StepConfig<MlpSpec> {
  // Validates: the structure crossed the network.
  [[nodiscard]] static absl::StatusOr<TrainStepConfig> from_structure(const Structure& s);
};

// What one closure reports: sums, so that the coordinator adds them up.
// Thread-safety: a value type.
struct TrainStepResult {
  double loss_sum = 0.0;  // batch-mean loss times batch size, summed
  int64_t examples = 0;
  int64_t correct = 0;
  int64_t steps = 0;

  [[nodiscard]] Structure to_structure() const;
  [[nodiscard]] static absl::StatusOr<TrainStepResult> from_structure(const Structure& s);
  void add(const TrainStepResult& other);
};

// Runs config.steps steps on ctx's worker: next batch of the worker's
// copy of the training dataset -> read the parameters (one
// batched request per ps) -> forward/backward -> apply the gradients on
// the ps (one request per ps).
[[nodiscard]] absl::StatusOr<Structure> run_train_steps(WorkerContext& ctx, const Structure& args);

}  // namespace psflow

#endif  // PSFLOW_TRAIN_TRAIN_STEP_H_
