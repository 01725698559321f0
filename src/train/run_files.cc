#include "train/run_files.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {

absl::Status write_run_file(const std::string& dir, std::string_view name,
                            std::string_view content) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot create run directory '", dir, "': ", ec.message()));
  }
  const std::string path = absl::StrCat(dir, "/", av(name));
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    file << content << "\n";
    if (!file) return absl::InternalError(absl::StrCat("cannot write '", tmp, "'"));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot write '", path, "': ", ec.message()));
  return absl::OkStatus();
}

absl::Status write_run_config(const TrainOptions& options, const Model& model) {
  if (options.run_dir.empty()) return absl::OkStatus();
  return write_run_file(options.run_dir, kRunConfigFile, model.run_config(options));
}

}  // namespace psflow::internal
