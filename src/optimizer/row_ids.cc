#include "optimizer/row_ids.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// Widens and range-checks in one pass over one span (no per-element dtype
// checks); the message names the first bad id.
template <typename T>
absl::Status widen_checked(absl::Span<const T> in, int64_t num_rows, std::string_view variable_name,
                           int64_t* out) {
  // One unsigned compare per id catches negatives as well as ids too large;
  // the loop has no early exit, so the compiler vectorises it.
  const auto limit = static_cast<uint64_t>(num_rows);
  bool bad = false;
  for (size_t i = 0; i < in.size(); ++i) {
    const auto id = static_cast<int64_t>(in[i]);
    bad |= static_cast<uint64_t>(id) >= limit;
    out[i] = id;
  }
  if (!bad) return absl::OkStatus();
  for (size_t i = 0; i < in.size(); ++i) {
    const auto id = static_cast<int64_t>(in[i]);
    if (id < 0 || id >= num_rows) {
      return absl::InvalidArgumentError(absl::StrCat("row id ", id, " at position ", i,
                                                     " is out of range [0, ", num_rows, ") for '",
                                                     av(variable_name), "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> checked_row_ids(const Tensor& ids, int64_t num_rows,
                                                     std::string_view variable_name) {
  if (ids.rank() != 1 || (ids.dtype() != DType::kInt32 && ids.dtype() != DType::kInt64)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "row ids for '", av(variable_name), "' must be a 1-D int32 or int64 tensor, got ",
        av(dtype_name(ids.dtype())), " ", shape_string(ids.shape())));
  }
  std::vector<int64_t> out(static_cast<size_t>(ids.dim(0)));
  const absl::Status s =
      ids.dtype() == DType::kInt32
          ? widen_checked(ids.flat<int32_t>(), num_rows, variable_name, out.data())
          : widen_checked(ids.flat<int64_t>(), num_rows, variable_name, out.data());
  if (!s.ok()) return s;
  return out;
}

}  // namespace psflow::internal
