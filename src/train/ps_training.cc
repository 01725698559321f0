#include "train/ps_training.h"

#include <utility>

#include "optimizer/optimizer.h"
#include "psflow/cluster_resolver.h"
#include "psflow/status_macros.h"

namespace psflow {

absl::StatusOr<PsTraining> start_ps_training(
    const ClusterSpec& spec, const TrainOptions& options, Partitioner partitioner,
    const std::function<absl::StatusOr<std::vector<ShardedVariable>>()>& create_variables) {
  PsTraining t;
  PSFLOW_ASSIGN_OR_RETURN(t.optimizer_config.kind, optimizer_kind_from_name(options.optimizer));
  PSFLOW_ASSIGN_OR_RETURN(t.strategy,
                          ParameterServerStrategy::create(SimpleClusterResolver(spec, "chief", 0),
                                                          std::move(partitioner)));
  {
    StrategyScope scope = t.strategy->scope();
    PSFLOW_ASSIGN_OR_RETURN(t.variables, create_variables());
    PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer,
                            Optimizer::create(t.optimizer_config, options.learning_rate));
    t.optimizer.emplace(std::move(optimizer));
  }
  PSFLOW_ASSIGN_OR_RETURN(t.coordinator, ClusterCoordinator::create(*t.strategy));
  return t;
}

absl::StatusOr<int64_t> PsTraining::optimizer_iterations() const {
  PSFLOW_ASSIGN_OR_RETURN(Tensor value, optimizer->iterations().read_value());
  return value.scalar_value<int64_t>();
}

}  // namespace psflow
