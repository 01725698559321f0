// A worker running R synchronous replicas inside one scheduled function
// (ParameterServerStrategy with several replicas per worker): each replica
// computes on its share, the replicas all-reduce, and the function returns
// the reduced value.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "psflow/function_registry.h"
#include "psflow/replica_group.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

// args: (replicas R, values float32 [N]); replica r sums the elements i
// with i % R == r, then the replicas all_reduce(SUM). Returns
// (num_replicas_in_sync, the all-reduced sum as seen by every replica,
// strategy.reduce(SUM) of the per-replica partial sums).
absl::StatusOr<Structure> replicated_sum(WorkerContext&, const Structure& args) {
  if (!args.is_sequence() || args.size() != 2 || args[0].kind() != Structure::Kind::kInt ||
      !args[1].is_tensor() || args[1].tensor().dtype() != DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "examples/replicated_sum expects (replicas, float32 values); got ", args.debug_string()));
  }
  PSFLOW_ASSIGN_OR_RETURN(ReplicaGroup group,
                          ReplicaGroup::create(static_cast<int>(args[0].int_value())));
  const Tensor values = args[1].tensor();
  PSFLOW_ASSIGN_OR_RETURN(
      PerReplica partials,
      group.run([&](const ReplicaContext& ctx,
                    const std::vector<Structure>&) -> absl::StatusOr<Structure> {
        float sum = 0;
        auto flat = values.flat<float>();
        for (size_t i = 0; i < flat.size(); ++i) {
          if (static_cast<int>(i % ctx.num_replicas_in_sync()) == ctx.replica_id_in_sync_group()) {
            sum += flat[i];
          }
        }
        PSFLOW_ASSIGN_OR_RETURN(Structure total,
                                ctx.all_reduce(ReduceOp::kSum, Tensor::scalar(sum)));
        return Structure::tuple({Tensor::scalar(sum), total});
      }));
  // Every replica saw the same all-reduced total.
  const Structure& first_total = partials.values()[0][1];
  for (const Structure& v : partials.values()) {
    if (!(v[1] == first_total)) return absl::InternalError("replicas disagree after all_reduce");
  }
  std::vector<Structure> sums;
  for (const Structure& v : partials.values()) sums.push_back(v[0]);
  PSFLOW_ASSIGN_OR_RETURN(Structure reduced,
                          group.reduce(ReduceOp::kSum, PerReplica(std::move(sums)), std::nullopt));
  return Structure::tuple(
      {static_cast<int64_t>(group.num_replicas_in_sync()), first_total, reduced});
}
PSFLOW_REGISTER_FUNCTION("examples/replicated_sum", &replicated_sum);

}  // namespace
}  // namespace psflow::internal
