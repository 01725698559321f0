#include "strategy/replica_update.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/replica_context.h"
#include "psflow/status_macros.h"
#include "strategy/reduce_nest.h"
#include "strategy/replica_collective.h"

namespace psflow::internal {

// ReplicaContext's collective, for the merge of an aggregated update.
struct ReplicaContextAccess {
  static absl::StatusOr<Structure> exchange(const ReplicaContext& ctx, const std::string& name,
                                            Structure value,
                                            const ReplicaCollective::Combine& combine) {
    return ctx.collective_->exchange(ctx.replica_id_, name, std::move(value), combine);
  }
};

namespace {

// TF's values_util.aggregation_error_msg for AggregatingVariable.
std::string none_aggregation_error(std::string_view name) {
  return absl::StrCat(
      "You must specify an aggregation method to update a AggregatingVariable in Replica "
      "Context. You can do so by passing an explicit value for argument `aggregation` to "
      "tf.Variable(..).e.g. `tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`. "
      "`tf.VariableAggregation` lists the possible aggregation methods. This is required "
      "because AggregatingVariable should always be kept in sync. (psflow: variable '",
      av(name),
      "' was created with VariableOptions::aggregation NONE; pass kSum, kMean or "
      "kOnlyFirstReplica, or update it outside ReplicaGroup::run.)");
}

bool is_float(DType d) { return d == DType::kFloat32 || d == DType::kFloat64; }

// TF's regroup gives one non-distributed value when every replica passes
// the same object; here, the same buffer.
bool same_buffer(absl::Span<const Structure> inputs) {
  const Tensor& first = inputs[0].tensor();
  if (first.dtype() == DType::kString || first.num_elements() == 0) return false;
  for (const Structure& s : inputs) {
    const Tensor& t = s.tensor();
    if (t.raw_data() != first.raw_data() || t.shape() != first.shape()) return false;
  }
  return true;
}

}  // namespace

std::optional<absl::Status> update_in_replica_context(
    const VariablePolicy& policy, std::string_view name, DType dtype, const Shape& shape,
    std::string_view op, const Tensor& value,
    const std::function<absl::Status(const Tensor&)>& apply) {
  const ReplicaContext* ctx = get_replica_context();
  if (ctx == nullptr || ctx->num_replicas_in_sync() <= 1) return std::nullopt;
  if (policy.aggregation == VariableAggregation::kNone) {
    return absl::InvalidArgumentError(none_aggregation_error(name));
  }
  const std::string call = absl::StrCat(av(op), "(variable '", av(name), "', aggregation ",
                                        av(variable_aggregation_name(policy.aggregation)), ")");
  const VariableAggregation aggregation = policy.aggregation;
  auto combine = [&](absl::Span<const Structure> inputs) -> absl::StatusOr<Structure> {
    for (size_t r = 0; r < inputs.size(); ++r) {
      const bool ok = inputs[r].is_tensor() && inputs[r].tensor().valid() &&
                      inputs[r].tensor().dtype() == dtype && inputs[r].tensor().shape() == shape;
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat(av(op), " of variable '", av(name), "' in replica ", r, ": the value is ",
                         inputs[r].debug_string().substr(0, 200), " but the variable is ",
                         av(dtype_name(dtype)), " ", shape_string(shape)));
      }
    }
    const bool mirrored = same_buffer(inputs);
    Tensor combined;
    if (aggregation == VariableAggregation::kOnlyFirstReplica || mirrored) {
      combined = inputs[0].tensor();
    } else {
      if (aggregation == VariableAggregation::kMean && !is_float(dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Cannot update non-float variables with tf.VariableAggregation.MEAN aggregation in "
            "replica context. Either change the variable dtype to float or update it in "
            "cross-replica context. (variable '",
            av(name), "' is ", av(dtype_name(dtype)), ")"));
      }
      const ReduceOp reduce =
          aggregation == VariableAggregation::kSum ? ReduceOp::kSum : ReduceOp::kMean;
      PSFLOW_ASSIGN_OR_RETURN(Structure reduced, reduce_components(reduce, inputs, std::nullopt));
      combined = reduced.tensor();
    }
    PSFLOW_RETURN_IF_ERROR(apply(combined));
    return Structure();
  };
  absl::StatusOr<Structure> merged =
      ReplicaContextAccess::exchange(*ctx, call, Structure(value), combine);
  return merged.status();
}

}  // namespace psflow::internal
