// Files of a run directory written so that a reader (the evaluator,
// TensorBoard, a user) never sees half of one (internal).
#ifndef PSFLOW_TRAIN_RUN_FILES_H_
#define PSFLOW_TRAIN_RUN_FILES_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "train/model.h"
#include "train/train_options.h"

namespace psflow::internal {

// What a run trains, for `psflow eval` (train/evaluator.h): written by
// every run, whatever its model and strategy (Model::run_config).
inline constexpr char kRunConfigFile[] = "config.json";

// Writes `content` plus a newline to <dir>/<name> through a temporary file
// and a rename, creating `dir` if needed. PERMISSION_DENIED / INTERNAL name
// the path.
[[nodiscard]] absl::Status write_run_file(const std::string& dir, std::string_view name,
                                          std::string_view content);

// Writes <options.run_dir>/config.json (kRunConfigFile) with
// model.run_config(options); nothing without a run_dir.
[[nodiscard]] absl::Status write_run_config(const TrainOptions& options, const Model& model);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_FILES_H_
