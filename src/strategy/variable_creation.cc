#include "strategy/variable_creation.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/local_variables.h"
#include "strategy/name_registry.h"
#include "strategy/request_batch.h"
#include "strategy/variable_state.h"

namespace psflow::internal {
namespace {

// TF logs a warning when slicing a value this large on the coordinator.
constexpr int64_t kLargeValueElements = 1'000'000'000;

std::string py_list(const std::vector<int64_t>& v) {
  return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
}

std::string describe(const Tensor& t) {
  return t.valid() ? absl::StrCat(av(dtype_name(t.dtype())), " ", shape_string(t.shape()))
                   : std::string("an invalid (default-constructed) Tensor");
}

// The initial value of one part: rows [offset, offset + shape[0]).
absl::StatusOr<Tensor> part_value(const InitialValue& initial, const Shape& part_shape,
                                  int64_t row_offset, const std::string& part) {
  if (initial.value != nullptr) {
    if (part_shape == initial.shape) return *initial.value;
    return initial.value->slice(row_offset, row_offset + part_shape[0]);
  }
  Shape offset(initial.shape.size(), 0);
  if (!offset.empty()) offset[0] = row_offset;
  absl::StatusOr<Tensor> made = initial.init->fn(part_shape, offset);
  if (!made.ok()) {
    return absl::Status(made.status().code(), absl::StrCat("initializer of variable '", part,
                                                           "' failed: ", made.status().message()));
  }
  if (made->valid() && made->dtype() == initial.dtype) {
    if (made->shape() == part_shape) return *std::move(made);
    // TF's slow path: an initializer that ignores the partition arguments.
    if (made->shape() == initial.shape) {
      return made->slice(row_offset, row_offset + part_shape[0]);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "initializer of variable '", part, "' returned ", describe(*made), " for part shape ",
      shape_string(part_shape), " at offset ", shape_string(offset), "; return ",
      av(dtype_name(initial.dtype)), " of the part's shape (or of the full shape ",
      shape_string(initial.shape), ")"));
}

}  // namespace

absl::StatusOr<InitialValue> describe_initial_value(const Tensor* value, const Initializer* init) {
  InitialValue out;
  out.value = value;
  out.init = init;
  if (value != nullptr) {
    if (!value->valid()) {
      return absl::InvalidArgumentError(
          "initial_value is an invalid (default-constructed) Tensor; pass the variable's "
          "initial value");
    }
    out.dtype = value->dtype();
    out.shape = value->shape();
    return out;
  }
  if (init == nullptr || !init->fn) {
    return absl::InvalidArgumentError(
        "the Initializer has no function; set Initializer::fn (or pass a Tensor)");
  }
  if (init->dtype == DType::kInvalid || !is_valid_dtype(static_cast<int>(init->dtype))) {
    return absl::InvalidArgumentError("the Initializer has no valid dtype; set Initializer::dtype");
  }
  if (auto n = checked_num_elements(init->shape); !n.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the Initializer's shape is invalid: ", n.status().message()));
  }
  out.dtype = init->dtype;
  out.shape = init->shape;
  return out;
}

absl::StatusOr<PartitionPlan> plan_partitions(const Partitioner& partitioner, const Shape& shape,
                                              DType dtype, const std::string& name) {
  const int64_t rows = shape.empty() ? 0 : shape[0];
  PartitionPlan unsharded{{rows}, false};
  if (!partitioner || shape.empty()) return unsharded;
  absl::StatusOr<std::vector<int64_t>> parts = partitioner(shape, dtype);
  if (!parts.ok()) {
    return absl::Status(
        parts.status().code(),
        absl::StrCat("variable_partitioner failed for variable '", name, "' of shape ",
                     shape_string(shape), ": ", parts.status().message()));
  }
  bool valid = !parts->empty() && (*parts)[0] >= 1;
  for (size_t i = 1; valid && i < parts->size(); ++i) valid = (*parts)[i] == 1;
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable_partitioner must return a list/tuple whose elements are 1 besides the first "
        "element (non-zero), got: ",
        py_list(*parts), " (for variable '", name, "' of shape ", shape_string(shape),
        "); return {num_shards, 1, ..., 1} with one entry per dimension"));
  }
  if ((*parts)[0] == 1 || rows == 0) return unsharded;
  return PartitionPlan{div_partition_sizes(rows, (*parts)[0]), true};
}

absl::StatusOr<VariablePolicy> policy_of(const VariableOptions& options, const std::string& name) {
  VariablePolicy policy;
  policy.aggregation = options.aggregation;
  policy.synchronization = options.synchronization;
  if (variable_aggregation_name(policy.aggregation).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid variable aggregation mode: ", static_cast<int>(policy.aggregation),
                     " for variable: ", name,
                     "; use NONE, SUM, MEAN or ONLY_FIRST_REPLICA (VariableAggregation)"));
  }
  if (variable_synchronization_name(policy.synchronization).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Invalid variable synchronization mode: ", static_cast<int>(policy.synchronization),
        " for variable: ", name,
        "; use AUTO, NONE, ON_WRITE or ON_READ (VariableSynchronization)"));
  }
  policy.trainable =
      options.trainable.value_or(policy.synchronization != VariableSynchronization::kOnRead);
  policy.wire_dtype = options.wire_dtype.value_or(WireDType::kFloat32);
  if (wire_dtype_name(policy.wire_dtype) == "invalid") {
    return absl::InvalidArgumentError(
        absl::StrCat("Invalid wire dtype ", static_cast<int>(policy.wire_dtype),
                     " for variable: ", name, "; use kFloat32 or kBFloat16 (WireDType)"));
  }
  return policy;
}

absl::StatusOr<ShardedVariable> create_parts(const InitialValue& initial, const std::string& name,
                                             const PartitionPlan& plan,
                                             const std::vector<PartTarget>& targets,
                                             absl::Duration timeout, const VariablePolicy& policy) {
  PSFLOW_CHECK(targets.size() == plan.sizes.size(), "one target per part");
  if (plan.partitioned && initial.value != nullptr &&
      initial.value->num_elements() > kLargeValueElements) {
    PSFLOW_LOG(Warning, "variable '", name, "' has ", initial.value->num_elements(),
               " elements and is sliced on the coordinator; a partition-aware Initializer "
               "avoids building the full value");
  }
  RequestBatch batch;
  std::vector<Variable> parts;
  parts.reserve(plan.sizes.size());
  int64_t offset = 0;
  for (size_t i = 0; i < plan.sizes.size(); ++i) {
    auto state = std::make_shared<VariableState>();
    state->name = plan.partitioned ? part_name(name, static_cast<int>(i)) : name;
    state->dtype = initial.dtype;
    state->shape = initial.shape;
    if (!state->shape.empty()) state->shape[0] = plan.sizes[i];
    state->job = targets[i].job;
    state->task = targets[i].task;
    state->device = device_string(state->job, state->task);
    state->client = targets[i].client;
    state->timeout = timeout;
    state->policy = policy;
    PSFLOW_ASSIGN_OR_RETURN(Tensor value, part_value(initial, state->shape, offset, state->name));
    VariableOpArgs op = make_op(v1::VariableOp::CREATE, *state);
    // The in-process store adopts a CREATE value's buffer; the coordinator's
    // own variables must not alias the caller's tensor (TF copies the
    // initial value), so they get a copy. Remote tasks receive bytes.
    op.value = state->job == kLocalJob ? value.clone() : std::move(value);
    batch.add(*state, std::move(op));
    parts.push_back(VariableAccess::make(std::move(state)));
    offset += plan.sizes[i];
  }
  PSFLOW_RETURN_IF_ERROR(batch.run().status());
  return ShardedVariable::create(std::move(parts), name);
}

absl::StatusOr<PartTarget> colocation_target(const ShardedVariable& with) {
  if (!with.valid()) {
    return absl::InvalidArgumentError(
        "colocate_with names an empty (default-constructed) variable handle");
  }
  if (with.num_parts() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot colocate with sharded variable '", with.name(), "' (",
                     with.num_parts(), " parts); colocate with one of its variables()"));
  }
  const VariableState& part = VariableAccess::state(with.variables()[0]);
  return PartTarget{part.job, part.task, part.client};
}

}  // namespace psflow::internal
