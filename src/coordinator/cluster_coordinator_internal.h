// A ClusterCoordinator over any worker transport: the runtime's own
// constructor, for transports other than gRPC and in-process (the fakes of
// unit tests). Not public: WorkerConnection is the runtime's interface.
#ifndef PSFLOW_COORDINATOR_CLUSTER_COORDINATOR_INTERNAL_H_
#define PSFLOW_COORDINATOR_CLUSTER_COORDINATOR_INTERNAL_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "coordinator/task_heartbeats.h"
#include "coordinator/worker_connection.h"
#include "psflow/cluster_coordinator.h"

namespace psflow::internal {

// Thread-safety: stateless.
struct CoordinatorAccess {
  // `heartbeats`: see Cluster.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> create(
      std::vector<std::unique_ptr<WorkerConnection>> workers, ClusterCoordinatorOptions options,
      std::vector<TaskHeartbeats::Task> heartbeats = {});
};

// INVALID_ARGUMENT naming the option for options no coordinator can run
// with: heartbeats without a timeout, negative start delays, a dispose
// batch below 1. Every way of making a coordinator checks them.
[[nodiscard]] absl::Status validate_coordinator_options(const ClusterCoordinatorOptions& options);

// One connection per worker, index = position. INVALID_ARGUMENT for no
// workers or a null connection.
[[nodiscard]] absl::StatusOr<std::unique_ptr<ClusterCoordinator>> create_coordinator(
    std::vector<std::unique_ptr<WorkerConnection>> workers, ClusterCoordinatorOptions options = {});

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_CLUSTER_COORDINATOR_INTERNAL_H_
