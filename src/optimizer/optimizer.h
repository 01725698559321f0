// Server-side optimizers: the ps applies workers' gradients to its shards.
#ifndef PSFLOW_OPTIMIZER_OPTIMIZER_H_
#define PSFLOW_OPTIMIZER_OPTIMIZER_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "optimizer/optimizer_kernels.h"
#include "psflow/optimizer_config.h"  // OptimizerConfig (public: psflow::Optimizer wraps it)
#include "psflow/tensor.h"

namespace psflow::internal {

// One hyper-parameter of OptimizerConfig (every member but `kind`) and its
// names: the one list that each format of a config walks (the checkpoint
// index's JSON, the ps wire's OptimizerProto, a closure's Structure), so
// that a new hyper-parameter is added here once.
// Thread-safety: a constant.
struct OptimizerField {
  // The name in the checkpoint index and on the wire: the member's own.
  std::string_view name;
  // The name in a closure's Structure: the same, except FTRL's "l1" and
  // "l2", which running workers and existing runs send.
  std::string_view structure_name;
  // Exactly one is set.
  double OptimizerConfig::*number = nullptr;
  bool OptimizerConfig::*flag = nullptr;
};

// In OptimizerConfig's order; `kind` travels as optimizer_name() under
// kOptimizerKindField in every format.
inline constexpr std::string_view kOptimizerKindField = "kind";
inline constexpr OptimizerField kOptimizerFields[] = {
    {"momentum", "momentum", &OptimizerConfig::momentum},
    {"nesterov", "nesterov", nullptr, &OptimizerConfig::nesterov},
    {"initial_accumulator_value", "initial_accumulator_value",
     &OptimizerConfig::initial_accumulator_value},
    {"epsilon", "epsilon", &OptimizerConfig::epsilon},
    {"beta_1", "beta_1", &OptimizerConfig::beta_1},
    {"beta_2", "beta_2", &OptimizerConfig::beta_2},
    {"learning_rate_power", "learning_rate_power", &OptimizerConfig::learning_rate_power},
    {"l1_regularization_strength", "l1", &OptimizerConfig::l1_regularization_strength},
    {"l2_regularization_strength", "l2", &OptimizerConfig::l2_regularization_strength},
    {"beta", "beta", &OptimizerConfig::beta},
};

// "sgd", "momentum", "adagrad", "adam", "ftrl".
[[nodiscard]] std::string_view optimizer_name(OptimizerConfig::Kind kind);
[[nodiscard]] absl::StatusOr<OptimizerConfig::Kind> optimizer_kind_from_name(std::string_view name);
// INVALID_ARGUMENT naming the bad hyper-parameter (negative momentum,
// beta outside [0, 1), learning_rate_power > 0, ...).
[[nodiscard]] absl::Status validate_optimizer(const OptimizerConfig& config);

// Slot variables of one variable shard, by slot name ("accumulator", "m",
// "v", "linear", "momentum"), plus the shard's own step count used by Adam's
// bias correction. They live beside the shard, on the same ps.
struct OptimizerSlots {
  // optimizer_name() of the optimizer that created the slots; empty before
  // the first apply.
  std::string optimizer;
  std::map<std::string, Tensor, std::less<>> slots;
  int64_t steps = 0;
};

// The slots an optimizer keeps beside each variable, in a fixed order:
// none (sgd), "momentum", "accumulator" (adagrad), "m" and "v" (adam),
// "accumulator" and "linear" (ftrl).
[[nodiscard]] std::vector<std::string_view> optimizer_slot_names(OptimizerConfig::Kind kind);
// The value a fresh slot starts with: initial_accumulator_value for
// "accumulator", 0 otherwise.
[[nodiscard]] double optimizer_slot_initial_value(const OptimizerConfig& config,
                                                  std::string_view slot);

// Checks optimizer state that arrives from outside (a checkpoint restore)
// for a variable of `dtype` and `shape`: an empty name with no slots and 0
// steps, or a known optimizer name (optimizer_name) with exactly its slot
// names, each slot of the variable's dtype and shape, steps >= 0, and a
// float32/float64 variable. INVALID_ARGUMENT names `variable` and the
// offending slot or value.
[[nodiscard]] absl::Status validate_optimizer_slots(const OptimizerSlots& slots, DType dtype,
                                                    const Shape& shape, std::string_view variable);

// One apply's constants for the kernels of optimizer_kernels.h: `step` is
// the 1-based count of applies including this one (Adam's bias
// correction). Defined for float and double.
template <typename T>
[[nodiscard]] UpdateCoefficients<T> update_coefficients(const OptimizerConfig& config,
                                                        double learning_rate, int64_t step);

// Checks a dense gradient against a variable's dtype and shape, the
// learning rate and the hyper-parameters, without touching anything.
[[nodiscard]] absl::Status validate_dense_gradient(const OptimizerConfig& config,
                                                   double learning_rate, DType var_dtype,
                                                   const Shape& var_shape, const Tensor& grad);
// The same for a row-sparse gradient; returns the ids widened to int64.
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> validate_sparse_gradient(
    const OptimizerConfig& config, double learning_rate, DType var_dtype, const Shape& var_shape,
    const Tensor& ids, const Tensor& rows);
// FAILED_PRECONDITION when `slots` were made by another optimizer.
[[nodiscard]] absl::Status check_slots_compatible(const OptimizerConfig& config,
                                                  const OptimizerSlots& slots);

// Applies a dense gradient (same shape as `var`) in place. Creates the slots
// on first use. FAILED_PRECONDITION when existing slots belong to another
// optimizer. `var` must be float32 or float64 (INVALID_ARGUMENT otherwise).
// Nothing changes unless the status is OK.
[[nodiscard]] absl::Status apply_dense_gradient(const OptimizerConfig& config, double learning_rate,
                                                Tensor& var, OptimizerSlots& slots,
                                                const Tensor& grad);

// A row-sparse gradient checked against a variable's dtype and shape, its
// ids widened and checked, and duplicate ids summed: everything of a sparse
// apply that does not touch the variable, so that a caller holding the
// variable's lock only for apply_sparse_gradient(prepared, ...) keeps
// concurrent updates of the same variable waiting less. Shares the
// caller's `rows` buffer (do not write to it while this lives).
// Thread-safety: immutable once made.
class PreparedSparseGradient {
 public:
  // The distinct row ids, in order of first appearance.
  [[nodiscard]] const std::vector<int64_t>& ids() const { return ids_; }

 private:
  friend absl::StatusOr<PreparedSparseGradient> prepare_sparse_gradient(const OptimizerConfig&,
                                                                        double, DType, const Shape&,
                                                                        const Tensor&,
                                                                        const Tensor&);
  friend absl::Status apply_sparse_gradient(const PreparedSparseGradient&, Tensor&,
                                            OptimizerSlots&);

  OptimizerConfig config_;
  double learning_rate_ = 0;
  DType dtype_ = DType::kFloat32;
  Shape shape_;
  std::vector<int64_t> ids_;
  // grads_[u] is the gradient row of ids_[u]: inside rows_, or inside
  // summed_ for an id that occurred more than once.
  std::vector<const void*> grads_;
  Tensor rows_;
  std::shared_ptr<const void> summed_;  // the summed rows (a std::vector of T)
};

[[nodiscard]] absl::StatusOr<PreparedSparseGradient> prepare_sparse_gradient(
    const OptimizerConfig& config, double learning_rate, DType var_dtype, const Shape& var_shape,
    const Tensor& ids, const Tensor& rows);

// Applies a prepared gradient to `var` (of the dtype and shape it was
// prepared for: INVALID_ARGUMENT otherwise) and its slots. Creates the
// slots on first use; FAILED_PRECONDITION when they belong to another
// optimizer. Nothing changes unless the status is OK.
[[nodiscard]] absl::Status apply_sparse_gradient(const PreparedSparseGradient& gradient,
                                                 Tensor& var, OptimizerSlots& slots);

// Applies a row-sparse gradient: `rows[i]` is the gradient of row `ids[i]`.
// Duplicate ids are summed first. Only the touched rows of the variable and
// of its slots change (Adam therefore has lazy-Adam semantics: untouched
// rows keep their moments). Ids are validated before anything changes.
[[nodiscard]] absl::Status apply_sparse_gradient(const OptimizerConfig& config,
                                                 double learning_rate, Tensor& var,
                                                 OptimizerSlots& slots, const Tensor& ids,
                                                 const Tensor& rows);

}  // namespace psflow::internal

#endif  // PSFLOW_OPTIMIZER_OPTIMIZER_H_
