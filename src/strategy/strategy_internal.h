// The runtime's way to make a ParameterServerStrategy over clients of its
// own choosing (in-process stores in tests) instead of gRPC clients to the
// cluster's ps addresses.
#ifndef PSFLOW_STRATEGY_STRATEGY_INTERNAL_H_
#define PSFLOW_STRATEGY_STRATEGY_INTERNAL_H_

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "ps/client/variable_client.h"
#include "psflow/strategy.h"

namespace psflow::internal {

// Makes one VariableClient per ps task; called once per task when the
// strategy is created. `spec` is the validated cluster.
using VariableClientFactory = std::function<absl::StatusOr<std::shared_ptr<VariableClient>>(
    const ClusterSpec& spec, int ps_task)>;

// Thread-safety: stateless; `factory` runs on the calling thread.
struct StrategyAccess {
  // ParameterServerStrategy::create with `factory` making the ps clients;
  // a null factory makes gRPC clients to the cluster's ps addresses.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> create(
      const ClusterResolver& cluster_resolver, Partitioner variable_partitioner,
      ParameterServerStrategyOptions options, VariableClientFactory factory);
};

[[nodiscard]] inline absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> create_strategy(
    const ClusterResolver& cluster_resolver, Partitioner variable_partitioner,
    ParameterServerStrategyOptions options, VariableClientFactory factory) {
  return StrategyAccess::create(cluster_resolver, std::move(variable_partitioner), options,
                                std::move(factory));
}

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_STRATEGY_INTERNAL_H_
