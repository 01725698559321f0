// Element types of psflow tensors.
#ifndef PSFLOW_DTYPE_H_
#define PSFLOW_DTYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace psflow {

// Values match psflow.v1.DataType on the wire.
enum class DType : uint8_t {
  kInvalid = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kInt32 = 3,
  kInt64 = 4,
  kUInt8 = 5,
  kBool = 6,    // one byte per element
  kString = 7,  // variable-length bytes per element
};

// Bytes per element; 0 for kString and kInvalid.
[[nodiscard]] size_t dtype_size(DType dtype);
// "float32", "float64", "int32", "int64", "uint8", "bool", "string".
[[nodiscard]] std::string_view dtype_name(DType dtype);
// Inverse of dtype_name; also accepts "float" and "double". INVALID_ARGUMENT
// names the unknown string and lists the valid ones.
[[nodiscard]] absl::StatusOr<DType> dtype_from_name(std::string_view name);
[[nodiscard]] bool is_valid_dtype(int value);

// Maps a C++ element type to its DType: dtype_of<float>() == kFloat32.
template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kString;
};

template <typename T>
constexpr DType dtype_of() {
  return DTypeOf<T>::value;
}

static_assert(sizeof(bool) == 1, "psflow stores bool as one byte");

}  // namespace psflow

#endif  // PSFLOW_DTYPE_H_
