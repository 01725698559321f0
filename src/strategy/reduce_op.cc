#include "psflow/reduce_op.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow {

using internal::av;

std::string_view reduce_op_name(ReduceOp op) { return op == ReduceOp::kSum ? "SUM" : "MEAN"; }

absl::StatusOr<ReduceOp> reduce_op_from_string(std::string_view name) {
  const std::string upper = absl::AsciiStrToUpper(av(name));
  if (upper == "SUM") return ReduceOp::kSum;
  if (upper == "MEAN") return ReduceOp::kMean;
  return absl::InvalidArgumentError(
      absl::StrCat("reduce_op '", av(name), "' is not a valid ReduceOp; use \"SUM\" or \"MEAN\" ",
                   "(any case) or ReduceOp::kSum / ReduceOp::kMean"));
}

}  // namespace psflow
