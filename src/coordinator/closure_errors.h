// The statuses closures end with when they do not run to completion
// (internal). Texts of the CANCELLED errors are TF's.
#ifndef PSFLOW_COORDINATOR_CLOSURE_ERRORS_H_
#define PSFLOW_COORDINATOR_CLOSURE_ERRORS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"

namespace psflow::internal {

inline constexpr std::string_view kClosureCancelledMessage =
    "The corresponding function is cancelled. Please reschedule the function.";
inline constexpr std::string_view kClosureAbortedMessage =
    "The corresponding function is aborted. Please reschedule the function.";

// A queued closure dropped because an earlier closure failed.
[[nodiscard]] absl::Status closure_cancelled_error();
// Fetching an ABORTED RemoteValue.
[[nodiscard]] absl::Status closure_aborted_error();
// A closure dropped because its coordinator is being destroyed.
[[nodiscard]] absl::Status coordinator_shut_down_error();

// The error of a closure of `function_name` whose input at `input_path`
// ("args[0]['x']"), the result of closure `input_closure_id` running
// `input_function`, failed with `input_error`. Keeps the original code, and
// flattens chains: when `input_error` is itself an input error, the
// original cause is quoted rather than the whole chain.
[[nodiscard]] absl::Status closure_input_error(std::string_view function_name,
                                               std::string_view input_path,
                                               uint64_t input_closure_id,
                                               std::string_view input_function,
                                               const absl::Status& input_error);

// The error of a closure of `function_name` that failed on `task` because
// a per-worker dataset or resource it asked for could not be built there
// (or was released): `build_error` (its code, its message quoted) as an
// input error (is_closure_input_error), TF's ClosureInputError for a
// failed resource closure.
[[nodiscard]] absl::Status per_worker_input_error(std::string_view function_name,
                                                  std::string_view task,
                                                  const absl::Status& build_error);

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_CLOSURE_ERRORS_H_
