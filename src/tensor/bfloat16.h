// bfloat16 conversions for the wire (internal): float32 values sent with
// their upper 16 bits, rounded to nearest even.
#ifndef PSFLOW_TENSOR_BFLOAT16_H_
#define PSFLOW_TENSOR_BFLOAT16_H_

#include <bit>
#include <cstddef>
#include <cstdint>

namespace psflow::internal {

// Round to nearest, ties to even. NaN stays NaN (quieted, sign kept: the
// rounding add must not carry a NaN's payload into infinity); values
// beyond bfloat16's largest finite round to infinity, as Eigen and TF do.
[[nodiscard]] inline uint16_t float_to_bfloat16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  }
  const uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

// Exact: every bfloat16 is a float32.
[[nodiscard]] inline float bfloat16_to_float(uint16_t value) {
  return std::bit_cast<float>(static_cast<uint32_t>(value) << 16);
}

// dst[i] = float_to_bfloat16(src[i]) for i < n; dst is little-endian
// bytes (2 per element) and need not be aligned.
void narrow_to_bfloat16(const float* src, size_t n, void* dst);
// dst[i] = bfloat16_to_float(element i of the 2n little-endian bytes at
// src). In place is allowed when src is the upper half of dst's 4n bytes
// (src == reinterpret_cast<char*>(dst) + 2n): elements are widened in
// increasing order and element i's write reaches only source bytes of
// elements <= i, already read.
void widen_from_bfloat16(const void* src, size_t n, float* dst);

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_BFLOAT16_H_
