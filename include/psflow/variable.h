// Variables as the coordinator and workers see them: handles to values that
// live on ps tasks (TF's tf.Variable and ShardedVariable).
//
// Why handles with reference semantics, not move-only RAII owners: a ps
// variable is shared state. The coordinator creates it, every scheduled
// function on every worker reads and updates it, checkpoints save it, and
// each of those holds its own handle (workers rebuild theirs from a
// VariableHandle). No single holder owns the storage, so copying a handle
// copies a reference, and dropping the last local copy does not delete the
// stored value: the ps keeps it for its lifetime, as TF's ps keeps a
// variable while any program might still use it.
//
// Why creation always returns ShardedVariable: whether a variable is
// sharded is decided by the strategy's partitioner (a deployment choice),
// not by the model. Returning one type whatever the partitioner says keeps
// model code identical with and without partitioning (TF gets the same
// effect from duck typing), where a std::variant would force every call
// site to branch. An unsharded variable is a ShardedVariable with one part;
// its variables()[0] is the plain Variable, and a Variable converts to a
// one-part ShardedVariable wherever one is expected.
//
// Tensors given to an operation are sent from their own buffers, not
// copied first: do not write to them from another thread while the call
// runs. Every operation blocks until its tasks have answered.
#ifndef PSFLOW_VARIABLE_H_
#define PSFLOW_VARIABLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "psflow/dtype.h"
#include "psflow/tensor.h"
#include "psflow/tensor_index.h"
#include "psflow/variable_handle.h"
#include "psflow/variable_policy.h"

namespace psflow {

namespace internal {
struct VariableState;
struct ShardedState;
struct VariableAccess;
}  // namespace internal

// How long one variable operation (all its requests) may take before it
// fails with DEADLINE_EXCEEDED, unless the strategy's options say otherwise.
inline constexpr absl::Duration kDefaultVariableTimeout = absl::Minutes(5);

// Row-sparse values (TF's tf.IndexedSlices): row `indices[i]` of a dense
// tensor is `values[i, ...]`. Used for scatter updates and sparse
// gradients. `indices` is 1-D int32 or int64; values has shape
// [len(indices)] + the variable's shape[1:].
// Thread-safety: a value type (its tensors share buffers as Tensors do).
struct IndexedSlices {
  Tensor values;
  Tensor indices;
};

// One stored variable (or one shard of a sharded variable) on one task.
//
// Every operation is one request to the owning task and is atomic there:
// concurrent updates from any number of threads and processes never lose
// one another. Operations block until the task answers; errors carry TF's
// codes (INVALID_ARGUMENT for bad input, NOT_FOUND for a variable the task
// does not hold, UNAVAILABLE / DEADLINE_EXCEEDED for an unreachable task,
// and UNAVAILABLE, a ps failure as in TF, for a ps that came back empty
// after a restart) and name the variable and task.
//
// A default-constructed Variable is empty: valid() is false and every
// operation is FAILED_PRECONDITION.
// Thread-safety: immutable handle; all methods may run concurrently.
class Variable {
 public:
  Variable() = default;

  // Rebuilds a variable from one part of a handle (for example in a worker
  // process). The dtype is the whole variable's.
  [[nodiscard]] static absl::StatusOr<Variable> from_handle(
      const VariablePartHandle& part, DType dtype, const VariableClientLookup& lookup,
      absl::Duration timeout = kDefaultVariableTimeout);

  [[nodiscard]] bool valid() const { return state_ != nullptr; }
  // The stored name: "w", "w_1", or "w/part_0" for a shard.
  [[nodiscard]] const std::string& name() const;
  // "/job:ps/replica:0/task:1/device:CPU:0".
  [[nodiscard]] const std::string& device() const;
  [[nodiscard]] DType dtype() const;
  [[nodiscard]] const Shape& shape() const;
  // "ps" or "chief", and the task index within that job.
  [[nodiscard]] const std::string& job() const;
  [[nodiscard]] int task() const;
  // This variable as a one-part handle.
  [[nodiscard]] VariableHandle handle() const;
  // As created (VariableOptions; a shard has its container's).
  [[nodiscard]] VariableAggregation aggregation() const;
  [[nodiscard]] VariableSynchronization synchronization() const;
  [[nodiscard]] bool trainable() const;

  // The current value (a snapshot); inside cache_variable_reads(), the
  // value first read in that scope.
  [[nodiscard]] absl::StatusOr<Tensor> read_value() const;
  // `value` must have the variable's dtype and shape. Inside a replica
  // function with several replicas, assign / assign_add / assign_sub follow
  // the variable's aggregation (variable_policy.h).
  [[nodiscard]] absl::Status assign(const Tensor& value) const;
  [[nodiscard]] absl::Status assign_add(const Tensor& delta) const;
  [[nodiscard]] absl::Status assign_sub(const Tensor& delta) const;
  // Rows `indices` (int32/int64, any shape) of axis 0: the result has shape
  // indices.shape + shape[1:], rows in the order of `indices`.
  [[nodiscard]] absl::StatusOr<Tensor> sparse_read(const Tensor& indices) const;
  // var[indices[i], ...] = op(var[indices[i], ...], values[i, ...]);
  // repeated indices apply in order.
  [[nodiscard]] absl::Status scatter_update(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_add(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_sub(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_mul(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_div(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_min(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_max(const IndexedSlices& sparse_delta) const;

 private:
  friend struct internal::VariableAccess;
  explicit Variable(std::shared_ptr<const internal::VariableState> state)
      : state_(std::move(state)) {}

  std::shared_ptr<const internal::VariableState> state_;
};

// A variable split along axis 0 into parts on (usually) different ps
// tasks, TF's ShardedVariable; also the type every variable creation
// returns (see the top of this file).
//
// Operations touch each part with the same op as TF and send at most one
// request per task, all tasks in parallel. Each part's update is atomic on
// its task; an operation over several parts is not atomic as a whole (a
// reader may see some parts updated and not others), and when one task
// fails the others may already have applied their share (as in TF).
//
// A default-constructed ShardedVariable is empty: valid() is false and
// every operation is FAILED_PRECONDITION.
// Thread-safety: immutable handle; all methods may run concurrently.
class ShardedVariable {
 public:
  ShardedVariable() = default;
  // A one-part view of `variable` (same name). Implicit, so that plain
  // variables go wherever a ShardedVariable is expected.
  ShardedVariable(const Variable& variable);  // NOLINT(google-explicit-constructor)

  // TF's ShardedVariable(variables, name): the parts in row order.
  // INVALID_ARGUMENT, with TF's wording, unless `parts` is a non-empty list
  // of valid variables with the same dtype and the same shape except for
  // the first axis (and, with more than one part, rank >= 1).
  [[nodiscard]] static absl::StatusOr<ShardedVariable> create(std::vector<Variable> parts,
                                                              std::string name = "ShardedVariable");
  // Rebuilds the variable a handle describes; the lookup gives each part's
  // client.
  [[nodiscard]] static absl::StatusOr<ShardedVariable> from_handle(
      const VariableHandle& handle, const VariableClientLookup& lookup,
      absl::Duration timeout = kDefaultVariableTimeout);

  [[nodiscard]] bool valid() const { return state_ != nullptr; }
  // The name given at creation ("w"; the parts are "w/part_0", ...).
  [[nodiscard]] const std::string& name() const;
  [[nodiscard]] DType dtype() const;
  // The full shape: the parts' shapes with their first dimensions summed.
  [[nodiscard]] const Shape& shape() const;
  // TF's `.variables`: the parts, in row order.
  [[nodiscard]] const std::vector<Variable>& variables() const;
  [[nodiscard]] size_t num_parts() const { return variables().size(); }
  // Row offset of each part, plus the row count at the end (num_parts + 1
  // entries): part i holds rows [offsets()[i], offsets()[i + 1]).
  [[nodiscard]] const std::vector<int64_t>& offsets() const;
  [[nodiscard]] VariableHandle handle() const;
  // As created (VariableOptions); a ShardedVariable built with create()
  // takes its first part's.
  [[nodiscard]] VariableAggregation aggregation() const;
  [[nodiscard]] VariableSynchronization synchronization() const;
  [[nodiscard]] bool trainable() const;

  // TF's tf.convert_to_tensor(sv): the parts concatenated along axis 0, read
  // with one request per task, in parallel. Expensive for large variables;
  // prefer sparse_read / embedding_lookup / get_item. Inside
  // cache_variable_reads(), each part's value first read in that scope.
  [[nodiscard]] absl::StatusOr<Tensor> read_value() const;
  // TF's sv[index] (ShardedVariable.__getitem__): the same result as
  // get_item(read_value(), index) (tensor_index.h), but only the rows the
  // index selects on axis 0 are read: one gather per task that holds some,
  // in parallel, in the order the index takes them (reversed for a
  // negative step). A bool mask reads the whole variable (as TF). An
  // integer out of range on axis 0 is INVALID_ARGUMENT with TF's
  // "ShardedVariable: slice index 12 of dimension 0 out of bounds.".
  // Nothing is cached. Assigning to a slice is not supported (as in TF).
  [[nodiscard]] absl::StatusOr<Tensor> get_item(const std::vector<TensorIndex>& index) const;
  // `value` has the full shape; part i receives its rows. Inside a replica
  // function with several replicas, assign / assign_add / assign_sub follow
  // the variable's aggregation (variable_policy.h), once for the whole
  // variable.
  [[nodiscard]] absl::Status assign(const Tensor& value) const;
  [[nodiscard]] absl::Status assign_add(const Tensor& delta) const;
  [[nodiscard]] absl::Status assign_sub(const Tensor& delta) const;
  // As Variable::sparse_read; the same as embedding_lookup(*this, indices).
  [[nodiscard]] absl::StatusOr<Tensor> sparse_read(const Tensor& indices) const;
  // As Variable's scatter ops, on the full row space: each index is routed
  // to the part that holds its row (TF's "div" formula when the parts have
  // TF's div layout); indices must be 1-D. Results equal the same op on an
  // unsharded variable.
  [[nodiscard]] absl::Status scatter_update(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_add(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_sub(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_mul(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_div(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_min(const IndexedSlices& sparse_delta) const;
  [[nodiscard]] absl::Status scatter_max(const IndexedSlices& sparse_delta) const;

 private:
  friend struct internal::VariableAccess;
  explicit ShardedVariable(std::shared_ptr<const internal::ShardedState> state)
      : state_(std::move(state)) {}

  std::shared_ptr<const internal::ShardedState> state_;
};

// TF's tf.nn.embedding_lookup(params, ids): rows `ids` (int32/int64, any
// shape) of `params`, shaped ids.shape + params.shape[1:], in the order of
// `ids`. One gather per part that owns requested rows, one request per
// task, all in parallel; the full variable is never materialised. With
// parts [[1,2],[3,4]], [[5,6],[7,8]], [[9,10]], ids [0,3,4] give
// [[1,2],[7,8],[9,10]]. INVALID_ARGUMENT names an id out of range.
[[nodiscard]] absl::StatusOr<Tensor> embedding_lookup(const ShardedVariable& params,
                                                      const Tensor& ids);

// Reads many variables at once, as a worker step does at its start: the
// reads of all parts on one task go in one request, and the requests to
// all tasks run in parallel. results[i] is variables[i].read_value().
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> read_values(
    absl::Span<const ShardedVariable> variables);

}  // namespace psflow

#endif  // PSFLOW_VARIABLE_H_
