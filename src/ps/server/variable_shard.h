// One variable (or one shard of a partitioned variable) held by a ps task.
#ifndef PSFLOW_PS_SERVER_VARIABLE_SHARD_H_
#define PSFLOW_PS_SERVER_VARIABLE_SHARD_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "optimizer/optimizer.h"
#include "optimizer/row_ids.h"
#include "ps/request/shard_snapshot.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Element-wise combination used by the scatter family.
enum class ScatterOp { kUpdate, kAdd, kSub, kMul, kDiv, kMin, kMax };

// A variable's value, its optimizer slots and its lock. Every operation is
// atomic with respect to the others on the same shard (one mutex), and
// validates its input completely before changing anything: on error the
// stored value is untouched.
// Thread-safety: all methods are thread-safe.
class VariableShard {
 public:
  // `value` becomes the shard's own storage (the caller must not keep
  // writing through another copy of it).
  VariableShard(std::string name, Tensor value);

  // Value and optimizer state from a checkpoint, which the caller has
  // checked (VariableStore::validate_restore); the tensors are adopted when
  // nothing else shares their buffers, else copied.
  VariableShard(std::string name, ShardSnapshot snapshot);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] DType dtype() const { return dtype_; }
  [[nodiscard]] const Shape& shape() const { return shape_; }

  // A snapshot copy of the value.
  [[nodiscard]] Tensor read() const ABSL_LOCKS_EXCLUDED(mu_);
  // The value without a copy: the result shares the shard's buffer, which
  // the shard then never writes again (its next in-place update copies the
  // value first: copy-on-write), so the result is a stable snapshot as well.
  // Callers must not write through it.
  [[nodiscard]] Tensor read_shared() const ABSL_LOCKS_EXCLUDED(mu_);
  // Rows `ids` (1-D int32/int64, each in [0, rows)), in the order given.
  [[nodiscard]] absl::StatusOr<Tensor> gather(const Tensor& ids) const ABSL_LOCKS_EXCLUDED(mu_);

  // Adopts `value`'s buffer when nothing else shares it (a decoded request
  // tensor moved in), else stores a copy: the shard never aliases a tensor
  // someone else may write to.
  [[nodiscard]] absl::Status assign(Tensor value) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status assign_add(const Tensor& delta) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status assign_sub(const Tensor& delta) ABSL_LOCKS_EXCLUDED(mu_);
  // var[ids[i], ...] = op(var[ids[i], ...], updates[i, ...]); duplicates
  // apply in order (kAdd accumulates them).
  [[nodiscard]] absl::Status scatter(ScatterOp op, const Tensor& ids, const Tensor& updates)
      ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] absl::Status apply_dense_gradient(const OptimizerConfig& config,
                                                  double learning_rate, const Tensor& grad)
      ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] absl::Status apply_sparse_gradient(const OptimizerConfig& config,
                                                   double learning_rate, const Tensor& ids,
                                                   const Tensor& rows) ABSL_LOCKS_EXCLUDED(mu_);
  // The same with the gradient prepared by prepare_apply_sparse: the lock
  // is held for the row arithmetic only.
  [[nodiscard]] absl::Status apply_sparse_gradient(const PreparedSparseGradient& gradient)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Validators: check an operation against this shard's dtype and shape
  // (fixed at creation) without applying it, so that a batch can reject bad
  // input before any of its operations changes a value. The mutating
  // methods run the same checks.
  [[nodiscard]] absl::Status validate_assign(const Tensor& value) const;
  [[nodiscard]] absl::Status validate_arith(const Tensor& delta) const;
  [[nodiscard]] absl::StatusOr<std::vector<int64_t>> validate_gather(const Tensor& ids) const;
  [[nodiscard]] absl::StatusOr<std::vector<int64_t>> validate_scatter(ScatterOp op,
                                                                      const Tensor& ids,
                                                                      const Tensor& updates) const;
  [[nodiscard]] absl::Status validate_apply_dense(const OptimizerConfig& config,
                                                  double learning_rate, const Tensor& grad) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // Validates a sparse apply like the others and also does the part of it
  // that needs no lock (ids widened, duplicate rows summed), so that a
  // batch checks and sums each gradient once.
  [[nodiscard]] absl::StatusOr<PreparedSparseGradient> prepare_apply_sparse(
      const OptimizerConfig& config, double learning_rate, const Tensor& ids,
      const Tensor& rows) const ABSL_LOCKS_EXCLUDED(mu_);

  // Which optimizer made the slots ("" before the first apply) and how many
  // updates it applied.
  struct OptimizerInfo {
    std::string optimizer;
    int64_t steps = 0;
  };
  [[nodiscard]] OptimizerInfo optimizer_info() const ABSL_LOCKS_EXCLUDED(mu_);

  // Value, slots, optimizer name and step count under one lock, for
  // checkpoints. snapshot() returns copies of its own.
  using Snapshot = ShardSnapshot;
  [[nodiscard]] Snapshot snapshot() const ABSL_LOCKS_EXCLUDED(mu_);
  // Checks a snapshot against this shard: the value has the shard's dtype
  // and shape, and the slots pass validate_optimizer_slots.
  // INVALID_ARGUMENT names the variable and the offending value or slot.
  [[nodiscard]] absl::Status validate_restore(const Snapshot& snapshot) const;
  // Replaces value and slots at once (checkpoint restore), after
  // validate_restore; on error nothing changes. Tensors are adopted when
  // nothing else shares their buffers, else copied (as assign).
  [[nodiscard]] absl::Status restore(Snapshot snapshot) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  absl::Status check_same(const Tensor& t, std::string_view what) const;
  absl::Status arith(bool add, const Tensor& delta);
  // Copies value_ into a buffer of its own if a reader still shares it
  // (read_shared), so that in-place updates never change what readers hold.
  void make_value_writable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string name_;
  const DType dtype_;
  const Shape shape_;
  mutable absl::Mutex mu_;
  Tensor value_ ABSL_GUARDED_BY(mu_);
  OptimizerSlots slots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_VARIABLE_SHARD_H_
