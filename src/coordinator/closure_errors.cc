#include "coordinator/closure_errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/types/optional.h"
#include "base/strings.h"
#include "psflow/remote_value.h"

namespace psflow::internal {
namespace {

// Marks input errors; the payload is the original error, "CODE: message".
constexpr std::string_view kInputErrorPayloadUrl = "type.psflow/psflow.ClosureInputError";

}  // namespace

absl::Status closure_cancelled_error() {
  return absl::CancelledError(av(kClosureCancelledMessage));
}

absl::Status closure_aborted_error() { return absl::CancelledError(av(kClosureAbortedMessage)); }

absl::Status coordinator_shut_down_error() {
  return absl::CancelledError(
      "The corresponding function is cancelled: its ClusterCoordinator was destroyed before "
      "the function ran.");
}

absl::Status closure_input_error(std::string_view function_name, std::string_view input_path,
                                 uint64_t input_closure_id, std::string_view input_function,
                                 const absl::Status& input_error) {
  const absl::optional<absl::Cord> original = input_error.GetPayload(av(kInputErrorPayloadUrl));
  const std::string original_text =
      original
          ? std::string(*original)
          : absl::StrCat(absl::StatusCodeToString(input_error.code()), ": ", input_error.message());
  std::string message = absl::StrCat("Input ", av(input_path), " of function '", av(function_name),
                                     "' failed: closure ", input_closure_id, " (function '",
                                     av(input_function), "') ");
  if (original) {
    absl::StrAppend(&message, "did not run because one of its own inputs failed; the original ",
                    "error: ", original_text);
  } else {
    absl::StrAppend(&message, "ended with ", original_text);
  }
  absl::Status status(input_error.code(), message);
  status.SetPayload(av(kInputErrorPayloadUrl), absl::Cord(original_text));
  return status;
}

absl::Status per_worker_input_error(std::string_view function_name, std::string_view task,
                                    const absl::Status& build_error) {
  const std::string original_text =
      absl::StrCat(absl::StatusCodeToString(build_error.code()), ": ", build_error.message());
  absl::Status status(
      build_error.code(),
      absl::StrCat("Input of function '", av(function_name), "' failed on ", av(task),
                   ": a per-worker input it uses could not be built (", original_text,
                   "). The function itself did not fail; fix the dataset or resource function."));
  status.SetPayload(av(kInputErrorPayloadUrl), absl::Cord(original_text));
  return status;
}

}  // namespace psflow::internal

namespace psflow {

bool is_closure_input_error(const absl::Status& status) {
  return status.GetPayload(internal::av(internal::kInputErrorPayloadUrl)).has_value();
}

}  // namespace psflow
