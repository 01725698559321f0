// Files only their owner may read: keys and certificates.
#ifndef PSFLOW_SECURITY_PRIVATE_FILE_H_
#define PSFLOW_SECURITY_PRIVATE_FILE_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace psflow::internal {

// Writes `contents` to `path` with mode 0600, atomically: a temporary file
// in the same directory is created 0600 (O_EXCL), written, synced and then
// renamed over `path` (overwrite) or linked to it (no overwrite), so the
// file is never readable by others nor seen half-written. ALREADY_EXISTS
// naming the file (and --force) when it exists and !overwrite.
[[nodiscard]] absl::Status write_private_file(const std::string& path, std::string_view contents,
                                              bool overwrite);

// Creates directory `path` (and missing parents) with mode 0700 for the
// last component; an existing directory is kept as it is.
[[nodiscard]] absl::Status make_private_directory(const std::string& path);

// Where temporary files go: $TMPDIR, or /tmp when it is unset or empty.
[[nodiscard]] std::string temp_directory_root();

// A new empty directory only this user may enter (mkdtemp, 0700) under
// $TMPDIR or /tmp, named "<prefix>XXXXXX".
[[nodiscard]] absl::StatusOr<std::string> make_private_temp_directory(std::string_view prefix);

// The whole file; NOT_FOUND / PERMISSION_DENIED naming it.
[[nodiscard]] absl::StatusOr<std::string> read_small_file(const std::string& path);

}  // namespace psflow::internal

#endif  // PSFLOW_SECURITY_PRIVATE_FILE_H_
