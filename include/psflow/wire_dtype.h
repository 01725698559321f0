// The element type float32 values travel in between workers and ps tasks.
#ifndef PSFLOW_WIRE_DTYPE_H_
#define PSFLOW_WIRE_DTYPE_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow {

// How a float32 variable's pulled values and pushed gradients are encoded
// on the wire. The ps always keeps float32 master values and optimizer
// slots; kBFloat16 halves the bytes moved at the cost of rounding each
// transferred value to bfloat16 (8 significant bits, round to nearest
// even), and is ignored for variables of other dtypes.
enum class WireDType : uint8_t {
  kFloat32 = 0,
  kBFloat16 = 1,
};

// "float32", "bfloat16".
[[nodiscard]] std::string_view wire_dtype_name(WireDType dtype);
// Inverse of wire_dtype_name (also "bf16", "fp32"); INVALID_ARGUMENT names
// the unknown string and the valid ones.
[[nodiscard]] absl::StatusOr<WireDType> wire_dtype_from_name(std::string_view name);

}  // namespace psflow

#endif  // PSFLOW_WIRE_DTYPE_H_
