// Variable: one stored variable on one task.
#include "psflow/variable.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/cluster_spec.h"
#include "psflow/status_macros.h"
#include "strategy/client_lookup.h"
#include "strategy/read_cache.h"
#include "strategy/replica_update.h"
#include "strategy/request_batch.h"
#include "strategy/rows.h"
#include "strategy/variable_state.h"

namespace psflow {

using internal::av;
using internal::VariableOpArgs;

namespace internal {

std::string device_string(std::string_view job, int task) {
  return absl::StrCat(task_name(job, task), "/device:CPU:0");
}

absl::Status check_valid(const Variable& v) {
  if (v.valid()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "operation on an empty Variable handle (default-constructed); assign it a variable "
      "first, e.g. from create_variable(...)->variables()[0]");
}

absl::Status check_valid(const ShardedVariable& v) {
  if (v.valid()) return absl::OkStatus();
  return absl::FailedPreconditionError(
      "operation on an empty ShardedVariable handle (default-constructed); assign it the "
      "result of create_variable(...) first");
}

}  // namespace internal

namespace {

using internal::VariableAccess;
using internal::VariableState;
using Op = v1::VariableOp;

const std::string kEmpty;
const Shape kNoShape;

// Runs `op` on the variable's task; returns the READ/GATHER result, if any.
absl::StatusOr<Tensor> run_one(const Variable& v, VariableOpArgs op) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(v));
  internal::RequestBatch batch;
  const int slot = batch.add(VariableAccess::state(v), std::move(op));
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> results, batch.run());
  return slot < 0 ? Tensor() : std::move(results[static_cast<size_t>(slot)]);
}

absl::Status check_tensor(const Tensor& t, std::string_view what, const Variable& v) {
  if (t.valid()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(av(what), " for variable '", v.name(),
                                                 "' is an invalid (default-constructed) Tensor"));
}

absl::Status run_value_op(const Variable& v, Op::Kind kind, const Tensor& value) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(v));
  PSFLOW_RETURN_IF_ERROR(check_tensor(value, Op::Kind_Name(kind), v));
  auto direct = [&](const Tensor& t) {
    VariableOpArgs op = internal::make_op(kind, VariableAccess::state(v));
    op.value = t;
    return run_one(v, std::move(op)).status();
  };
  const VariableState& s = VariableAccess::state(v);
  if (std::optional<absl::Status> aggregated = internal::update_in_replica_context(
          s.policy, s.name, s.dtype, s.shape, absl::AsciiStrToLower(Op::Kind_Name(kind)), value,
          direct)) {
    return *aggregated;
  }
  return direct(value);
}

absl::Status run_scatter(const Variable& v, Op::Kind kind, const IndexedSlices& delta) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(v));
  PSFLOW_RETURN_IF_ERROR(check_tensor(delta.values, "scatter values", v));
  PSFLOW_RETURN_IF_ERROR(check_tensor(delta.indices, "scatter indices", v));
  VariableOpArgs op = internal::make_op(kind, VariableAccess::state(v));
  op.value = delta.values;
  op.ids = delta.indices;
  return run_one(v, std::move(op)).status();
}

}  // namespace

absl::StatusOr<Variable> Variable::from_handle(const VariablePartHandle& part, DType dtype,
                                               const VariableClientLookup& lookup,
                                               absl::Duration timeout) {
  if (!lookup) {
    return absl::InvalidArgumentError(
        absl::StrCat("no client lookup given to rebuild variable '", part.name, "'"));
  }
  auto client = internal::find_client(lookup, part.job, part.task);
  if (!client.ok()) {
    return absl::Status(client.status().code(),
                        absl::StrCat("variable '", part.name, "': ", client.status().message()));
  }
  if (*client == nullptr) {
    return absl::NotFoundError(absl::StrCat("variable '", part.name,
                                            "': the lookup has no client for ",
                                            task_name(part.job, part.task)));
  }
  auto state = std::make_shared<VariableState>();
  state->name = part.name;
  state->dtype = dtype;
  state->shape = part.shape;
  state->job = part.job;
  state->task = part.task;
  state->device = internal::device_string(part.job, part.task);
  state->client = *std::move(client);
  state->timeout = timeout;
  return Variable(std::move(state));
}

const std::string& Variable::name() const { return state_ ? state_->name : kEmpty; }
const std::string& Variable::device() const { return state_ ? state_->device : kEmpty; }
DType Variable::dtype() const { return state_ ? state_->dtype : DType::kInvalid; }
const Shape& Variable::shape() const { return state_ ? state_->shape : kNoShape; }
const std::string& Variable::job() const { return state_ ? state_->job : kEmpty; }
int Variable::task() const { return state_ ? state_->task : 0; }
VariableAggregation Variable::aggregation() const {
  return state_ ? state_->policy.aggregation : VariableAggregation::kNone;
}
VariableSynchronization Variable::synchronization() const {
  return state_ ? state_->policy.synchronization : VariableSynchronization::kAuto;
}
bool Variable::trainable() const { return state_ ? state_->policy.trainable : true; }

VariableHandle Variable::handle() const {
  VariableHandle h;
  h.name = name();
  h.dtype = dtype();
  h.shape = shape();
  if (state_) {
    h.parts.push_back({state_->job, state_->task, state_->name, state_->shape, 0});
    h.aggregation = state_->policy.aggregation;
    h.synchronization = state_->policy.synchronization;
    h.trainable = state_->policy.trainable;
  }
  return h;
}

absl::StatusOr<Tensor> Variable::read_value() const {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(*this));
  internal::ReadCache* cache = internal::current_read_cache();
  if (cache != nullptr) {
    if (std::optional<Tensor> cached = cache->find(*state_)) return *std::move(cached);
  }
  PSFLOW_ASSIGN_OR_RETURN(Tensor value, run_one(*this, internal::make_op(Op::READ, *state_)));
  if (cache != nullptr) return cache->put(*state_, value);
  return value;
}

absl::Status Variable::assign(const Tensor& value) const {
  return run_value_op(*this, Op::ASSIGN, value);
}
absl::Status Variable::assign_add(const Tensor& delta) const {
  return run_value_op(*this, Op::ASSIGN_ADD, delta);
}
absl::Status Variable::assign_sub(const Tensor& delta) const {
  return run_value_op(*this, Op::ASSIGN_SUB, delta);
}

absl::StatusOr<Tensor> Variable::sparse_read(const Tensor& indices) const {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(*this));
  PSFLOW_RETURN_IF_ERROR(check_tensor(indices, "sparse_read ids", *this));
  PSFLOW_ASSIGN_OR_RETURN(Tensor flat_ids, indices.reshape({indices.num_elements()}));
  VariableOpArgs op = internal::make_op(Op::GATHER, *state_);
  op.ids = flat_ids;
  PSFLOW_ASSIGN_OR_RETURN(Tensor rows, run_one(*this, std::move(op)));
  Shape out = indices.shape();
  const Shape tail = internal::row_shape(shape());
  out.insert(out.end(), tail.begin(), tail.end());
  return rows.reshape(std::move(out));
}

absl::Status Variable::scatter_update(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_UPDATE, d);
}
absl::Status Variable::scatter_add(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_ADD, d);
}
absl::Status Variable::scatter_sub(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_SUB, d);
}
absl::Status Variable::scatter_mul(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_MUL, d);
}
absl::Status Variable::scatter_div(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_DIV, d);
}
absl::Status Variable::scatter_min(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_MIN, d);
}
absl::Status Variable::scatter_max(const IndexedSlices& d) const {
  return run_scatter(*this, Op::SCATTER_MAX, d);
}

}  // namespace psflow
