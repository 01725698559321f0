// Which roles may call which method: the cluster's one authorization policy.
//
// A caller's role is the job of the task its certificate names
// (rpc/peer_identity.h): "chief", "worker", "ps" or "evaluator". Each RPC a
// task serves, and each op kind inside the ps's batched Execute, is allowed
// to a set of roles in one table (authorization.cc). A caller over an
// insecure channel (no certificate) is allowed everything: no role is
// enforced there, and such channels are loopback-only unless a task is
// started with --insecure.
#ifndef PSFLOW_RPC_AUTHORIZATION_H_
#define PSFLOW_RPC_AUTHORIZATION_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/server_context.h"
#include "psflow/v1/variable.pb.h"
#include "rpc/peer_identity.h"

namespace psflow::internal {

// A set of roles (bits of RoleSet).
using RoleSet = uint32_t;
inline constexpr RoleSet kChief = 1u << 0;
inline constexpr RoleSet kWorker = 1u << 1;
inline constexpr RoleSet kPs = 1u << 2;
inline constexpr RoleSet kEvaluator = 1u << 3;
// Every authenticated peer, also one whose certificate names no task.
inline constexpr RoleSet kAnyAuthenticated = 1u << 4;

// Every method a psflow task serves.
enum class Method {
  // grpc.health.v1.Health (gRPC's default service, checked by gRPC).
  kHealthCheck,
  // psflow.v1.VariableService (ps tasks).
  kPsGetStatus,
  kPsExecute,  // Also checked per op: authorize_variable_op().
  kPsListVariables,
  kPsOpenSharedMemory,
  kPsCloseSharedMemory,
  // psflow.v1.ExecutorService (worker tasks).
  kWorkerGetStatus,
  kWorkerRunFunction,
  kWorkerRunFunctions,
  kWorkerCancelFunction,
  kWorkerCreateValue,
  kWorkerCreateCall,
  kWorkerCreateStruct,
  kWorkerCreateSelection,
  kWorkerCompute,
  kWorkerDispose,
  kWorkerGetExecutorStats,
  kWorkerDisposePerWorker,
  // psflow.v1.CoordinatorStatusService (the chief's loopback status port).
  kCoordinatorGetStatus,
  kCoordinatorGetTaskStates,
};
inline constexpr int kNumMethods = static_cast<int>(Method::kCoordinatorGetTaskStates) + 1;

// The roles `method` is allowed to, and its full gRPC name
// ("/psflow.v1.VariableService/Execute").
[[nodiscard]] RoleSet allowed_roles(Method method);
[[nodiscard]] std::string_view method_name(Method method);
// The roles a ps Execute op of `kind` is allowed to (0 for an unknown kind).
[[nodiscard]] RoleSet allowed_roles(v1::VariableOp::Kind kind);

// The role bit of `identity` (0 for an authenticated peer whose CN names
// no task or a job the policy does not know; kAnyAuthenticated is implied).
[[nodiscard]] RoleSet role_of(const PeerIdentity& identity);
// "chief", "chief or worker", "any authenticated task".
[[nodiscard]] std::string describe_roles(RoleSet roles);

// OK when `identity` may call `method`; else PERMISSION_DENIED naming the
// caller, the method and the roles that may call it. Unauthenticated
// callers are always allowed.
[[nodiscard]] absl::Status authorize(const PeerIdentity& identity, Method method);
// The same for op `index` (of kind `kind`) of a ps Execute request.
[[nodiscard]] absl::Status authorize_variable_op(const PeerIdentity& identity,
                                                 v1::VariableOp::Kind kind, size_t index);

// The check at the top of every handler: the caller's identity when it may
// call `method`, else PERMISSION_DENIED (authorize()).
[[nodiscard]] absl::StatusOr<PeerIdentity> authorize_call(const grpc::ServerContextBase& context,
                                                          Method method);

// Whether errors may list the functions registered on a worker to this
// caller: to the chief, and to unauthenticated callers over loopback (a
// developer's local cluster); never to other tasks or remote insecure peers.
[[nodiscard]] bool may_list_function_names(const PeerIdentity& identity);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_AUTHORIZATION_H_
