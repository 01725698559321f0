#include "psflow/dtype.h"

#include <array>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow {

using internal::av;

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
};

constexpr std::array<DTypeInfo, 7> kDTypes = {{
    {DType::kFloat32, "float32", 4},
    {DType::kFloat64, "float64", 8},
    {DType::kInt32, "int32", 4},
    {DType::kInt64, "int64", 8},
    {DType::kUInt8, "uint8", 1},
    {DType::kBool, "bool", 1},
    {DType::kString, "string", 0},
}};

const DTypeInfo* find_info(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

size_t dtype_size(DType dtype) {
  const DTypeInfo* info = find_info(dtype);
  return info == nullptr ? 0 : info->size;
}

std::string_view dtype_name(DType dtype) {
  const DTypeInfo* info = find_info(dtype);
  return info == nullptr ? std::string_view("invalid") : info->name;
}

absl::StatusOr<DType> dtype_from_name(std::string_view name) {
  if (name == "float") return DType::kFloat32;
  if (name == "double") return DType::kFloat64;
  for (const DTypeInfo& info : kDTypes) {
    if (info.name == name) return info.dtype;
  }
  std::string valid;
  for (const DTypeInfo& info : kDTypes) {
    absl::StrAppend(&valid, valid.empty() ? "" : ", ", av(info.name));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", av(name),
                                                 "'; valid dtypes are ", valid,
                                                 " (and the aliases float, double)"));
}

bool is_valid_dtype(int value) {
  return value >= static_cast<int>(DType::kFloat32) && value <= static_cast<int>(DType::kString);
}

}  // namespace psflow
