// CheckpointManager: numbered checkpoints in one directory, the newest kept.
#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "checkpoint/checkpoint_io.h"
#include "checkpoint/file_io.h"
#include "checkpoint/index.h"
#include "psflow/checkpoint.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;

namespace {

namespace fs = std::filesystem;
using internal::checkpoint::fs_error;
using internal::checkpoint::unique_suffix;

constexpr std::string_view kCheckpointPrefix = "ckpt-";

// ---- the manager's directory ---------------------------------------------

// N of a "ckpt-<N>" name, or -1.
int64_t checkpoint_number(std::string_view name) {
  if (name.substr(0, kCheckpointPrefix.size()) != kCheckpointPrefix) return -1;
  const std::string_view digits = name.substr(kCheckpointPrefix.size());
  if (digits.empty() || digits.size() > 18) return -1;
  int64_t n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// Complete checkpoints in `directory` (a "ckpt-<N>" directory holding an
// index.json), by N ascending.
absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> list_checkpoints(
    const std::string& directory) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::exists(directory, ec)) return out;
  fs::directory_iterator it(directory, ec);
  if (ec) return fs_error(ec, absl::StrCat("cannot list ", directory));
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    const int64_t n = checkpoint_number(it->path().filename().string());
    std::error_code entry_ec;  // an entry that vanished meanwhile is skipped
    if (n < 0 || !it->is_directory(entry_ec)) continue;
    if (!fs::is_regular_file(it->path() / std::string(internal::checkpoint::kIndexFileName),
                             entry_ec)) {
      continue;
    }
    out.emplace_back(n, it->path().string());
  }
  if (ec) return fs_error(ec, absl::StrCat("cannot list ", directory));
  std::sort(out.begin(), out.end());
  return out;
}

// Removes what crashed saves and deletions left: ".ckpt-<N>.tmp-...",
// ".ckpt-<N>.old-..." and ".ckpt-<N>.deleting-..." entries. Only safe while
// no other save writes into the directory (one manager per directory).
void remove_debris(const std::string& directory) {
  std::error_code ec;
  std::vector<fs::path> debris;
  for (fs::directory_iterator it(directory, ec); !ec && it != fs::directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(absl::StrCat(".", av(kCheckpointPrefix)), 0) == 0 &&
        (name.find(".tmp-") != std::string::npos || name.find(".old-") != std::string::npos ||
         name.find(".deleting-") != std::string::npos)) {
      debris.push_back(it->path());
    }
  }
  for (const fs::path& p : debris) fs::remove_all(p, ec);
}

// Moves a checkpoint aside (so that it stops looking complete at once) and
// deletes it.
void delete_checkpoint(const std::string& path) {
  const fs::path p(path);
  const fs::path trash =
      p.parent_path() / absl::StrCat(".", p.filename().string(), ".deleting-", unique_suffix());
  std::error_code ec;
  fs::rename(p, trash, ec);
  fs::remove_all(ec ? p : trash, ec);
}

}  // namespace

// ---- CheckpointManager ---------------------------------------------------

struct CheckpointManager::State {
  State(Checkpoint c, std::string d, std::optional<int> m)
      : checkpoint(std::move(c)), directory(std::move(d)), max_to_keep(m) {}
  const Checkpoint checkpoint;
  const std::string directory;
  const std::optional<int> max_to_keep;
  absl::Mutex mu;  // serialises saves
};

absl::StatusOr<CheckpointManager> CheckpointManager::create(Checkpoint checkpoint,
                                                            std::string directory,
                                                            std::optional<int> max_to_keep) {
  if (max_to_keep.has_value() && *max_to_keep <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Expected a positive integer or nullopt for `max_to_keep`, got ", *max_to_keep, "."));
  }
  if (directory.empty()) {
    return absl::InvalidArgumentError("the checkpoint directory must not be empty");
  }
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) return fs_error(ec, absl::StrCat("cannot create checkpoint directory ", directory));
  return CheckpointManager(
      std::make_shared<State>(std::move(checkpoint), std::move(directory), max_to_keep));
}

absl::StatusOr<std::string> CheckpointManager::save() {
  State& s = *state_;
  absl::MutexLock lock(&s.mu);
  remove_debris(s.directory);
  PSFLOW_ASSIGN_OR_RETURN(internal::checkpoint::PreparedCheckpoint prepared,
                          internal::checkpoint::prepare_checkpoint(s.checkpoint));
  PSFLOW_ASSIGN_OR_RETURN(auto existing, list_checkpoints(s.directory));
  int64_t number = 0;
  if (prepared.index.iterations.has_value()) {
    number = *prepared.index.iterations;
  } else {
    number = existing.empty() ? 1 : existing.back().first + 1;
  }
  const std::string path =
      (fs::path(s.directory) / absl::StrCat(av(kCheckpointPrefix), number)).string();
  PSFLOW_RETURN_IF_ERROR(internal::checkpoint::write_checkpoint_directory(std::move(prepared), path,
                                                                          /*replace=*/true));
  if (s.max_to_keep.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(auto all, list_checkpoints(s.directory));
    const auto keep = static_cast<size_t>(*s.max_to_keep);
    for (size_t i = 0; i + keep < all.size(); ++i) {
      if (all[i].second != path) delete_checkpoint(all[i].second);
    }
  }
  return path;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  absl::StatusOr<std::optional<std::string>> latest = psflow::latest_checkpoint(state_->directory);
  return latest.ok() ? *latest : std::nullopt;
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> all =
      list_checkpoints(state_->directory);
  if (!all.ok()) return out;
  for (auto& [n, path] : *all) out.push_back(std::move(path));
  return out;
}

absl::StatusOr<std::optional<std::string>> CheckpointManager::restore_or_initialize() {
  PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> latest,
                          psflow::latest_checkpoint(state_->directory));
  if (!latest.has_value()) return std::nullopt;
  PSFLOW_RETURN_IF_ERROR(state_->checkpoint.restore(*latest));
  return latest;
}

const std::string& CheckpointManager::directory() const { return state_->directory; }
const Checkpoint& CheckpointManager::checkpoint() const { return state_->checkpoint; }

absl::StatusOr<std::optional<std::string>> latest_checkpoint(const std::string& directory) {
  PSFLOW_ASSIGN_OR_RETURN(auto all, list_checkpoints(directory));
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

absl::StatusOr<int64_t> load_checkpoint_iterations(const std::string& path) {
  PSFLOW_ASSIGN_OR_RETURN(internal::checkpoint::CheckpointIndex index,
                          internal::checkpoint::read_checkpoint_index(path));
  if (!index.iterations.has_value()) {
    return absl::NotFoundError(absl::StrCat(
        "checkpoint ", path, " holds no optimizer iterations (it was saved without an optimizer)"));
  }
  return *index.iterations;
}

}  // namespace psflow
