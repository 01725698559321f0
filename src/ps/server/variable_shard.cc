#include "ps/server/variable_shard.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/prefetch.h"
#include "base/strings.h"
#include "base/tsan_annotations.h"
#include "psflow/status_macros.h"
#include "tensor/tensor_internal.h"

namespace psflow::internal {
namespace {

int64_t row_elements(const Shape& shape) {
  int64_t n = 1;
  for (size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

bool is_numeric(DType d) { return d != DType::kString && d != DType::kInvalid; }

// Integer arithmetic wraps around (two's complement), as TensorFlow's
// integer kernels do on common hardware, instead of being undefined: it is
// done in the unsigned type. That includes the one division that traps the
// processor, the most negative value by -1, which a request could
// otherwise use to kill the ps.
template <typename T>
T wrapping(ScatterOp op, T a, T b) {
  using U = std::make_unsigned_t<T>;
  const U ua = static_cast<U>(a);
  const U ub = static_cast<U>(b);
  switch (op) {
    case ScatterOp::kAdd: return static_cast<T>(static_cast<U>(ua + ub));
    case ScatterOp::kSub: return static_cast<T>(static_cast<U>(ua - ub));
    case ScatterOp::kMul: return static_cast<T>(static_cast<U>(ua * ub));
    case ScatterOp::kDiv:
      if constexpr (std::is_signed_v<T>) {
        if (b == -1) return static_cast<T>(static_cast<U>(U{0} - ua));
      }
      return static_cast<T>(a / b);  // b != 0: validate_scatter checks it
    default: return b;
  }
}

template <typename T>
void arith_typed(bool add, Tensor& value, const Tensor& delta) {
  if constexpr (std::is_integral_v<T>) {
    T* v = value.mutable_flat<T>().data();
    const T* d = delta.flat<T>().data();
    const ScatterOp op = add ? ScatterOp::kAdd : ScatterOp::kSub;
    for (int64_t i = 0; i < value.num_elements(); ++i) v[i] = wrapping<T>(op, v[i], d[i]);
  } else {
    auto v = value.mutable_vec<T>();
    auto d = delta.vec<T>();
    if (add) {
      v += d;
    } else {
      v -= d;
    }
  }
}

template <typename T>
T combine(ScatterOp op, T a, T b) {
  switch (op) {
    case ScatterOp::kUpdate: return b;
    case ScatterOp::kMin: return std::min(a, b);
    case ScatterOp::kMax: return std::max(a, b);
    case ScatterOp::kAdd:
    case ScatterOp::kSub:
    case ScatterOp::kMul:
    case ScatterOp::kDiv:
      if constexpr (std::is_integral_v<T>) {
        return wrapping<T>(op, a, b);
      } else {
        if (op == ScatterOp::kAdd) return a + b;
        if (op == ScatterOp::kSub) return a - b;
        if (op == ScatterOp::kMul) return a * b;
        return a / b;
      }
  }
  return b;
}

template <typename T>
void scatter_typed(ScatterOp op, Tensor& value, const std::vector<int64_t>& ids,
                   const Tensor& updates, int64_t row) {
  T* v = value.mutable_flat<T>().data();
  const T* u = updates.flat<T>().data();
  for (size_t i = 0; i < ids.size(); ++i) {
    T* dst = v + ids[i] * row;
    const T* src = u + static_cast<int64_t>(i) * row;
    for (int64_t j = 0; j < row; ++j) dst[j] = combine<T>(op, dst[j], src[j]);
  }
}

template <typename T>
bool has_zero(const Tensor& t) {
  for (const T& x : t.flat<T>()) {
    if (x == T(0)) return true;
  }
  return false;
}

#define PSFLOW_DISPATCH_NUMERIC(dtype, FN, ...)               \
  switch (dtype) {                                            \
    case DType::kFloat32: FN<float>(__VA_ARGS__); break;      \
    case DType::kFloat64: FN<double>(__VA_ARGS__); break;     \
    case DType::kInt32: FN<int32_t>(__VA_ARGS__); break;      \
    case DType::kInt64: FN<int64_t>(__VA_ARGS__); break;      \
    case DType::kUInt8: FN<uint8_t>(__VA_ARGS__); break;      \
    case DType::kBool: FN<uint8_t>(__VA_ARGS__); break;       \
    default: PSFLOW_CHECK(false, "unsupported dtype"); break; \
  }

// True when `t` is the only tensor using its whole buffer, so that adopting
// it cannot alias anyone else's data nor pin a larger buffer. The acquire
// fence orders our later writes after the last release of another owner
// (shared_ptr::use_count is a relaxed load).
bool sole_owner_of_whole_buffer(const Tensor& t) {
  if (t.dtype() == DType::kString || t.buffer() == nullptr) return false;
  if (t.buffer().use_count() != 1) return false;
  std::atomic_thread_fence(std::memory_order_acquire);
  tsan_acquire_use_count(t.buffer());
  return t.raw_data() == t.buffer()->data() && t.byte_size() == t.buffer()->size();
}

void own_buffers(VariableShard::Snapshot& snapshot) {
  auto own = [](Tensor& t) {
    if (!sole_owner_of_whole_buffer(t)) t = t.clone();
  };
  own(snapshot.value);
  for (auto& [name, slot] : snapshot.slots.slots) own(slot);
}

}  // namespace

VariableShard::VariableShard(std::string name, Tensor value)
    : name_(std::move(name)),
      dtype_(value.dtype()),
      shape_(value.shape()),
      value_(std::move(value)) {}

VariableShard::VariableShard(std::string name, Snapshot snapshot)
    : name_(std::move(name)), dtype_(snapshot.value.dtype()), shape_(snapshot.value.shape()) {
  own_buffers(snapshot);
  value_ = std::move(snapshot.value);
  slots_ = std::move(snapshot.slots);
}

absl::Status VariableShard::check_same(const Tensor& t, std::string_view what) const {
  if (t.dtype() != dtype_ || t.shape() != shape_) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(what), " is ", av(dtype_name(t.dtype())), " ", shape_string(t.shape()),
                     " but variable '", name_, "' is ", av(dtype_name(dtype_)), " ",
                     shape_string(shape_), "; pass a value of the variable's dtype and shape"));
  }
  return absl::OkStatus();
}

Tensor VariableShard::read() const {
  absl::ReaderMutexLock lock(&mu_);
  return value_.clone();
}

Tensor VariableShard::read_shared() const {
  absl::ReaderMutexLock lock(&mu_);
  return value_;
}

void VariableShard::make_value_writable() {
  // Readers copy value_ only under the reader lock, which we exclude, so
  // the count cannot grow meanwhile; a count of 1 means no reader holds it.
  // Strings are never updated in place.
  if (value_.buffer() == nullptr) return;
  if (value_.buffer().use_count() > 1) {
    value_ = value_.clone();
  } else {
    std::atomic_thread_fence(std::memory_order_acquire);
    tsan_acquire_use_count(value_.buffer());
  }
}

absl::Status VariableShard::validate_assign(const Tensor& value) const {
  return check_same(value, "assigned value");
}

absl::Status VariableShard::validate_arith(const Tensor& delta) const {
  PSFLOW_RETURN_IF_ERROR(check_same(delta, "assign_add/assign_sub delta"));
  if (!is_numeric(dtype_) || dtype_ == DType::kBool) {
    return absl::InvalidArgumentError(
        absl::StrCat("assign_add/assign_sub need a numeric variable; '", name_, "' is ",
                     av(dtype_name(dtype_))));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> VariableShard::validate_gather(const Tensor& ids) const {
  if (shape_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot gather rows of scalar variable '", name_, "'; use read_value"));
  }
  return checked_row_ids(ids, shape_[0], name_);
}

absl::StatusOr<std::vector<int64_t>> VariableShard::validate_scatter(ScatterOp op,
                                                                     const Tensor& ids,
                                                                     const Tensor& updates) const {
  if (shape_.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot scatter into scalar variable '", name_, "'; use assign"));
  }
  if (!is_numeric(dtype_) || (dtype_ == DType::kBool && op != ScatterOp::kUpdate)) {
    return absl::InvalidArgumentError(absl::StrCat("scatter arithmetic needs a numeric variable; '",
                                                   name_, "' is ", av(dtype_name(dtype_))));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<int64_t> rows, checked_row_ids(ids, shape_[0], name_));
  Shape expected = shape_;
  expected[0] = static_cast<int64_t>(rows.size());
  if (updates.dtype() != dtype_ || updates.shape() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("scatter updates are ", av(dtype_name(updates.dtype())), " ",
                     shape_string(updates.shape()), " but ", rows.size(), " ids into '", name_,
                     "' need ", av(dtype_name(dtype_)), " ", shape_string(expected)));
  }
  if (op == ScatterOp::kDiv) {
    bool zero = false;
    if (dtype_ == DType::kInt32) zero = has_zero<int32_t>(updates);
    if (dtype_ == DType::kInt64) zero = has_zero<int64_t>(updates);
    if (dtype_ == DType::kUInt8) zero = has_zero<uint8_t>(updates);
    if (zero) {
      return absl::InvalidArgumentError(
          absl::StrCat("scatter_div into integer variable '", name_, "' has a zero divisor"));
    }
  }
  return rows;
}

absl::Status VariableShard::validate_apply_dense(const OptimizerConfig& config,
                                                 double learning_rate, const Tensor& grad) const {
  PSFLOW_RETURN_IF_ERROR(validate_dense_gradient(config, learning_rate, dtype_, shape_, grad));
  absl::ReaderMutexLock lock(&mu_);
  return check_slots_compatible(config, slots_);
}

absl::StatusOr<PreparedSparseGradient> VariableShard::prepare_apply_sparse(
    const OptimizerConfig& config, double learning_rate, const Tensor& ids,
    const Tensor& rows) const {
  // Needs only the immutable dtype and shape: no lock.
  PSFLOW_ASSIGN_OR_RETURN(
      PreparedSparseGradient gradient,
      prepare_sparse_gradient(config, learning_rate, dtype_, shape_, ids, rows));
  absl::ReaderMutexLock lock(&mu_);
  PSFLOW_RETURN_IF_ERROR(check_slots_compatible(config, slots_));
  return gradient;
}

absl::StatusOr<Tensor> VariableShard::gather(const Tensor& ids) const {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<int64_t> rows, validate_gather(ids));
  Shape out_shape = shape_;
  out_shape[0] = static_cast<int64_t>(rows.size());
  // A variable with a zero-size dimension may have huge others: the
  // result's shape is checked like any untrusted one.
  auto impossible = [&](const absl::Status& s) {
    return absl::InvalidArgumentError(
        absl::StrCat("gathering ", rows.size(), " rows of '", name_,
                     "' gives a shape no tensor can have: ", s.message()));
  };
  const int64_t row = row_elements(shape_);
  if (dtype_ == DType::kString) {
    absl::StatusOr<Tensor> checked = Tensor::create(dtype_, out_shape);
    if (!checked.ok()) return impossible(checked.status());
    Tensor out = *std::move(checked);
    absl::ReaderMutexLock lock(&mu_);
    for (size_t i = 0; i < rows.size(); ++i) {
      for (int64_t j = 0; j < row; ++j) {
        out.mutable_string_at(static_cast<int64_t>(i) * row + j) =
            value_.string_at(rows[i] * row + j);
      }
    }
    return out;
  }
  const size_t row_bytes = static_cast<size_t>(row) * dtype_size(dtype_);
  // Every byte is written below: skip the zero fill a new Tensor would do.
  absl::StatusOr<Tensor> out =
      Tensor::from_buffer(dtype_, std::move(out_shape),
                          internal::allocate_buffer(rows.size() * row_bytes, /*zero_fill=*/false));
  if (!out.ok()) return impossible(out.status());
  auto* dst = static_cast<uint8_t*>(out->mutable_raw_data());
  absl::ReaderMutexLock lock(&mu_);
  const auto* src = static_cast<const uint8_t*>(value_.raw_data());
  // Overlaps the memory latency of scattered rows (ps/prefetch.h).
  auto prefetch = [&](size_t i) {
    prefetch_row(src + static_cast<size_t>(rows[i]) * row_bytes, row_bytes, /*for_write=*/false);
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i + kPrefetchRows < rows.size()) prefetch(i + kPrefetchRows);
    std::memcpy(dst + i * row_bytes, src + static_cast<size_t>(rows[i]) * row_bytes, row_bytes);
  }
  return out;
}

absl::Status VariableShard::assign(Tensor value) {
  PSFLOW_RETURN_IF_ERROR(validate_assign(value));
  Tensor owned = sole_owner_of_whole_buffer(value) ? std::move(value) : value.clone();
  absl::MutexLock lock(&mu_);
  value_ = std::move(owned);
  return absl::OkStatus();
}

absl::Status VariableShard::arith(bool add, const Tensor& delta) {
  PSFLOW_RETURN_IF_ERROR(validate_arith(delta));
  absl::MutexLock lock(&mu_);
  make_value_writable();
  PSFLOW_DISPATCH_NUMERIC(dtype_, arith_typed, add, value_, delta);
  return absl::OkStatus();
}

absl::Status VariableShard::assign_add(const Tensor& delta) { return arith(true, delta); }
absl::Status VariableShard::assign_sub(const Tensor& delta) { return arith(false, delta); }

absl::Status VariableShard::scatter(ScatterOp op, const Tensor& ids, const Tensor& updates) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<int64_t> rows, validate_scatter(op, ids, updates));
  const int64_t row = row_elements(shape_);
  absl::MutexLock lock(&mu_);
  make_value_writable();
  PSFLOW_DISPATCH_NUMERIC(dtype_, scatter_typed, op, value_, rows, updates, row);
  return absl::OkStatus();
}

absl::Status VariableShard::apply_dense_gradient(const OptimizerConfig& config,
                                                 double learning_rate, const Tensor& grad) {
  absl::MutexLock lock(&mu_);
  make_value_writable();
  return psflow::internal::apply_dense_gradient(config, learning_rate, value_, slots_, grad);
}

absl::Status VariableShard::apply_sparse_gradient(const OptimizerConfig& config,
                                                  double learning_rate, const Tensor& ids,
                                                  const Tensor& rows) {
  // Checks, id widening and duplicate sums need only the immutable dtype and
  // shape: done before taking the lock, so that concurrent updates of this
  // shard wait only for each other's row arithmetic.
  PSFLOW_ASSIGN_OR_RETURN(
      PreparedSparseGradient gradient,
      prepare_sparse_gradient(config, learning_rate, dtype_, shape_, ids, rows));
  return apply_sparse_gradient(gradient);
}

absl::Status VariableShard::apply_sparse_gradient(const PreparedSparseGradient& gradient) {
  absl::MutexLock lock(&mu_);
  make_value_writable();
  return psflow::internal::apply_sparse_gradient(gradient, value_, slots_);
}

VariableShard::OptimizerInfo VariableShard::optimizer_info() const {
  absl::ReaderMutexLock lock(&mu_);
  return OptimizerInfo{slots_.optimizer, slots_.steps};
}

VariableShard::Snapshot VariableShard::snapshot() const {
  absl::ReaderMutexLock lock(&mu_);
  Snapshot s;
  s.value = value_.clone();
  s.slots.optimizer = slots_.optimizer;
  s.slots.steps = slots_.steps;
  for (const auto& [k, v] : slots_.slots) s.slots.slots.emplace(k, v.clone());
  return s;
}

absl::Status VariableShard::validate_restore(const Snapshot& snapshot) const {
  PSFLOW_RETURN_IF_ERROR(check_same(snapshot.value, "restored value"));
  return validate_optimizer_slots(snapshot.slots, dtype_, shape_, name_);
}

absl::Status VariableShard::restore(Snapshot snapshot) {
  PSFLOW_RETURN_IF_ERROR(validate_restore(snapshot));
  own_buffers(snapshot);
  absl::MutexLock lock(&mu_);
  value_ = std::move(snapshot.value);
  slots_ = std::move(snapshot.slots);
  return absl::OkStatus();
}

}  // namespace psflow::internal
