#include "base/errno_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {

absl::Status errno_status(int error, std::string_view what) {
  const std::string message = absl::StrCat(av(what), ": ", std::strerror(error));
  switch (error) {
    case ENOENT: return absl::NotFoundError(message);
    case EACCES:
    case EPERM: return absl::PermissionDeniedError(message);
    case EEXIST:
    case ENOTEMPTY: return absl::AlreadyExistsError(message);
    case ENOSPC:
    case EDQUOT: return absl::ResourceExhaustedError(message);
    default: return absl::InternalError(message);
  }
}

}  // namespace psflow::internal
