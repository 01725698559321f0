// What Server::create decides before anything is bound: the task's role,
// its address in the spec and where it listens. `psflow server
// --check-config` runs the same code and stops there.
#ifndef PSFLOW_SERVER_TASK_PLAN_H_
#define PSFLOW_SERVER_TASK_PLAN_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "psflow/cluster_spec.h"
#include "psflow/server.h"
#include "rpc/address.h"
#include "rpc/listen_address.h"

namespace psflow::internal {

// A checked task of a cluster, ready to serve.
// Thread-safety: a value type.
struct TaskPlan {
  std::string job;
  int index = 0;
  // The task's address in the spec, which clients use.
  HostPort address;
  // Where it listens: options.bind_address when given, else
  // task_listen_address(address).
  ListenAddress listen;
};

// Server::create's checks, in its order: the job is "ps" or "worker", the
// task is in `spec` with a numeric port, the options are in range, and the
// listening address is this machine's (task_listen_address) or given
// (options.bind_address, whose form alone is checked: it may use another
// port than the spec, one forwarded by a container runtime). Binds nothing.
// INVALID_ARGUMENT for a bad job, task, address or option;
// FAILED_PRECONDITION when the spec's host is not this machine.
[[nodiscard]] absl::StatusOr<TaskPlan> plan_task(const ClusterSpec& spec, std::string_view job,
                                                 int index, const ServerOptions& options,
                                                 const HostLookup& lookup = system_host_lookup());

}  // namespace psflow::internal

#endif  // PSFLOW_SERVER_TASK_PLAN_H_
