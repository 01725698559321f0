// Whether a model's data files can be read, checked before a run starts
// anything (Model::check_data) (internal).
#ifndef PSFLOW_TRAIN_DATA_FILES_H_
#define PSFLOW_TRAIN_DATA_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace psflow::internal {

// OK when `path` is a regular file this process can open for reading;
// else INVALID_ARGUMENT "<what> <path> is missing|is a directory|cannot be
// read (<reason>); <fix>". Opens and closes the file, reads nothing.
[[nodiscard]] absl::Status check_readable_file(const std::string& path, std::string_view what,
                                               std::string_view fix);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DATA_FILES_H_
