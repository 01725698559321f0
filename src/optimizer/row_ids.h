// Row-id validation shared by gathers, scatters and sparse gradient applies.
#ifndef PSFLOW_OPTIMIZER_ROW_IDS_H_
#define PSFLOW_OPTIMIZER_ROW_IDS_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Validates row ids against a row count: 1-D int32/int64, each in range.
// Returns them widened to int64.
[[nodiscard]] absl::StatusOr<std::vector<int64_t>> checked_row_ids(const Tensor& ids,
                                                                   int64_t num_rows,
                                                                   std::string_view variable_name);

}  // namespace psflow::internal

#endif  // PSFLOW_OPTIMIZER_ROW_IDS_H_
