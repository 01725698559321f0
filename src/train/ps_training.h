// The coordinator side every parameter-server training run sets up the same
// way, whatever the model (internal): the strategy over the cluster, the
// model's variables and its optimizer created in the strategy's scope, the
// coordinator, and the closure arguments all models share.
#ifndef PSFLOW_TRAIN_PS_TRAINING_H_
#define PSFLOW_TRAIN_PS_TRAINING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_spec.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "train/step_config.h"
#include "train/trainer.h"

namespace psflow {

// Thread-safety: a bundle of thread-safe objects; move-only.
struct PsTraining {
  std::unique_ptr<ParameterServerStrategy> strategy;
  // The model's parameters, in the order its step function expects.
  std::vector<ShardedVariable> variables;
  OptimizerConfig optimizer_config;
  std::optional<Optimizer> optimizer;  // always set
  std::unique_ptr<ClusterCoordinator> coordinator;

  // The optimizer's iterations as the ps holds them now.
  [[nodiscard]] absl::StatusOr<int64_t> optimizer_iterations() const;

  // Fills the fields of a closure's arguments that do not depend on the
  // model: the variables' and iterations' handles, the optimizer, the
  // learning rate and its schedule (options.lr_schedule, over
  // steps_per_epoch * options.epochs steps) and options.steps_per_execution.
  template <typename Spec>
  void fill(StepConfig<Spec>& config, const TrainOptions& options, int64_t steps_per_epoch) const {
    for (const ShardedVariable& v : variables) config.variables.push_back(v.handle());
    config.optimizer = optimizer_config;
    config.learning_rate = options.learning_rate;
    if (options.lr_schedule == "cosine") {
      config.decay_steps = steps_per_epoch * options.epochs;
      config.decay_alpha = 0.1;
    }
    config.iterations = optimizer->iterations().handle();
    config.steps = options.steps_per_execution;
  }
};

// Creates the strategy over `spec` (this process as its chief) with
// `partitioner`, then in its scope the variables `create_variables` makes
// and options.optimizer with options.learning_rate (so that round-robin
// placement puts them as a TF program would), then the coordinator.
[[nodiscard]] absl::StatusOr<PsTraining> start_ps_training(
    const ClusterSpec& spec, const TrainOptions& options, Partitioner partitioner,
    const std::function<absl::StatusOr<std::vector<ShardedVariable>>()>& create_variables);

}  // namespace psflow

#endif  // PSFLOW_TRAIN_PS_TRAINING_H_
