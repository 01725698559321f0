// The coordinator's status service (internal): the cluster's task states
// (ClusterCoordinator::get_task_states) served over gRPC to `psflow status`,
// on loopback unless asked otherwise. Nothing is authenticated yet.
#ifndef PSFLOW_COORDINATOR_STATUS_SERVER_H_
#define PSFLOW_COORDINATOR_STATUS_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/task_state.h"

namespace psflow::internal {

// Most tasks one GetTaskStates request may name.
inline constexpr int kMaxRequestedTasks = 4096;

// Thread-safety: thread-safe; `states` is called on gRPC's threads.
class CoordinatorStatusServer {
 public:
  // Serves `states` (every task's, as get_task_states) on `listen`
  // ("host:port"; port 0 picks a free one). The default binds loopback
  // only. Plaintext: it answers read-only task states to `psflow status`
  // on this machine, which holds no certificate of the run (the local
  // cluster's CA is private to the run). INVALID_ARGUMENT for a malformed
  // address, UNAVAILABLE when it cannot be bound.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<CoordinatorStatusServer>> start(
      std::function<std::vector<TaskState>()> states, std::string_view listen = "127.0.0.1:0");
  // Stops serving; calls in progress end first.
  ~CoordinatorStatusServer();
  CoordinatorStatusServer(const CoordinatorStatusServer&) = delete;
  CoordinatorStatusServer& operator=(const CoordinatorStatusServer&) = delete;

  // Where clients reach it: "127.0.0.1:<port>".
  [[nodiscard]] const std::string& address() const;

 private:
  struct Impl;
  explicit CoordinatorStatusServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The states a coordinator's status service at `address` reports for
// `tasks` (empty: every task), failing fast: UNAVAILABLE naming the address
// when nothing answers there; the service's own error (INVALID_ARGUMENT for
// an unknown task) otherwise.
[[nodiscard]] absl::StatusOr<std::vector<TaskState>> fetch_task_states(
    std::string_view address, absl::Time deadline, const std::vector<std::string>& tasks = {});

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_STATUS_SERVER_H_
