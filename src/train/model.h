// A model of `psflow train`, as the one trainer (train/trainer.h) sees it
// (internal). The trainer owns the epochs, checkpoints, ps recovery,
// evaluation schedule and reporting; a model supplies its name and flag
// checks, its data, its variables, the registered closure and per-worker
// dataset that train it on workers with their arguments, its evaluation on
// the coordinator, and its own lines of the epoch report and of
// summary.json. A new model is one class implementing this interface, one
// line in train/model_registry.cc and, for its worker functions, one in
// train/registered_functions.cc.
#ifndef PSFLOW_TRAIN_MODEL_H_
#define PSFLOW_TRAIN_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "psflow/partitioners.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"
#include "train/step_result.h"
#include "train/train_options.h"
#include "train/train_summary.h"

namespace psflow::internal {

// Flag values a model trains best with, used where the user gave none
// (nullopt: TrainOptions' default). Thread-safety: a value type.
struct ModelDefaults {
  std::optional<std::string> optimizer;
  std::optional<double> learning_rate;
  std::optional<int64_t> batch_size;
};

// One replica's pass over its part of a global batch (MirroredModel).
// Thread-safety: a value type.
struct ReplicaStep {
  std::vector<Tensor> gradients;  // dense, one per parameter, in order
  // The model's closure result (train/step_result.h) for this part,
  // counting one step.
  Structure result;
};

// The side of a model that trains with the mirrored strategy: replicas in
// this process, each with its own copy of the parameters, gradients
// all-reduced every step (train/mirrored_training.h).
// Thread-safety: forward_backward may run on every replica's thread at
// once; the rest is used from one thread.
class MirroredModel {
 public:
  virtual ~MirroredModel() = default;
  // The training set, one element per example (Model::train_examples() of
  // them), for Dataset::from_tensor_slices.
  [[nodiscard]] virtual Structure training_examples() const = 0;
  [[nodiscard]] virtual absl::StatusOr<ReplicaStep> forward_backward(
      const std::vector<Tensor>& params, const Structure& batch) const = 0;
  // Test-set figures of `params` (one replica's copy).
  [[nodiscard]] virtual absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<Tensor>& params) const = 0;
};

// One run's model: made for a run (train/model_registry.h), loaded once,
// then asked for what each stage of the run needs.
// Thread-safety: use from one thread.
class Model {
 public:
  virtual ~Model() = default;

  // The --model name.
  [[nodiscard]] virtual std::string_view name() const = 0;
  [[nodiscard]] virtual ModelDefaults defaults() const { return {}; }
  // What it trains on, for the first line of `psflow train`.
  [[nodiscard]] virtual std::string data_name(const TrainOptions& options) const = 0;
  // INVALID_ARGUMENT naming the flag, for what this model restricts beyond
  // the checks every model shares (train/trainer.h), which come after.
  [[nodiscard]] virtual absl::Status validate(const TrainOptions& options) const = 0;
  // What options.partitioner means for this model over `num_ps` ps tasks,
  // as a spec parse_partitioner (train/partitioner_flag.h) reads: "auto"
  // (the default) becomes the model's own choice, by default TF's tutorial
  // setting min_size:262144:<num_ps>; any other value is kept.
  [[nodiscard]] virtual std::string partitioner_spec(const TrainOptions& options, int num_ps) const;
  // The partitioner of partitioner_spec(). INVALID_ARGUMENT naming the flag
  // when it is not understood.
  [[nodiscard]] absl::StatusOr<Partitioner> partitioner(const TrainOptions& options,
                                                        int num_ps) const;
  // Its mirrored-strategy side; null when it trains on ps tasks only.
  [[nodiscard]] virtual const MirroredModel* mirrored() const { return nullptr; }

  // A cheap check, before any task starts or anything is written, that the
  // data load() will read is there and readable (files opened, not
  // parsed): INVALID_ARGUMENT naming the path, the flag and the fix.
  // load() still reports what this cannot see (a corrupt file).
  [[nodiscard]] virtual absl::Status check_data(const TrainOptions& options) const {
    return absl::OkStatus();
  }
  // Loads what the coordinator needs (the test set, the sizes that fix the
  // model's shape), after validate(). Errors name what is missing.
  [[nodiscard]] virtual absl::Status load(const TrainOptions& options) = 0;
  // Examples of one epoch; an epoch is train_examples() / batch_size steps.
  [[nodiscard]] virtual int64_t train_examples() const = 0;

  // Creates its variables with create_variable() (the caller's strategy
  // scope places them), in the order its step function expects.
  [[nodiscard]] virtual absl::StatusOr<std::vector<ShardedVariable>> create_variables(
      uint64_t seed) = 0;
  // The registered training closure (train/step_runner.h) and its "model"
  // argument (the spec the rest of its StepConfig is checked against).
  [[nodiscard]] virtual std::string_view step_function() const = 0;
  [[nodiscard]] virtual Structure spec() const = 0;
  // The registered per-worker dataset of training batches and its
  // arguments.
  [[nodiscard]] virtual std::string_view dataset_function() const = 0;
  [[nodiscard]] virtual Structure dataset_args(const TrainOptions& options) const = 0;
  // An empty sum of its closures' results.
  [[nodiscard]] virtual std::unique_ptr<EpochTotals> new_totals() const = 0;
  // Test-set figures with `variables` (create_variables()' own) as the ps
  // tasks hold them now.
  [[nodiscard]] virtual absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<ShardedVariable>& variables) const = 0;
  // `psflow eval` only (variables made outside any strategy scope), after
  // it restored `variables` from the checkpoint directory `checkpoint_dir`
  // and before evaluate(): reads what the model keeps beside its variables
  // (a dynamic embedding table) from that checkpoint. Errors name the
  // checkpoint and what it lacks.
  [[nodiscard]] virtual absl::Status restore_for_evaluation(const std::string& checkpoint_dir) {
    (void)checkpoint_dir;
    return absl::OkStatus();
  }

  // The names its parameters are checkpointed under, in parameter order:
  // the names create_variables() gives them in a fresh strategy scope, so
  // that the checkpoints of every strategy (and of `psflow eval`'s
  // variables in this process) name them alike.
  [[nodiscard]] virtual std::vector<std::string> parameter_names() const = 0;
  // <run_dir>/config.json (kRunConfigFile): {"model": name(), "strategy",
  // "data_dir", ...} with whatever else make_model_from_run_config
  // (train/model_registry.h) needs to rebuild this model and its test set,
  // so that `psflow eval` can evaluate the run's checkpoints. After load().
  [[nodiscard]] virtual std::string run_config(const TrainOptions& options) const = 0;
  // Adds its own entries to summary.json (`summary` holds those every run
  // writes, train/trainer.h).
  virtual void add_summary_fields(const TrainOptions& options, const TrainSummary& run,
                                  nlohmann::json& summary) const {}
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MODEL_H_
