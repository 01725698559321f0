// Probes of variable aggregation and cached reads inside a worker: a
// scheduled function that runs R replicas (ParameterServerStrategy with R
// replicas per worker) updating or reading one ps variable.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "psflow/function_registry.h"
#include "psflow/replica_group.h"
#include "psflow/status_macros.h"
#include "psflow/variable_policy.h"
#include "psflow/worker_context.h"

namespace psflow::internal {
namespace {

Structure status_structure(const absl::Status& s) {
  return Structure::tuple({static_cast<int64_t>(s.code()), std::string(s.message())});
}

absl::StatusOr<const Structure*> arg(const Structure& args, const std::string& key) {
  if (!args.is_dict() || !args.fields().contains(key)) {
    return absl::InvalidArgumentError(
        absl::StrCat("testing/replica_update and testing/cached_reads need a dict with '", key,
                     "'; got ", args.debug_string().substr(0, 200)));
  }
  return &args.fields().find(key)->second;
}

// args: {"variable": handle, "replicas": R, "op": "assign" | "assign_add" |
// "assign_sub", and "values": [one tensor per replica] or "shared": one
// tensor every replica passes (the same buffer)}. Returns (code, message)
// of the run (0 when every replica's update succeeded).
absl::StatusOr<Structure> replica_update(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* handle, arg(args, "variable"));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v, ctx.variable(*handle));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* replicas, arg(args, "replicas"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* op, arg(args, "op"));
  PSFLOW_ASSIGN_OR_RETURN(ReplicaGroup group,
                          ReplicaGroup::create(static_cast<int>(replicas->int_value())));
  const bool shared = args.fields().contains("shared");
  PSFLOW_ASSIGN_OR_RETURN(const Structure* values, arg(args, shared ? "shared" : "values"));
  const std::string name = op->string_value();
  absl::StatusOr<PerReplica> run = group.run(
      [&](const ReplicaContext& rc, const std::vector<Structure>&) -> absl::StatusOr<Structure> {
        const Tensor& value =
            shared ? values->tensor()
                   : (*values)[static_cast<size_t>(rc.replica_id_in_sync_group())].tensor();
        absl::Status s = name == "assign"       ? v.assign(value)
                         : name == "assign_add" ? v.assign_add(value)
                                                : v.assign_sub(value);
        PSFLOW_RETURN_IF_ERROR(s);
        return Structure();
      });
  return status_structure(run.status());
}
PSFLOW_REGISTER_FUNCTION("testing/replica_update", &replica_update);

// args: {"variable": handle, "replicas": R, "new": tensor}. Inside one
// cache_variable_reads() scope: read, assign `new`, read again, try to
// nest a second scope, read on R replica threads; then read after the
// scope. Returns (first read, read after the assign, (code, message) of the
// nested scope, (replica reads...), read after the scope).
absl::StatusOr<Structure> cached_reads(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* handle, arg(args, "variable"));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v, ctx.variable(*handle));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* replicas, arg(args, "replicas"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* fresh, arg(args, "new"));
  PSFLOW_ASSIGN_OR_RETURN(ReplicaGroup group,
                          ReplicaGroup::create(static_cast<int>(replicas->int_value())));
  Tensor first, second;
  absl::Status nested;
  Structure replica_reads;
  {
    PSFLOW_ASSIGN_OR_RETURN(VariableReadCacheScope scope, cache_variable_reads());
    PSFLOW_ASSIGN_OR_RETURN(first, v.read_value());
    PSFLOW_RETURN_IF_ERROR(v.assign(fresh->tensor()));
    PSFLOW_ASSIGN_OR_RETURN(second, v.read_value());
    nested = cache_variable_reads().status();
    PSFLOW_ASSIGN_OR_RETURN(
        PerReplica reads,
        group.run(
            [&](const ReplicaContext&, const std::vector<Structure>&) -> absl::StatusOr<Structure> {
              PSFLOW_ASSIGN_OR_RETURN(Tensor t, v.read_value());
              return Structure(t);
            }));
    replica_reads = group.experimental_local_results(reads);
  }
  PSFLOW_ASSIGN_OR_RETURN(Tensor after, v.read_value());
  return Structure::tuple({first, second, status_structure(nested), replica_reads, after});
}
PSFLOW_REGISTER_FUNCTION("testing/cached_reads", &cached_reads);

}  // namespace
}  // namespace psflow::internal
