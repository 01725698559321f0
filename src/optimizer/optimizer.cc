#include "optimizer/optimizer.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "optimizer/optimizer_kernels.h"
#include "optimizer/row_ids.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;

absl::Status check_float(DType dtype) {
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizers update float32 or float64 variables, not ", av(dtype_name(dtype)),
                     "; create the variable with a float dtype to train it"));
  }
  return absl::OkStatus();
}

// Creates missing slots (or checks that existing ones are this optimizer's)
// and returns pointers to slot 0 and 1 data.
absl::Status check_learning_rate(const OptimizerConfig& c, double learning_rate) {
  if (!(learning_rate >= 0) || !std::isfinite(learning_rate)) {
    return absl::InvalidArgumentError(
        absl::StrCat("learning rate ", learning_rate, " is invalid; it must be finite and >= 0"));
  }
  if (c.kind == Kind::kFtrl && learning_rate == 0) {
    return absl::InvalidArgumentError(
        "learning rate 0 is invalid for ftrl, whose update divides by it; use a rate > 0");
  }
  return absl::OkStatus();
}

absl::Status prepare_slots(const OptimizerConfig& c, const Tensor& var, OptimizerSlots& slots) {
  PSFLOW_RETURN_IF_ERROR(check_slots_compatible(c, slots));
  const std::string_view name = optimizer_name(c.kind);
  if (slots.optimizer.empty()) {
    for (std::string_view slot : optimizer_slot_names(c.kind)) {
      Tensor t(var.dtype(), var.shape());
      const double init = optimizer_slot_initial_value(c, slot);
      if (init != 0.0) {
        if (var.dtype() == DType::kFloat32) {
          t.mutable_vec<float>().setConstant(static_cast<float>(init));
        } else {
          t.mutable_vec<double>().setConstant(init);
        }
      }
      slots.slots.insert_or_assign(std::string(slot), std::move(t));
    }
    slots.optimizer = std::string(name);
  }
  return absl::OkStatus();
}

template <typename T>
T* slot_data(OptimizerSlots& slots, const OptimizerConfig& c, size_t i) {
  const auto names = optimizer_slot_names(c.kind);
  if (i >= names.size()) return nullptr;
  return slots.slots.find(names[i])->second.template mutable_flat<T>().data();
}

template <typename T>
void apply_dense_typed(const OptimizerConfig& c, double lr, int64_t step, Tensor& var,
                       OptimizerSlots& slots, const Tensor& grad) {
  internal::update_dense<T>(update_coefficients<T>(c, lr, step), var.mutable_flat<T>().data(),
                            slot_data<T>(slots, c, 0), slot_data<T>(slots, c, 1),
                            grad.flat<T>().data(), var.num_elements());
}

// The distinct ids of a row-sparse gradient, each with its gradient row:
// the caller's own row when the id occurs once, else the sum of its rows
// in the order given (TF's sparse applies sum duplicates first). Distinct
// ids are found with an open-addressing table sized for the batch, so the
// cost is a few nanoseconds per id and a handful of allocations per apply,
// none per row; only duplicated ids' rows are copied.
template <typename T>
void sum_duplicate_rows(const std::vector<int64_t>& ids, const T* rows, int64_t row_size,
                        std::vector<int64_t>* unique_ids, std::vector<const void*>* grads,
                        std::shared_ptr<const void>* summed_out) {
  constexpr uint32_t kEmpty = UINT32_MAX;
  const size_t n = ids.size();
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  const int shift = 64 - std::countr_zero(capacity);
  const size_t mask = capacity - 1;
  std::vector<uint32_t> table(capacity, kEmpty);
  // source[u] >= 0 is the index of the caller's row; ~source[u] (< 0) the
  // index of the summed row.
  std::vector<int64_t> source;
  std::vector<T> summed;
  unique_ids->reserve(n);
  source.reserve(n);
  auto add_duplicate = [&](uint32_t u, size_t i) {
    if (source[u] >= 0) {
      const T* first = rows + source[u] * row_size;
      source[u] = ~static_cast<int64_t>(summed.size() / static_cast<size_t>(row_size));
      summed.insert(summed.end(), first, first + row_size);
    }
    T* acc = summed.data() + (~source[u]) * row_size;
    const T* in = rows + static_cast<int64_t>(i) * row_size;
    for (int64_t j = 0; j < row_size; ++j) acc[j] += in[j];
  };
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    // Fibonacci hashing: the top bits of id * 2^64/phi.
    size_t slot = static_cast<size_t>((static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ull) >> shift);
    for (;; slot = (slot + 1) & mask) {
      const uint32_t u = table[slot];
      if (u == kEmpty) {
        table[slot] = static_cast<uint32_t>(unique_ids->size());
        unique_ids->push_back(id);
        source.push_back(static_cast<int64_t>(i));
        break;
      }
      if ((*unique_ids)[u] == id) {
        add_duplicate(u, i);
        break;
      }
    }
  }
  // Moving the vector keeps its elements where they are, so the pointers
  // below stay valid in the owner.
  auto owned = std::make_shared<const std::vector<T>>(std::move(summed));
  const T* summed_data = owned->data();
  *summed_out = std::move(owned);
  grads->resize(unique_ids->size());
  for (size_t u = 0; u < unique_ids->size(); ++u) {
    const int64_t s = source[u];
    (*grads)[u] = s >= 0 ? rows + s * row_size : summed_data + (~s) * row_size;
  }
}

template <typename T>
void apply_prepared_typed(const OptimizerConfig& c, double lr, int64_t step, Tensor& var,
                          OptimizerSlots& slots, const std::vector<int64_t>& ids,
                          const std::vector<const void*>& grads) {
  const int64_t row_size = var.dim(0) == 0 ? 0 : var.num_elements() / var.dim(0);
  if (row_size == 0 || ids.empty()) return;
  internal::update_rows<T>(update_coefficients<T>(c, lr, step), var.mutable_flat<T>().data(),
                           slot_data<T>(slots, c, 0), slot_data<T>(slots, c, 1), row_size,
                           ids.data(), grads.data(), ids.size());
}

}  // namespace

// One apply's constants in the variable's type, computed once so that the
// kernels' per-element work is pure arithmetic.
template <typename T>
UpdateCoefficients<T> update_coefficients(const OptimizerConfig& c, double lr, int64_t step) {
  UpdateCoefficients<T> k;
  k.kind = c.kind;
  k.lr = static_cast<T>(lr);
  k.momentum = static_cast<T>(c.momentum);
  k.nesterov = c.nesterov;
  k.epsilon = static_cast<T>(c.epsilon);
  k.one_minus_beta_1 = T(1) - static_cast<T>(c.beta_1);
  k.one_minus_beta_2 = T(1) - static_cast<T>(c.beta_2);
  if (c.kind == Kind::kAdam) {
    const double t = static_cast<double>(step);
    k.adam_lr =
        static_cast<T>(lr * std::sqrt(1.0 - std::pow(c.beta_2, t)) / (1.0 - std::pow(c.beta_1, t)));
  }
  k.l1 = static_cast<T>(c.l1_regularization_strength);
  k.l2 = static_cast<T>(c.l2_regularization_strength);
  k.beta = static_cast<T>(c.beta);
  k.power = static_cast<T>(-c.learning_rate_power);
  k.square_root = c.learning_rate_power == -0.5;
  return k;
}

template UpdateCoefficients<float> update_coefficients<float>(const OptimizerConfig&, double,
                                                              int64_t);
template UpdateCoefficients<double> update_coefficients<double>(const OptimizerConfig&, double,
                                                                int64_t);

std::vector<std::string_view> optimizer_slot_names(Kind kind) {
  switch (kind) {
    case Kind::kSgd: return {};
    case Kind::kMomentum: return {"momentum"};
    case Kind::kAdagrad: return {"accumulator"};
    case Kind::kAdam: return {"m", "v"};
    case Kind::kFtrl: return {"accumulator", "linear"};
  }
  return {};
}

double optimizer_slot_initial_value(const OptimizerConfig& c, std::string_view slot) {
  return slot == "accumulator" ? c.initial_accumulator_value : 0.0;
}

absl::Status validate_optimizer_slots(const OptimizerSlots& slots, DType dtype, const Shape& shape,
                                      std::string_view variable) {
  // The count goes up by one per update: at the maximum it could not.
  if (slots.steps < 0 || slots.steps == std::numeric_limits<int64_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "optimizer step count ", slots.steps, " for variable '", av(variable),
        "' is out of range; it counts the updates applied and must be in [0, 2^63 - 1)"));
  }
  if (slots.optimizer.empty()) {
    if (!slots.slots.empty() || slots.steps != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", av(variable), "' has ", slots.slots.size(), " slot(s) and ", slots.steps,
          " step(s) but no optimizer name; name the optimizer that made them, or send no "
          "slots and 0 steps"));
    }
    return absl::OkStatus();
  }
  absl::StatusOr<Kind> kind = optimizer_kind_from_name(slots.optimizer);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", av(variable), "': ", kind.status().message()));
  }
  if (absl::Status s = check_float(dtype); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("variable '", av(variable), "' carries ",
                                                   slots.optimizer,
                                                   " optimizer state: ", s.message()));
  }
  const std::vector<std::string_view> expected = optimizer_slot_names(*kind);
  std::string expected_list;
  for (std::string_view n : expected) {
    absl::StrAppend(&expected_list, expected_list.empty() ? "" : ", ", "'", av(n), "'");
  }
  if (expected_list.empty()) expected_list = "none";
  for (const auto& [name, tensor] : slots.slots) {
    if (std::find(expected.begin(), expected.end(), name) == expected.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("slot '", name, "' of variable '", av(variable), "' is not a slot of the ",
                       slots.optimizer, " optimizer (its slots: ", expected_list, ")"));
    }
    if (tensor.dtype() != dtype || tensor.shape() != shape) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slot '", name, "' of variable '", av(variable), "' is ",
          tensor.valid()
              ? absl::StrCat(av(dtype_name(tensor.dtype())), " ", shape_string(tensor.shape()))
              : std::string("an invalid tensor"),
          " but the variable is ", av(dtype_name(dtype)), " ", shape_string(shape),
          "; a slot has its variable's dtype and shape"));
    }
  }
  for (std::string_view n : expected) {
    if (slots.slots.find(n) == slots.slots.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("slot '", av(n), "' of variable '", av(variable), "' is missing; the ",
                       slots.optimizer, " optimizer keeps ", expected_list));
    }
  }
  return absl::OkStatus();
}

std::string_view optimizer_name(Kind kind) {
  switch (kind) {
    case Kind::kSgd: return "sgd";
    case Kind::kMomentum: return "momentum";
    case Kind::kAdagrad: return "adagrad";
    case Kind::kAdam: return "adam";
    case Kind::kFtrl: return "ftrl";
  }
  return "unknown";
}

absl::StatusOr<Kind> optimizer_kind_from_name(std::string_view name) {
  for (Kind k : {Kind::kSgd, Kind::kMomentum, Kind::kAdagrad, Kind::kAdam, Kind::kFtrl}) {
    if (optimizer_name(k) == name) return k;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer '", av(name), "'; choose one of sgd, momentum, adagrad, adam, ftrl"));
}

absl::Status validate_optimizer(const OptimizerConfig& c) {
  auto bad = [](std::string_view what, double value, std::string_view rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("optimizer ", av(what), " = ", value, " is invalid: it must be ", av(rule)));
  };
  // Written so that NaN fails every test (a NaN compares false).
  auto at_least = [](double v, double lo) { return std::isfinite(v) && v >= lo; };
  if (!at_least(c.momentum, 0)) return bad("momentum", c.momentum, "finite and >= 0");
  if (!at_least(c.initial_accumulator_value, 0)) {
    return bad("initial_accumulator_value", c.initial_accumulator_value, "finite and >= 0");
  }
  if (!at_least(c.epsilon, 0)) return bad("epsilon", c.epsilon, "finite and >= 0");
  if (!(c.beta_1 >= 0 && c.beta_1 < 1)) return bad("beta_1", c.beta_1, "in [0, 1)");
  if (!(c.beta_2 >= 0 && c.beta_2 < 1)) return bad("beta_2", c.beta_2, "in [0, 1)");
  if (!(std::isfinite(c.learning_rate_power) && c.learning_rate_power <= 0)) {
    return bad("learning_rate_power", c.learning_rate_power, "finite and <= 0");
  }
  if (!at_least(c.l1_regularization_strength, 0)) {
    return bad("l1_regularization_strength", c.l1_regularization_strength, "finite and >= 0");
  }
  if (!at_least(c.l2_regularization_strength, 0)) {
    return bad("l2_regularization_strength", c.l2_regularization_strength, "finite and >= 0");
  }
  if (!at_least(c.beta, 0)) return bad("beta", c.beta, "finite and >= 0");
  if (c.kind == Kind::kFtrl && c.initial_accumulator_value <= 0 && c.learning_rate_power != 0) {
    return bad("initial_accumulator_value", c.initial_accumulator_value,
               "> 0 for ftrl (its update divides by a power of the accumulator)");
  }
  return absl::OkStatus();
}

absl::Status check_slots_compatible(const OptimizerConfig& config, const OptimizerSlots& slots) {
  const std::string_view name = optimizer_name(config.kind);
  if (!slots.optimizer.empty() && slots.optimizer != name) {
    return absl::FailedPreconditionError(
        absl::StrCat("this variable's slots were created by the ", slots.optimizer,
                     " optimizer, but a ", av(name),
                     " update arrived; use one optimizer per variable (or restore a "
                     "checkpoint made with ",
                     av(name), ")"));
  }
  return absl::OkStatus();
}

absl::Status validate_dense_gradient(const OptimizerConfig& config, double learning_rate,
                                     DType var_dtype, const Shape& var_shape, const Tensor& grad) {
  PSFLOW_RETURN_IF_ERROR(check_float(var_dtype));
  if (grad.dtype() != var_dtype || grad.shape() != var_shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradient is ", av(dtype_name(grad.dtype())), " ", shape_string(grad.shape()),
                     " but the variable is ", av(dtype_name(var_dtype)), " ",
                     shape_string(var_shape), "; a dense gradient must match the variable"));
  }
  PSFLOW_RETURN_IF_ERROR(check_learning_rate(config, learning_rate));
  return validate_optimizer(config);
}

absl::StatusOr<std::vector<int64_t>> validate_sparse_gradient(const OptimizerConfig& config,
                                                              double learning_rate, DType var_dtype,
                                                              const Shape& var_shape,
                                                              const Tensor& ids,
                                                              const Tensor& rows) {
  PSFLOW_RETURN_IF_ERROR(check_float(var_dtype));
  if (var_shape.empty()) {
    return absl::InvalidArgumentError(
        "a sparse gradient needs a variable of rank >= 1 (rows along axis 0)");
  }
  if (ids.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse gradient ids must be a 1-D int32 or int64 tensor, got ",
                     av(dtype_name(ids.dtype())), " ", shape_string(ids.shape())));
  }
  Shape expected = var_shape;
  expected[0] = ids.dim(0);
  if (rows.dtype() != var_dtype || rows.shape() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse gradient rows are ", av(dtype_name(rows.dtype())), " ",
                     shape_string(rows.shape()), " but ", ids.dim(0), " ids into a ",
                     av(dtype_name(var_dtype)), " ", shape_string(var_shape), " variable need ",
                     av(dtype_name(var_dtype)), " ", shape_string(expected)));
  }
  PSFLOW_RETURN_IF_ERROR(check_learning_rate(config, learning_rate));
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(config));
  return checked_row_ids(ids, var_shape[0], "sparse gradient target");
}

absl::Status apply_dense_gradient(const OptimizerConfig& config, double learning_rate, Tensor& var,
                                  OptimizerSlots& slots, const Tensor& grad) {
  PSFLOW_RETURN_IF_ERROR(
      validate_dense_gradient(config, learning_rate, var.dtype(), var.shape(), grad));
  PSFLOW_RETURN_IF_ERROR(prepare_slots(config, var, slots));
  if (var.dtype() == DType::kFloat32) {
    apply_dense_typed<float>(config, learning_rate, slots.steps + 1, var, slots, grad);
  } else {
    apply_dense_typed<double>(config, learning_rate, slots.steps + 1, var, slots, grad);
  }
  ++slots.steps;
  return absl::OkStatus();
}

absl::StatusOr<PreparedSparseGradient> prepare_sparse_gradient(
    const OptimizerConfig& config, double learning_rate, DType var_dtype, const Shape& var_shape,
    const Tensor& ids, const Tensor& rows) {
  PSFLOW_ASSIGN_OR_RETURN(
      std::vector<int64_t> checked,
      validate_sparse_gradient(config, learning_rate, var_dtype, var_shape, ids, rows));
  PreparedSparseGradient g;
  g.config_ = config;
  g.learning_rate_ = learning_rate;
  g.dtype_ = var_dtype;
  g.shape_ = var_shape;
  g.rows_ = rows;
  int64_t row_size = 1;
  for (size_t i = 1; i < var_shape.size(); ++i) row_size *= var_shape[i];
  if (row_size == 0 || checked.empty()) return g;
  if (var_dtype == DType::kFloat32) {
    sum_duplicate_rows<float>(checked, rows.flat<float>().data(), row_size, &g.ids_, &g.grads_,
                              &g.summed_);
  } else {
    sum_duplicate_rows<double>(checked, rows.flat<double>().data(), row_size, &g.ids_, &g.grads_,
                               &g.summed_);
  }
  return g;
}

absl::Status apply_sparse_gradient(const PreparedSparseGradient& g, Tensor& var,
                                   OptimizerSlots& slots) {
  if (var.dtype() != g.dtype_ || var.shape() != g.shape_) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sparse gradient prepared for a ", av(dtype_name(g.dtype_)), " ",
                     shape_string(g.shape_), " variable cannot update a ",
                     av(dtype_name(var.dtype())), " ", shape_string(var.shape()), " one"));
  }
  PSFLOW_RETURN_IF_ERROR(prepare_slots(g.config_, var, slots));
  if (var.dtype() == DType::kFloat32) {
    apply_prepared_typed<float>(g.config_, g.learning_rate_, slots.steps + 1, var, slots, g.ids_,
                                g.grads_);
  } else {
    apply_prepared_typed<double>(g.config_, g.learning_rate_, slots.steps + 1, var, slots, g.ids_,
                                 g.grads_);
  }
  ++slots.steps;
  return absl::OkStatus();
}

absl::Status apply_sparse_gradient(const OptimizerConfig& config, double learning_rate, Tensor& var,
                                   OptimizerSlots& slots, const Tensor& ids, const Tensor& rows) {
  PSFLOW_ASSIGN_OR_RETURN(
      PreparedSparseGradient g,
      prepare_sparse_gradient(config, learning_rate, var.dtype(), var.shape(), ids, rows));
  return apply_sparse_gradient(g, var, slots);
}

}  // namespace psflow::internal
