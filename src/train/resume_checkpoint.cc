#include "train/resume_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "checkpoint/checkpoint_io.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;

// Renamed-aside names tried per checkpoint: ".corrupt", ".corrupt-2", ...
constexpr int kMaxAsideNames = 1000;

// N of a ".../ckpt-<N>" path, or -1.
int64_t checkpoint_number(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  int64_t n = -1;
  if (name.rfind("ckpt-", 0) != 0 || !absl::SimpleAtoi(name.substr(5), &n)) return -1;
  return n;
}

bool same_directory(const std::string& a, const std::string& b) {
  std::error_code ec;
  return fs::equivalent(a, b, ec) && !ec;
}

void say(std::FILE* out, const std::string& line) {
  if (out == nullptr) return;
  std::fprintf(out, "%s\n", line.c_str());
  std::fflush(out);
}

// Renames checkpoint `path` to "<path>.<why>" (or "<path>.<why>-<k>" when
// taken) and says so.
absl::Status set_aside(const std::string& path, const char* why, std::FILE* out) {
  std::error_code ec;
  for (int k = 1; k <= kMaxAsideNames; ++k) {
    const std::string target =
        k == 1 ? absl::StrCat(path, ".", why) : absl::StrCat(path, ".", why, "-", k);
    if (fs::exists(target, ec)) continue;
    fs::rename(path, target, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot rename ", path, " to ", target, ": ", ec.message()));
    }
    say(out, absl::StrCat("renamed ", path, " to ", target,
                          " (kept for inspection; training no longer uses it, and its new "
                          "checkpoints neither replace nor count it)"));
    return absl::OkStatus();
  }
  return absl::InternalError(absl::StrCat("cannot rename ", path, " aside: ", path, ".", why,
                                          " to -", kMaxAsideNames, " all exist"));
}

// The "ckpt-<N>" directories of `dir` without an index.json: damaged (a
// save never leaves one: it renames a complete directory into place), and
// not among the manager's checkpoints, so that a save of step N would
// replace them.
std::vector<std::string> without_index(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string path = it->path().string();
    std::error_code entry_ec;
    if (checkpoint_number(path) < 0 || !it->is_directory(entry_ec) ||
        fs::exists(it->path() / std::string(checkpoint::kIndexFileName), entry_ec)) {
      continue;
    }
    out.push_back(path);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Says why each of without_index(dir) is skipped.
std::vector<std::string> skip_without_index(const std::string& dir, std::FILE* out) {
  std::vector<std::string> damaged = without_index(dir);
  for (const std::string& path : damaged) {
    say(out, absl::StrCat("skipping checkpoint ", path, ": it has no ",
                          av(checkpoint::kIndexFileName), " (incomplete or damaged)"));
  }
  return damaged;
}

// "available in <dir>: ckpt-100, ckpt-200 (damaged: ...)" or "there are
// none in <dir>".
std::string available(const CheckpointManager& manager) {
  std::vector<std::string> names;
  for (const std::string& path : manager.checkpoints()) {
    std::string name = fs::path(path).filename().string();
    if (absl::Status intact = checkpoint::verify_checkpoint(path); !intact.ok()) {
      absl::StrAppend(&name, " (not usable: ", intact.message(), ")");
    }
    names.push_back(std::move(name));
  }
  if (names.empty()) return absl::StrCat("there are no checkpoints in ", manager.directory());
  return absl::StrCat("the checkpoints in ", manager.directory(), " are ",
                      absl::StrJoin(names, ", "));
}

absl::StatusOr<std::optional<std::string>> restore_requested(CheckpointManager& manager,
                                                             const std::string& requested,
                                                             std::FILE* out) {
  const std::string flag = absl::StrCat("--checkpoint '", requested, "'");
  // A bare name is one of the run's checkpoints; anything else a path.
  std::string path = requested;
  if (requested.find('/') == std::string::npos) {
    const std::string in_run = (fs::path(manager.directory()) / requested).string();
    std::error_code ec;
    if (fs::exists(in_run, ec) || !fs::exists(requested, ec)) path = in_run;
  }
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    return absl::NotFoundError(
        absl::StrCat(flag, ": there is no checkpoint directory ", path, "; ", available(manager),
                     " (pass one of their names, or a path to a checkpoint directory)"));
  }
  if (absl::Status intact = checkpoint::verify_checkpoint(path); !intact.ok()) {
    if (!checkpoint::is_damage(intact)) {
      return absl::Status(intact.code(), absl::StrCat(flag, ": ", intact.message()));
    }
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is not a valid checkpoint (",
                                                   intact.message(), "); ", available(manager)));
  }
  if (absl::Status restored = manager.checkpoint().restore(path); !restored.ok()) {
    return absl::Status(restored.code(), absl::StrCat(flag, ": ", restored.message()));
  }
  PSFLOW_ASSIGN_OR_RETURN(const int64_t iterations, load_checkpoint_iterations(path));
  for (const std::string& damaged : skip_without_index(manager.directory(), out)) {
    PSFLOW_RETURN_IF_ERROR(set_aside(damaged, "corrupt", out));
  }
  // Training goes on from `iterations`: the run's later checkpoints would
  // be replaced by its new ones of the same step.
  for (const std::string& newer : manager.checkpoints()) {
    if (checkpoint_number(newer) > iterations && !same_directory(newer, path)) {
      say(out, absl::StrCat("passing over ", newer, ", which is newer than ", flag));
      PSFLOW_RETURN_IF_ERROR(set_aside(newer, "superseded", out));
    }
  }
  return path;
}

}  // namespace

absl::StatusOr<std::optional<std::string>> restore_resume_checkpoint(CheckpointManager& manager,
                                                                     const std::string& requested,
                                                                     std::FILE* out) {
  if (!requested.empty()) return restore_requested(manager, requested, out);
  std::vector<std::string> all = manager.checkpoints();
  std::vector<std::string> damaged = skip_without_index(manager.directory(), out);
  std::optional<std::string> resume;
  for (auto it = all.rbegin(); it != all.rend() && !resume.has_value(); ++it) {
    absl::Status intact = checkpoint::verify_checkpoint(*it);
    if (intact.ok()) {
      resume = *it;
    } else if (checkpoint::is_damage(intact)) {
      say(out, absl::StrCat("skipping checkpoint ", *it, ": ", intact.message()));
      damaged.push_back(*it);
    } else {
      return intact;
    }
  }
  if (resume.has_value()) {
    if (absl::Status restored = manager.checkpoint().restore(*resume); !restored.ok()) {
      // Intact, but not of this model: a wrong --run-dir or changed flags.
      return absl::Status(
          restored.code(),
          absl::StrCat("cannot resume from ", *resume, ": ", restored.message(),
                       " (was this run directory trained with other flags? use another "
                       "--run-dir, or --checkpoint to pick a checkpoint)"));
    }
  } else if (!damaged.empty()) {
    say(out, absl::StrCat("no intact checkpoint left in ", manager.directory(),
                          ": training starts from the initial values"));
  }
  // Only once the restore succeeded: a failed run changes nothing.
  for (const std::string& path : damaged) PSFLOW_RETURN_IF_ERROR(set_aside(path, "corrupt", out));
  return resume;
}

}  // namespace psflow::internal
