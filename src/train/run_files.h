// Files of a run directory written so that a reader (the evaluator,
// TensorBoard, a user) never sees half of one (internal).
#ifndef PSFLOW_TRAIN_RUN_FILES_H_
#define PSFLOW_TRAIN_RUN_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace psflow::internal {

// What a run trains, for `psflow eval` (train/evaluator.h): written by
// runs whose model can evaluate its checkpoints (Model::run_config).
inline constexpr char kRunConfigFile[] = "config.json";

// Writes `content` plus a newline to <dir>/<name> through a temporary file
// and a rename, creating `dir` if needed. PERMISSION_DENIED / INTERNAL name
// the path.
[[nodiscard]] absl::Status write_run_file(const std::string& dir, std::string_view name,
                                          std::string_view content);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_FILES_H_
