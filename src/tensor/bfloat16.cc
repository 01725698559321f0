#include "tensor/bfloat16.h"

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/wire_dtype.h"

static_assert(std::endian::native == std::endian::little,
              "bfloat16 wire elements are little-endian and converted in place");

namespace psflow {

std::string_view wire_dtype_name(WireDType dtype) {
  switch (dtype) {
    case WireDType::kFloat32: return "float32";
    case WireDType::kBFloat16: return "bfloat16";
  }
  return "invalid";
}

absl::StatusOr<WireDType> wire_dtype_from_name(std::string_view name) {
  if (name == "float32" || name == "fp32") return WireDType::kFloat32;
  if (name == "bfloat16" || name == "bf16") return WireDType::kBFloat16;
  return absl::InvalidArgumentError(absl::StrCat("unknown wire dtype '", internal::av(name),
                                                 "'; valid ones are float32 and bfloat16"));
}

namespace internal {

void narrow_to_bfloat16(const float* src, size_t n, void* dst) {
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < n; ++i) {
    const uint16_t b = float_to_bfloat16(src[i]);
    std::memcpy(out + 2 * i, &b, 2);
  }
}

void widen_from_bfloat16(const void* src, size_t n, float* dst) {
  const auto* in = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) {
    uint16_t b = 0;
    std::memcpy(&b, in + 2 * i, 2);
    // Read before the write: in place, dst[i] may cover element i's bytes.
    const float f = bfloat16_to_float(b);
    std::memcpy(dst + i, &f, 4);
  }
}

}  // namespace internal
}  // namespace psflow
