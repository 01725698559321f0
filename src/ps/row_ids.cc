#include "ps/row_ids.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow {

absl::StatusOr<std::vector<int64_t>> checked_row_ids(const Tensor& ids,
                                                     int64_t num_rows,
                                                     std::string_view variable_name) {
  if (ids.rank() != 1 || (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "row ids for '", av(variable_name), "' must be a 1-D int32 or int64 tensor, got ",
        av(dtype_name(ids.dtype())), " ", shape_string(ids.shape())));
  }
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(ids.dim(0)));
  for (int64_t i = 0; i < ids.dim(0); ++i) {
    const int64_t id = ids.dtype() == DType::kInt32
                           ? static_cast<int64_t>(ids.flat<int32_t>()[i])
                           : ids.flat<int64_t>()[i];
    if (id < 0 || id >= num_rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "row id ", id, " at position ", i, " is out of range [0, ", num_rows,
          ") for '", av(variable_name), "'"));
    }
    out.push_back(id);
  }
  return out;
}

}  // namespace psflow
