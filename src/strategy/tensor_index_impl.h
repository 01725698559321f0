// get_item in two steps, so that ShardedVariable can fetch only the rows
// an index selects and index the rest locally: resolve the index against a
// shape, then take the elements.
#ifndef PSFLOW_STRATEGY_TENSOR_INDEX_IMPL_H_
#define PSFLOW_STRATEGY_TENSOR_INDEX_IMPL_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"
#include "psflow/tensor_index.h"

namespace psflow::internal {

// One dimension of the result, or an integer that removes one.
struct ResolvedAxis {
  enum class Kind { kInteger, kRange, kNewAxis };
  Kind kind = Kind::kRange;
  int input_axis = -1;           // -1 for kNewAxis
  std::vector<int64_t> indices;  // the input positions taken, in order (one for kInteger)
};

// Every element of an index (the ellipsis and the unindexed trailing
// dimensions expanded into full ranges), in order.
// Thread-safety: a value type.
struct ResolvedIndex {
  std::vector<ResolvedAxis> axes;
  [[nodiscard]] Shape result_shape() const;
};

// `shape` indexed by `index` (no bool mask: see get_item). Errors are
// INVALID_ARGUMENT with TF's messages, prefixed by `who` ("" or
// "ShardedVariable: ").
[[nodiscard]] absl::StatusOr<ResolvedIndex> resolve_index(const Shape& shape,
                                                          const std::vector<TensorIndex>& index,
                                                          std::string_view who);

// The elements of `x` that `r` (resolved against x's shape) selects.
[[nodiscard]] Tensor take_elements(const Tensor& x, const ResolvedIndex& r);

// TF's boolean_mask(x, mask) (see get_item).
[[nodiscard]] absl::StatusOr<Tensor> boolean_mask(const Tensor& x, const Tensor& mask);

// Python's slice.indices(n) expanded: the positions slice `s` takes from a
// dimension of size n. INVALID_ARGUMENT for step 0.
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> slice_positions(const Slice& s, int64_t n);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_TENSOR_INDEX_IMPL_H_
