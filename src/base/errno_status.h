// An errno as an absl::Status, for the code that calls the C library
// directly (file I/O, process spawning).
#ifndef PSFLOW_BASE_ERRNO_STATUS_H_
#define PSFLOW_BASE_ERRNO_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace psflow::internal {

// "<what>: <strerror(error)>" (e.g. "cannot write /x/y: No space left on
// device"), with the code a caller can act on: NOT_FOUND, PERMISSION_DENIED,
// ALREADY_EXISTS (EEXIST, ENOTEMPTY), RESOURCE_EXHAUSTED (ENOSPC, EDQUOT),
// INTERNAL for the rest.
[[nodiscard]] absl::Status errno_status(int error, std::string_view what);

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_ERRNO_STATUS_H_
