// ShardedVariable: a variable split along axis 0, and the operations that
// fan out over its parts (one request per task, in parallel).
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "psflow/variable.h"
#include "strategy/read_cache.h"
#include "strategy/replica_update.h"
#include "strategy/request_batch.h"
#include "strategy/rows.h"
#include "strategy/tensor_index_impl.h"
#include "strategy/variable_state.h"

namespace psflow {

using internal::av;
using internal::VariableOpArgs;

namespace {

using internal::ShardedState;
using internal::VariableAccess;
using Op = v1::VariableOp;

const std::string kEmpty;
const Shape kNoShape;
const std::vector<Variable> kNoParts;
const std::vector<int64_t> kNoOffsets;

int64_t rows_of(const Shape& shape) { return shape.empty() ? 0 : shape[0]; }

// The layout of `parts` along axis 0 (a scalar has one part of 0 rows).
internal::ShardLayout layout_of(const std::vector<Variable>& parts) {
  std::vector<int64_t> sizes;
  sizes.reserve(parts.size());
  for (const Variable& p : parts) sizes.push_back(rows_of(p.shape()));
  return internal::ShardLayout(std::move(sizes));
}

std::shared_ptr<const ShardedState> make_state(std::vector<Variable> parts, std::string name) {
  if (parts.size() > 1) {
    // The container's own handles to its parts say whose parts they are
    // (the caller's handles stay plain variables).
    for (Variable& p : parts) {
      auto marked = std::make_shared<internal::VariableState>(VariableAccess::state(p));
      marked->sharded_container = name;
      p = VariableAccess::make(std::move(marked));
    }
  }
  auto state = std::make_shared<ShardedState>();
  state->name = std::move(name);
  state->dtype = parts[0].dtype();
  state->shape = parts[0].shape();
  if (!state->shape.empty()) {
    int64_t rows = 0;
    for (const Variable& p : parts) rows += p.shape()[0];
    state->shape[0] = rows;
  }
  state->layout = layout_of(parts);
  state->policy = VariableAccess::state(parts[0]).policy;
  state->parts = std::move(parts);
  return state;
}

absl::Status check_full_value(const ShardedVariable& v, const Tensor& value,
                              std::string_view what) {
  if (value.valid() && value.dtype() == v.dtype() && value.shape() == v.shape()) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      av(what), " for sharded variable '", v.name(), "' is ",
      value.valid() ? absl::StrCat(av(dtype_name(value.dtype())), " ", shape_string(value.shape()))
                    : std::string("an invalid (default-constructed) Tensor"),
      " but the variable is ", av(dtype_name(v.dtype())), " ", shape_string(v.shape()),
      "; pass a value of the full shape (each part receives its rows)"));
}

// assign / assign_add / assign_sub over every part.
absl::Status assign_like(const ShardedVariable& v, Op::Kind kind, const Tensor& value) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(v));
  const ShardedState& s = VariableAccess::state(v);
  PSFLOW_RETURN_IF_ERROR(check_full_value(v, value, Op::Kind_Name(kind)));
  auto direct = [&](const Tensor& full) {
    internal::RequestBatch batch;
    for (size_t i = 0; i < s.parts.size(); ++i) {
      const auto shard = static_cast<int>(i);
      VariableOpArgs op = internal::make_op(kind, VariableAccess::state(s.parts[i]));
      op.value = s.parts.size() == 1 ? full
                                     : full.slice(s.layout.offset(shard),
                                                  s.layout.offset(shard) + s.layout.size(shard));
      batch.add(VariableAccess::state(s.parts[i]), std::move(op));
    }
    return batch.run().status();
  };
  // One merge for the whole variable (TF merges per shard; the values
  // written are the same).
  if (std::optional<absl::Status> aggregated = internal::update_in_replica_context(
          s.policy, s.name, s.dtype, s.shape, absl::AsciiStrToLower(Op::Kind_Name(kind)), value,
          direct)) {
    return *aggregated;
  }
  return direct(value);
}

absl::Status scatter_like(const ShardedVariable& v, Op::Kind kind, const IndexedSlices& delta) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(v));
  const ShardedState& s = VariableAccess::state(v);
  if (s.parts.size() == 1) {
    // The task validates everything, as for a plain Variable.
    const Variable& part = s.parts[0];
    switch (kind) {
      case Op::SCATTER_UPDATE: return part.scatter_update(delta);
      case Op::SCATTER_ADD: return part.scatter_add(delta);
      case Op::SCATTER_SUB: return part.scatter_sub(delta);
      case Op::SCATTER_MUL: return part.scatter_mul(delta);
      case Op::SCATTER_DIV: return part.scatter_div(delta);
      case Op::SCATTER_MIN: return part.scatter_min(delta);
      default: return part.scatter_max(delta);
    }
  }
  if (!delta.indices.valid() || delta.indices.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        Op::Kind_Name(kind), " on sharded variable '", s.name, "' needs 1-D indices, got ",
        delta.indices.valid() ? shape_string(delta.indices.shape()) : std::string("none"),
        "; flatten the indices and the matching rows of values"));
  }
  const Shape expected = internal::with_rows(delta.indices.dim(0), internal::row_shape(s.shape));
  if (!delta.values.valid() || delta.values.dtype() != s.dtype ||
      delta.values.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        Op::Kind_Name(kind), " on sharded variable '", s.name, "' needs values of ",
        av(dtype_name(s.dtype)), " ", shape_string(expected), " (one row per index), got ",
        delta.values.valid() ? absl::StrCat(av(dtype_name(delta.values.dtype())), " ",
                                            shape_string(delta.values.shape()))
                             : std::string("an invalid (default-constructed) Tensor")));
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::RoutedIds routed,
                          internal::route_ids(s.layout, delta.indices, s.name));
  internal::RequestBatch batch;
  for (size_t i = 0; i < s.parts.size(); ++i) {
    if (routed.local_ids[i].empty()) continue;
    const internal::VariableState& part = VariableAccess::state(s.parts[i]);
    VariableOpArgs op = internal::make_op(kind, part);
    op.ids = Tensor::from_vector<int64_t>(routed.local_ids[i]);
    op.value = internal::take_rows(delta.values, routed.positions[i]);
    batch.add(part, std::move(op));
  }
  return batch.run().status();
}

}  // namespace

ShardedVariable::ShardedVariable(const Variable& variable) {
  if (variable.valid()) state_ = make_state({variable}, variable.name());
}

absl::StatusOr<ShardedVariable> ShardedVariable::create(std::vector<Variable> parts,
                                                        std::string name) {
  if (parts.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variables of ShardedVariable '", name,
                     "' should be a non-empty list of Variable, got an empty list"));
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(internal::check_valid(parts[i]));
    const Variable& p = parts[i];
    if (const std::string& container = VariableAccess::state(p).sharded_container;
        !container.empty()) {
      // TF: "`SaveSliceInfo` should not be set for all elements": the part
      // already belongs to a sharded variable, whose layout (and
      // checkpoint) it is a slice of.
      return absl::InvalidArgumentError(absl::StrCat(
          "'", p.name(), "' is already a shard of ShardedVariable '", container,
          "' and cannot be a part of ShardedVariable '", name, "'; use '", container,
          "' itself, or build '", name, "' from variables that are not parts of another"));
    }
    if (p.dtype() != parts[0].dtype()) {
      return absl::InvalidArgumentError(
          absl::StrCat("All elements in `variables` must have the same dtype; '", p.name(), "' is ",
                       av(dtype_name(p.dtype())), " but '", parts[0].name(), "' is ",
                       av(dtype_name(parts[0].dtype()))));
    }
    if (parts.size() > 1 && p.shape().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("scalar variable '", p.name(), "' cannot be a part of a ShardedVariable of ",
                       parts.size(), " parts; scalars are never sharded"));
    }
    if (internal::row_shape(p.shape()) != internal::row_shape(parts[0].shape()) ||
        p.shape().size() != parts[0].shape().size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "All elements in `variables` must have the same shapes except for the first axis; '",
          p.name(), "' is ", shape_string(p.shape()), " but '", parts[0].name(), "' is ",
          shape_string(parts[0].shape())));
    }
  }
  return ShardedVariable(make_state(std::move(parts), std::move(name)));
}

absl::StatusOr<ShardedVariable> ShardedVariable::from_handle(const VariableHandle& handle,
                                                             const VariableClientLookup& lookup,
                                                             absl::Duration timeout) {
  PSFLOW_RETURN_IF_ERROR(handle.validate());
  internal::VariablePolicy policy;
  policy.aggregation = handle.aggregation;
  policy.synchronization = handle.synchronization;
  policy.trainable = handle.trainable;
  policy.wire_dtype = handle.wire_dtype;
  std::vector<Variable> parts;
  parts.reserve(handle.parts.size());
  for (const VariablePartHandle& p : handle.parts) {
    PSFLOW_ASSIGN_OR_RETURN(Variable v, Variable::from_handle(p, handle.dtype, lookup, timeout));
    auto state = std::make_shared<internal::VariableState>(VariableAccess::state(v));
    state->policy = policy;
    parts.push_back(VariableAccess::make(std::move(state)));
  }
  return create(std::move(parts), handle.name);
}

const std::string& ShardedVariable::name() const { return state_ ? state_->name : kEmpty; }
DType ShardedVariable::dtype() const { return state_ ? state_->dtype : DType::kInvalid; }
const Shape& ShardedVariable::shape() const { return state_ ? state_->shape : kNoShape; }
const std::vector<Variable>& ShardedVariable::variables() const {
  return state_ ? state_->parts : kNoParts;
}
const std::vector<int64_t>& ShardedVariable::offsets() const {
  return state_ ? state_->layout.offsets() : kNoOffsets;
}
VariableAggregation ShardedVariable::aggregation() const {
  return state_ ? state_->policy.aggregation : VariableAggregation::kNone;
}
VariableSynchronization ShardedVariable::synchronization() const {
  return state_ ? state_->policy.synchronization : VariableSynchronization::kAuto;
}
bool ShardedVariable::trainable() const { return state_ ? state_->policy.trainable : true; }

VariableHandle ShardedVariable::handle() const {
  VariableHandle h;
  h.name = name();
  h.dtype = dtype();
  h.shape = shape();
  if (!state_) return h;
  h.aggregation = state_->policy.aggregation;
  h.synchronization = state_->policy.synchronization;
  h.trainable = state_->policy.trainable;
  h.wire_dtype = state_->policy.wire_dtype;
  for (size_t i = 0; i < state_->parts.size(); ++i) {
    const Variable& p = state_->parts[i];
    h.parts.push_back(
        {p.job(), p.task(), p.name(), p.shape(), state_->layout.offset(static_cast<int>(i))});
  }
  return h;
}

absl::StatusOr<Tensor> ShardedVariable::read_value() const {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> values, read_values({*this}));
  return std::move(values[0]);
}

absl::StatusOr<Tensor> ShardedVariable::get_item(const std::vector<TensorIndex>& index) const {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(*this));
  const ShardedState& s = *state_;
  if (index.size() == 1 && std::holds_alternative<Tensor>(index[0].value())) {
    // TF converts the whole variable for a bool mask.
    PSFLOW_ASSIGN_OR_RETURN(Tensor full, read_value());
    return psflow::get_item(full, index);
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::ResolvedIndex r,
                          internal::resolve_index(s.shape, index, "ShardedVariable: "));
  if (s.shape.empty()) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor scalar, read_value());
    return internal::take_elements(scalar, r);
  }
  // Fetch only the rows axis 0 takes, in the order it takes them, then
  // index the fetched rows with axis 0 renumbered 0..k-1.
  internal::ResolvedAxis* rows = nullptr;
  for (internal::ResolvedAxis& a : r.axes) {
    if (a.input_axis == 0) rows = &a;
  }
  std::vector<int64_t> ids = rows->indices;
  Tensor fetched;
  if (ids.empty()) {
    fetched = Tensor(s.dtype, internal::with_rows(0, internal::row_shape(s.shape)));
  } else {
    PSFLOW_ASSIGN_OR_RETURN(fetched, embedding_lookup(*this, Tensor::from_vector<int64_t>(ids)));
  }
  for (size_t i = 0; i < rows->indices.size(); ++i) rows->indices[i] = static_cast<int64_t>(i);
  return internal::take_elements(fetched, r);
}

absl::Status ShardedVariable::assign(const Tensor& value) const {
  return assign_like(*this, Op::ASSIGN, value);
}
absl::Status ShardedVariable::assign_add(const Tensor& delta) const {
  return assign_like(*this, Op::ASSIGN_ADD, delta);
}
absl::Status ShardedVariable::assign_sub(const Tensor& delta) const {
  return assign_like(*this, Op::ASSIGN_SUB, delta);
}

absl::StatusOr<Tensor> ShardedVariable::sparse_read(const Tensor& indices) const {
  return embedding_lookup(*this, indices);
}

absl::Status ShardedVariable::scatter_update(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_UPDATE, d);
}
absl::Status ShardedVariable::scatter_add(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_ADD, d);
}
absl::Status ShardedVariable::scatter_sub(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_SUB, d);
}
absl::Status ShardedVariable::scatter_mul(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_MUL, d);
}
absl::Status ShardedVariable::scatter_div(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_DIV, d);
}
absl::Status ShardedVariable::scatter_min(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_MIN, d);
}
absl::Status ShardedVariable::scatter_max(const IndexedSlices& d) const {
  return scatter_like(*this, Op::SCATTER_MAX, d);
}

absl::StatusOr<Tensor> embedding_lookup(const ShardedVariable& params, const Tensor& ids) {
  PSFLOW_RETURN_IF_ERROR(internal::check_valid(params));
  const ShardedState& s = VariableAccess::state(params);
  if (s.shape.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("embedding_lookup needs a variable of rank >= 1; '", s.name,
                     "' is a scalar (use read_value)"));
  }
  if (!ids.valid()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "embedding_lookup on '", s.name, "' got an invalid (default-constructed) ids tensor"));
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::RoutedIds routed, internal::route_ids(s.layout, ids, s.name));
  internal::RequestBatch batch;
  std::vector<std::pair<size_t, int>> gathers;  // (shard, result slot)
  for (size_t i = 0; i < s.parts.size(); ++i) {
    if (routed.local_ids[i].empty()) continue;
    const internal::VariableState& part = VariableAccess::state(s.parts[i]);
    VariableOpArgs op = internal::make_op(Op::GATHER, part);
    op.wire_dtype = part.policy.wire_dtype;
    op.ids = Tensor::from_vector<int64_t>(routed.local_ids[i]);
    gathers.emplace_back(i, batch.add(part, std::move(op)));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> results, batch.run());
  const Shape tail = internal::row_shape(s.shape);
  Tensor out(s.dtype, internal::with_rows(ids.num_elements(), tail));
  for (const auto& [shard, slot] : gathers) {
    const Tensor& rows = results[static_cast<size_t>(slot)];
    const Shape expected =
        internal::with_rows(static_cast<int64_t>(routed.positions[shard].size()), tail);
    if (rows.dtype() != s.dtype || rows.shape() != expected) {
      return absl::FailedPreconditionError(absl::StrCat(
          "gather from '", s.parts[shard].name(), "' on ", s.parts[shard].device(), " returned ",
          av(dtype_name(rows.dtype())), " ", shape_string(rows.shape()), ", expected ",
          av(dtype_name(s.dtype)), " ", shape_string(expected),
          "; the task holds a different variable under this name (re-created elsewhere?)"));
    }
    internal::put_rows(rows, routed.positions[shard], out);
  }
  Shape out_shape = ids.shape();
  out_shape.insert(out_shape.end(), tail.begin(), tail.end());
  return out.reshape(std::move(out_shape));
}

absl::StatusOr<std::vector<Tensor>> read_values(absl::Span<const ShardedVariable> variables) {
  internal::RequestBatch batch;
  // Inside cache_variable_reads(), parts read before in the scope are not
  // requested again (slot -1) and their first value is used.
  internal::ReadCache* cache = internal::current_read_cache();
  std::vector<std::vector<int>> slots(variables.size());
  std::vector<std::vector<Tensor>> cached(variables.size());
  // A float32 variable read whole lands in its pool's buffer, each part in
  // its rows (internal::sub_buffer): no allocation and no concatenation
  // per step once the previous step's value is let go.
  std::vector<std::shared_ptr<TensorBuffer>> whole(variables.size());
  std::vector<std::vector<std::shared_ptr<TensorBuffer>>> landing(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    PSFLOW_RETURN_IF_ERROR(internal::check_valid(variables[v]));
    const ShardedState& s = VariableAccess::state(variables[v]);
    bool any_cached = false;
    for (const Variable& part : s.parts) {
      const internal::VariableState& ps = VariableAccess::state(part);
      std::optional<Tensor> hit = cache != nullptr ? cache->find(ps) : std::nullopt;
      any_cached = any_cached || hit.has_value();
      cached[v].push_back(hit.has_value() ? *std::move(hit) : Tensor());
    }
    int64_t elements = 1;
    for (const int64_t d : s.shape) elements *= d;
    if (s.dtype == DType::kFloat32 && !any_cached && elements > 0 && s.receive != nullptr) {
      whole[v] = s.receive->take(static_cast<size_t>(elements) * sizeof(float));
    }
    size_t offset = 0;
    for (size_t i = 0; i < s.parts.size(); ++i) {
      const internal::VariableState& ps = VariableAccess::state(s.parts[i]);
      if (cached[v][i].valid()) {
        slots[v].push_back(-1);
        continue;
      }
      VariableOpArgs op = internal::make_op(Op::READ, ps);
      op.wire_dtype = ps.policy.wire_dtype;
      if (whole[v] != nullptr) {
        int64_t part_elements = 1;
        for (const int64_t d : ps.shape) part_elements *= d;
        const size_t bytes = static_cast<size_t>(part_elements) * sizeof(float);
        op.result_buffer =
            s.parts.size() == 1 ? whole[v] : internal::sub_buffer(whole[v], offset, bytes);
        offset += bytes;
      }
      landing[v].push_back(op.result_buffer);
      slots[v].push_back(batch.add(ps, std::move(op)));
    }
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> results, batch.run());
  std::vector<Tensor> out;
  out.reserve(variables.size());
  for (size_t v = 0; v < variables.size(); ++v) {
    const ShardedVariable& var = variables[v];
    std::vector<Tensor> parts;
    parts.reserve(slots[v].size());
    bool landed = whole[v] != nullptr;
    for (size_t i = 0; i < slots[v].size(); ++i) {
      if (slots[v][i] < 0) {
        parts.push_back(cached[v][i]);
        continue;
      }
      Tensor t = std::move(results[static_cast<size_t>(slots[v][i])]);
      const Variable& part = var.variables()[i];
      if (t.dtype() != part.dtype() || t.shape() != part.shape()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "read of '", part.name(), "' on ", part.device(), " returned ",
            av(dtype_name(t.dtype())), " ", shape_string(t.shape()), ", expected ",
            av(dtype_name(part.dtype())), " ", shape_string(part.shape()),
            "; the task holds a different variable under this name (re-created elsewhere?)"));
      }
      landed = landed && t.buffer() == landing[v][i];
      if (cache != nullptr) t = cache->put(VariableAccess::state(part), t);
      parts.push_back(std::move(t));
    }
    if (landed && parts.size() > 1) {
      // Every part is in its rows of the whole buffer already.
      parts.clear();
      PSFLOW_ASSIGN_OR_RETURN(Tensor joined,
                              Tensor::from_buffer(var.dtype(), var.shape(), std::move(whole[v])));
      out.push_back(std::move(joined));
      continue;
    }
    out.push_back(parts.size() == 1 ? std::move(parts[0]) : internal::concat_rows(parts));
  }
  return out;
}

}  // namespace psflow
