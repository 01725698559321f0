// The coordinator side of `psflow train`: the custom training loop of the
// reference's "Example code for coordinator", on a classifier over
// Fashion-MNIST (internal).
#ifndef PSFLOW_TRAIN_TRAINER_H_
#define PSFLOW_TRAIN_TRAINER_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"
#include "psflow/partitioners.h"
#include "psflow/tensor.h"
#include "train/mlp.h"

namespace psflow {

// Thread-safety: a value type.
struct TrainOptions {
  std::string model = "mlp";  // "mlp" or "logreg"
  // "parameter_server" (ps and worker tasks) or "mirrored" (replicas as
  // threads of this process, gradients all-reduced every step).
  std::string strategy = "parameter_server";
  int replicas = 2;  // mirrored only
  int epochs = 5;
  // Keras's default; with 2 workers it reaches 0.88 test accuracy on the
  // mlp in 5 epochs (64 gives about 0.87, in two thirds of the time).
  int64_t batch_size = 32;
  std::string optimizer = "adam";
  double learning_rate = 1e-3;
  // "cosine" (Keras's CosineDecay to 10% over the whole run) or "constant".
  std::string lr_schedule = "cosine";
  // Training steps per scheduled closure (TF's steps_per_execution).
  int64_t steps_per_execution = 1;
  uint64_t seed = 0;
  std::string data_dir;  // Empty: Debian's dataset-fashion-mnist path.
  std::string run_dir;   // Where summary.json goes; created if missing.
  // Spec string of the variable partitioner: "none", "fixed:<shards>",
  // "min_size:<bytes>[:<max_shards>]", "max_size:<bytes>[:<max_shards>]".
  std::string partitioner = "none";
  // What the loss of a ps task does: false stops training with UNAVAILABLE
  // naming the task (TF's behaviour); true waits up to
  // ps_recovery_timeout_seconds for it to come back, restores every ps to
  // the latest checkpoint (saved every epoch, and once before the first)
  // and trains on from there, reporting the steps rolled back; at most
  // max_ps_recoveries times per run. Needs run_dir. See psflow/ps_recovery.h.
  bool ps_recovery = false;
  double ps_recovery_timeout_seconds = 300;
  int max_ps_recoveries = 10;
  // Progress output; null for none.
  std::FILE* out = stdout;
  // Redraw one progress line in place (a terminal) rather than printing
  // a line every tenth of an epoch (logs, CI).
  bool interactive_progress = false;
};

// Per-epoch figures. Thread-safety: a value type.
struct EpochMetrics {
  int epoch = 0;
  double train_loss = 0.0;
  double train_accuracy = 0.0;
  double test_loss = 0.0;
  double test_accuracy = 0.0;
  int64_t steps = 0;
  double seconds = 0.0;
};

// Thread-safety: a value type.
struct TrainSummary {
  std::vector<EpochMetrics> history;
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  int epochs = 0;
  int64_t steps = 0;
  double examples_per_sec = 0.0;
  double wall_seconds = 0.0;
  int num_workers = 0;
  int num_ps = 0;
  int replicas = 0;  // mirrored only
  // The optimizer's `iterations` on the ps at the end: updates actually
  // applied (exactly once each), across resumes.
  int64_t optimizer_iterations = 0;
  // Parameter-server recoveries (TrainOptions::ps_recovery) and the
  // completed steps they rolled back (trained again afterwards).
  int ps_recoveries = 0;
  int64_t rolled_back_steps = 0;
};

// The classifier a --model name denotes (input_dim is Fashion-MNIST's).
[[nodiscard]] absl::StatusOr<MlpSpec> classifier_spec(const std::string& model);

// Test loss and accuracy of a classifier with `params`, computed in chunks.
// Thread-safety: a value type.
struct ClassifierEvaluation {
  double loss = 0.0;
  double accuracy = 0.0;
};
[[nodiscard]] absl::StatusOr<ClassifierEvaluation> evaluate_classifier(
    const MlpSpec& spec, const std::vector<Tensor>& params, const Tensor& images,
    const Tensor& labels);

// INVALID_ARGUMENT naming the option, its value and what is allowed.
[[nodiscard]] absl::Status validate_train_options(const TrainOptions& options);
[[nodiscard]] absl::StatusOr<Partitioner> parse_partitioner(const std::string& spec);

// Trains on the cluster `spec` (ps and worker tasks already running; this
// process is the coordinator), writes <run_dir>/summary.json and returns
// the summary.
[[nodiscard]] absl::StatusOr<TrainSummary> train_classifier(const ClusterSpec& spec,
                                                            const TrainOptions& options);

// The same training loop without any ps or worker task (issue: the local
// synchronous strategy, TF's MirroredStrategy on CPU replicas): each of
// `options.replicas` replicas holds its own copy of the parameters and
// optimizer slots, computes gradients on its share of every global batch
// (ReplicaGroup::experimental_distribute_dataset), all-reduces them (MEAN)
// and applies the same update, so the copies stay identical (checked at
// the end of every epoch). Writes the same summary.json.
[[nodiscard]] absl::StatusOr<TrainSummary> train_classifier_mirrored(const TrainOptions& options);

// The run's model as the evaluator needs it: <run_dir>/config.json.
inline constexpr char kRunConfigFile[] = "config.json";

// summary.json's content.
[[nodiscard]] std::string summary_json(const TrainSummary& summary, const TrainOptions& options);

}  // namespace psflow

#endif  // PSFLOW_TRAIN_TRAINER_H_
