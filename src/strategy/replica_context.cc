#include "psflow/replica_context.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/reduce_nest.h"
#include "strategy/replica_collective.h"

namespace psflow {

using internal::av;

absl::StatusOr<int64_t> InputContext::get_per_replica_batch_size(int64_t global_batch_size) const {
  if (num_replicas_ <= 0 || global_batch_size % num_replicas_ != 0) {
    return absl::InvalidArgumentError(absl::StrCat("The `global_batch_size` ", global_batch_size,
                                                   " is not divisible by `num_replicas_in_sync` ",
                                                   num_replicas_));
  }
  return global_batch_size / num_replicas_;
}

absl::StatusOr<Structure> ReplicaContext::all_reduce(ReduceOp op, const Structure& value) const {
  return collective_->exchange(replica_id_,
                               absl::StrCat("all_reduce(", av(reduce_op_name(op)), ")"), value,
                               [op](absl::Span<const Structure> inputs) {
                                 return internal::reduce_components(op, inputs, std::nullopt);
                               });
}

absl::StatusOr<Structure> ReplicaContext::all_reduce(std::string_view op,
                                                     const Structure& value) const {
  PSFLOW_ASSIGN_OR_RETURN(ReduceOp parsed, reduce_op_from_string(op));
  return all_reduce(parsed, value);
}

absl::StatusOr<Structure> ReplicaContext::all_gather(const Structure& value, int axis) const {
  return collective_->exchange(replica_id_, absl::StrCat("all_gather(axis=", axis, ")"), value,
                               [axis](absl::Span<const Structure> inputs) {
                                 return internal::gather_components(inputs, axis);
                               });
}

const ReplicaContext* get_replica_context() { return internal::current_replica_context(); }

}  // namespace psflow
