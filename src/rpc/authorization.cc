#include "rpc/authorization.h"

#include <array>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

struct MethodRule {
  Method method;
  std::string_view name;
  RoleSet roles;
};

// THE POLICY. Reads and updates of variables are the workers' (and the
// chief's); creating, restoring, deleting, listing and snapshotting them
// are the chief's alone. Everything a worker runs or holds is the
// chief's to ask for: workers run nothing on other workers. The evaluator
// reads checkpoints from disk and calls no task. Status and health are
// open to every authenticated peer.
constexpr std::array<MethodRule, kNumMethods> kMethodRules = {{
    {Method::kHealthCheck, "/grpc.health.v1.Health/Check", kAnyAuthenticated},
    {Method::kPsGetStatus, "/psflow.v1.VariableService/GetStatus", kAnyAuthenticated},
    {Method::kPsExecute, "/psflow.v1.VariableService/Execute", kChief | kWorker},
    {Method::kPsListVariables, "/psflow.v1.VariableService/ListVariables", kChief},
    // A data path for the same Execute calls: for whoever may call Execute.
    {Method::kPsOpenSharedMemory, "/psflow.v1.VariableService/OpenSharedMemory", kChief | kWorker},
    {Method::kPsCloseSharedMemory, "/psflow.v1.VariableService/CloseSharedMemory",
     kChief | kWorker},
    {Method::kWorkerGetStatus, "/psflow.v1.ExecutorService/GetStatus", kAnyAuthenticated},
    {Method::kWorkerRunFunction, "/psflow.v1.ExecutorService/RunFunction", kChief},
    {Method::kWorkerRunFunctions, "/psflow.v1.ExecutorService/RunFunctions", kChief},
    {Method::kWorkerCancelFunction, "/psflow.v1.ExecutorService/CancelFunction", kChief},
    {Method::kWorkerCreateValue, "/psflow.v1.ExecutorService/CreateValue", kChief},
    {Method::kWorkerCreateCall, "/psflow.v1.ExecutorService/CreateCall", kChief},
    {Method::kWorkerCreateStruct, "/psflow.v1.ExecutorService/CreateStruct", kChief},
    {Method::kWorkerCreateSelection, "/psflow.v1.ExecutorService/CreateSelection", kChief},
    {Method::kWorkerCompute, "/psflow.v1.ExecutorService/Compute", kChief},
    {Method::kWorkerDispose, "/psflow.v1.ExecutorService/Dispose", kChief},
    {Method::kWorkerGetExecutorStats, "/psflow.v1.ExecutorService/GetExecutorStats", kChief},
    {Method::kWorkerDisposePerWorker, "/psflow.v1.ExecutorService/DisposePerWorker", kChief},
    // Served on loopback only, without credentials: anyone on the host.
    {Method::kCoordinatorGetStatus, "/psflow.v1.CoordinatorStatusService/GetStatus",
     kAnyAuthenticated},
    {Method::kCoordinatorGetTaskStates, "/psflow.v1.CoordinatorStatusService/GetTaskStates",
     kAnyAuthenticated},
}};

// The ps's Execute, op by op (indexed by v1::VariableOp::Kind).
constexpr RoleSet kReadOrUpdate = kChief | kWorker;
constexpr std::array<RoleSet, v1::VariableOp::Kind_ARRAYSIZE> kVariableOpRoles = [] {
  std::array<RoleSet, v1::VariableOp::Kind_ARRAYSIZE> roles{};
  roles[v1::VariableOp::READ] = kReadOrUpdate;
  roles[v1::VariableOp::GATHER] = kReadOrUpdate;
  roles[v1::VariableOp::ASSIGN] = kReadOrUpdate;
  roles[v1::VariableOp::ASSIGN_ADD] = kReadOrUpdate;
  roles[v1::VariableOp::ASSIGN_SUB] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_UPDATE] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_ADD] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_SUB] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_MUL] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_DIV] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_MIN] = kReadOrUpdate;
  roles[v1::VariableOp::SCATTER_MAX] = kReadOrUpdate;
  roles[v1::VariableOp::APPLY_DENSE] = kReadOrUpdate;
  roles[v1::VariableOp::APPLY_SPARSE] = kReadOrUpdate;
  roles[v1::VariableOp::CREATE] = kChief;
  roles[v1::VariableOp::CREATE_IF_ABSENT] = kChief;
  roles[v1::VariableOp::DELETE] = kChief;
  roles[v1::VariableOp::SNAPSHOT] = kChief;
  roles[v1::VariableOp::RESTORE] = kChief;
  // Dynamic embedding tables: the chief defines them, workers use them.
  roles[v1::VariableOp::DE_CREATE] = kChief;
  roles[v1::VariableOp::DE_LOOKUP] = kReadOrUpdate;
  roles[v1::VariableOp::DE_APPLY] = kReadOrUpdate;
  roles[v1::VariableOp::DE_STATS] = kReadOrUpdate;
  // Their checkpoints, as SNAPSHOT and RESTORE.
  roles[v1::VariableOp::DE_EXPORT] = kChief;
  roles[v1::VariableOp::DE_IMPORT] = kChief;
  return roles;
}();

const MethodRule& rule(Method method) { return kMethodRules[static_cast<size_t>(method)]; }

bool allows(RoleSet allowed, const PeerIdentity& identity) {
  if (!identity.authenticated) return true;
  if ((allowed & kAnyAuthenticated) != 0) return true;
  return (allowed & role_of(identity)) != 0;
}

absl::Status denied(const PeerIdentity& identity, std::string_view what, RoleSet allowed) {
  return absl::PermissionDeniedError(absl::StrCat(
      identity.describe(), " may not call ", av(what), ": only ", describe_roles(allowed),
      " may. The caller's role is the job in its certificate's CN (<job>/<index>); "
      "call this from a task of that job, or issue that task's certificate to it"));
}

}  // namespace

static_assert(
    [] {
      for (size_t i = 0; i < kMethodRules.size(); ++i) {
        if (static_cast<size_t>(kMethodRules[i].method) != i) return false;
      }
      return true;
    }(),
    "kMethodRules must list every Method once, in enum order");

RoleSet allowed_roles(Method method) { return rule(method).roles; }

std::string_view method_name(Method method) { return rule(method).name; }

RoleSet allowed_roles(v1::VariableOp::Kind kind) {
  if (!v1::VariableOp::Kind_IsValid(kind)) return 0;
  return kVariableOpRoles[static_cast<size_t>(kind)];
}

RoleSet role_of(const PeerIdentity& identity) {
  if (!identity.has_role()) return 0;
  if (identity.job == "chief") return kChief;
  if (identity.job == "worker") return kWorker;
  if (identity.job == "ps") return kPs;
  if (identity.job == "evaluator") return kEvaluator;
  return 0;
}

std::string describe_roles(RoleSet roles) {
  if ((roles & kAnyAuthenticated) != 0) return "any authenticated task";
  std::vector<std::string> names;
  if ((roles & kChief) != 0) names.push_back("chief");
  if ((roles & kWorker) != 0) names.push_back("worker");
  if ((roles & kPs) != 0) names.push_back("ps");
  if ((roles & kEvaluator) != 0) names.push_back("evaluator");
  if (names.empty()) return "no task";
  if (names.size() == 1) return "the " + names[0];
  return absl::StrCat("the ", absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ",
                      names.back());
}

absl::Status authorize(const PeerIdentity& identity, Method method) {
  const MethodRule& r = rule(method);
  if (allows(r.roles, identity)) return absl::OkStatus();
  return denied(identity, r.name, r.roles);
}

absl::Status authorize_variable_op(const PeerIdentity& identity, v1::VariableOp::Kind kind,
                                   size_t index) {
  // An unknown kind is left to validation (INVALID_ARGUMENT) for callers
  // who may use Execute at all.
  if (!v1::VariableOp::Kind_IsValid(kind)) return absl::OkStatus();
  const RoleSet roles = allowed_roles(kind);
  if (allows(roles, identity)) return absl::OkStatus();
  return denied(identity,
                absl::StrCat(av(method_name(Method::kPsExecute)), " with op ", index, " of kind ",
                             v1::VariableOp::Kind_Name(kind), " (nothing in the request ran)"),
                roles);
}

absl::StatusOr<PeerIdentity> authorize_call(const grpc::ServerContextBase& context, Method method) {
  PeerIdentity identity = peer_identity(context);
  if (absl::Status s = authorize(identity, method); !s.ok()) return s;
  return identity;
}

bool may_list_function_names(const PeerIdentity& identity) {
  if (!identity.authenticated) return is_loopback_peer(identity.peer);
  return role_of(identity) == kChief;
}

}  // namespace psflow::internal
