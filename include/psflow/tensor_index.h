// Python / NumPy indexing of a tensor, as TF's Tensor.__getitem__ and
// ShardedVariable.__getitem__ do it: integers, ranges with steps, new
// axes, an ellipsis, or a boolean mask.
//
//   // x[1:, ::-1, psflow.newaxis, ...] in Python:
//   get_item(x, {Slice{1, std::nullopt}, Slice{{}, {}, -1}, newaxis, ellipsis});
//   get_item(x, {-1, 2});        // x[-1, 2]
//   get_item(x, {mask});         // x[mask], mask a bool tensor
#ifndef PSFLOW_TENSOR_INDEX_H_
#define PSFLOW_TENSOR_INDEX_H_

#include <cstdint>
#include <optional>
#include <type_traits>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"

namespace psflow {

// Python's slice(start, stop, step): unset bounds mean "from the start /
// to the end" in the step's direction; negative bounds count from the end;
// bounds past either end are clamped (never an error); step 0 is
// INVALID_ARGUMENT ("slice step cannot be zero").
// Thread-safety: a value type.
struct Slice {
  std::optional<int64_t> start = std::nullopt;
  std::optional<int64_t> stop = std::nullopt;
  std::optional<int64_t> step = std::nullopt;
};

// Python's `newaxis` (None): a new dimension of size 1 here.
struct NewAxis {};
inline constexpr NewAxis newaxis{};
// Python's `...`: as many full slices as the dimensions not indexed
// otherwise; at most one per index.
struct Ellipsis {};
inline constexpr Ellipsis ellipsis{};

// One element of an index: an integer (negative counts from the end; out
// of range is INVALID_ARGUMENT, TF's "slice index 5 of dimension 1 out of
// bounds."), a Slice, newaxis, ellipsis, or a bool tensor used as a mask
// (TF's boolean_mask; it must be the whole index, as in TF). Any other
// tensor is INVALID_ARGUMENT (TF: "using Tensor for indexing is not
// allowed"). `bool` does not convert (it would silently be 0 or 1).
// Thread-safety: a value type.
class TensorIndex {
 public:
  template <typename T,
            typename = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  TensorIndex(T i) : value_(static_cast<int64_t>(i)) {}  // NOLINT(google-explicit-constructor)
  TensorIndex(bool) = delete;
  TensorIndex(Slice s) : value_(s) {}                    // NOLINT(google-explicit-constructor)
  TensorIndex(NewAxis n) : value_(n) {}                  // NOLINT(google-explicit-constructor)
  TensorIndex(Ellipsis e) : value_(e) {}                 // NOLINT(google-explicit-constructor)
  TensorIndex(Tensor mask) : value_(std::move(mask)) {}  // NOLINT(google-explicit-constructor)

  using Value = std::variant<int64_t, Slice, NewAxis, Ellipsis, Tensor>;
  [[nodiscard]] const Value& value() const { return value_; }

 private:
  Value value_;
};

// x[index...] with NumPy's semantics (TF's Tensor.__getitem__): an integer
// removes its dimension, a slice keeps it (possibly empty, the other
// dimensions kept), newaxis inserts a dimension of 1, the ellipsis stands
// for the dimensions left; dimensions past the index are kept whole. More
// indexed dimensions than the rank is INVALID_ARGUMENT. A bool mask
// (the whole index) selects the elements where the mask is true: its shape
// must equal the leading dimensions of x, and the result is
// [count of true] + the remaining dimensions (TF's boolean_mask). The
// result is a new tensor; x may be of any dtype.
[[nodiscard]] absl::StatusOr<Tensor> get_item(const Tensor& x,
                                              const std::vector<TensorIndex>& index);

}  // namespace psflow

#endif  // PSFLOW_TENSOR_INDEX_H_
