// Internal helpers shared by the tensor implementation and the wire codec.
#ifndef PSFLOW_TENSOR_TENSOR_INTERNAL_H_
#define PSFLOW_TENSOR_TENSOR_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// A 64-byte aligned block; `zero_fill` false leaves the bytes uninitialised,
// for callers that overwrite every byte right away (clone, the codec), so
// that large tensors are not written twice.
[[nodiscard]] std::shared_ptr<TensorBuffer> allocate_buffer(size_t bytes, bool zero_fill);

// Element count of `shape` for `dtype` after checking everything a tensor
// needs: a valid dtype, no negative dimension, and neither the element count
// nor the byte size overflowing int64, even ignoring zero dimensions (so
// that strides and offsets computed from any sub-shape fit as well).
[[nodiscard]] absl::StatusOr<int64_t> validate_shape(DType dtype, const Shape& shape);

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_TENSOR_INTERNAL_H_
