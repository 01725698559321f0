// The implementation behind ClusterCoordinator: the closure queue plus one
// dispatcher per worker (TF's Cluster) (internal).
#ifndef PSFLOW_COORDINATOR_CLUSTER_H_
#define PSFLOW_COORDINATOR_CLUSTER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/closure_queue.h"
#include "coordinator/per_worker_registry.h"
#include "coordinator/task_heartbeats.h"
#include "coordinator/watchdog.h"
#include "coordinator/worker_connection.h"
#include "coordinator/worker_dispatcher.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/function_registry.h"
#include "psflow/remote_value.h"

namespace psflow::internal {

// Thread-safety: thread-safe.
class Cluster {
 public:
  // `workers` non-empty, none null (checked by ClusterCoordinator::create).
  // `heartbeats`: the tasks get_task_states follows by heartbeats (when
  // options.heartbeat_interval > 0); a worker among them is named as its
  // connection's task_name().
  Cluster(std::vector<std::unique_ptr<WorkerConnection>> workers,
          const ClusterCoordinatorOptions& options,
          std::vector<TaskHeartbeats::Task> heartbeats = {});
  // Cancels what is queued, stops what runs, waits for it, ends the threads.
  ~Cluster();
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  [[nodiscard]] absl::StatusOr<RemoteValue> schedule(std::string_view function_name,
                                                     RemoteStructure args);
  // join() also sends the releases of per-worker objects queued so far.
  [[nodiscard]] absl::Status join();
  [[nodiscard]] absl::StatusOr<bool> done() { return queue_->done(); }
  // ClusterCoordinator::cancel and closures_in_doubt.
  void cancel(const absl::Status& reason) { (void)queue_->abort_queued(reason); }
  [[nodiscard]] int64_t closures_in_doubt() const { return queue_->num_in_doubt(); }
  [[nodiscard]] int num_workers() const { return static_cast<int>(dispatchers_.size()); }
  // ClusterCoordinator::get_task_states at `now`.
  [[nodiscard]] std::vector<TaskState> task_states(absl::Time now) const;
  // Issues the ids of this coordinator's per-worker handles and releases
  // them on the workers once unused.
  [[nodiscard]] const std::shared_ptr<PerWorkerRegistry>& per_worker() const { return per_worker_; }

 private:
  void cancel_running();
  [[nodiscard]] WatchdogSnapshot watchdog_snapshot() const;

  const FunctionRegistry& registry_;
  // Random per coordinator: parameter servers key exactly-once updates by
  // (session, closure id, sequence).
  const uint64_t session_;
  std::atomic<uint64_t> next_closure_id_{1};
  std::shared_ptr<ClosureQueue> queue_;
  std::vector<std::unique_ptr<WorkerDispatcher>> dispatchers_;
  std::unique_ptr<TaskHeartbeats> heartbeats_;  // null: none
  // Sends through dispatchers_; stopped in the destructor before they go.
  std::shared_ptr<PerWorkerRegistry> per_worker_;
  // Last member: stopped before anything it looks at goes away.
  std::unique_ptr<CoordinatorWatchdog> watchdog_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_CLUSTER_H_
