#include "embedding/staged_table_import.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace psflow::internal {

absl::StatusOr<StagedTableImports::Action> StagedTableImports::check(const std::string& name,
                                                                     const std::string& config,
                                                                     ImportPagePosition at,
                                                                     int64_t rows) const {
  absl::ReaderMutexLock lock(&mu_);
  return check_locked(name, config, at, rows);
}

absl::StatusOr<StagedTableImports::Action> StagedTableImports::check_locked(
    const std::string& name, const std::string& config, ImportPagePosition at, int64_t rows) const {
  if (at.total < 1 || at.offset < 0 || rows < 1 || at.offset > at.total - rows) {
    return absl::InvalidArgumentError(absl::StrCat("import page of ", rows, " rows at row ",
                                                   at.offset, " of ", at.total,
                                                   " does not lie in the shard; a page holds rows "
                                                   "[offset, offset + n) of total >= 1, n >= 1"));
  }
  if (at.offset == 0) return Action::kStage;
  const auto it = shards_.find(name);
  if (it != shards_.end() && it->second.config == config && it->second.total == at.total) {
    const Shard& s = it->second;
    if (at.offset == s.staged) return Action::kStage;
    const int64_t last = s.offsets.empty() ? -1 : s.offsets.back();
    if (at.offset == last && rows == s.staged - last) return Action::kStage;
  }
  const auto done = done_.find(name);
  if (it == shards_.end() && done != done_.end() && done->second.config == config &&
      done->second.at.offset == at.offset && done->second.at.total == at.total &&
      done->second.rows == rows) {
    return Action::kDone;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "import page at row ", at.offset, " of ", at.total, " of table '", name,
      "' does not follow the pages this ps staged (",
      it == shards_.end() ? int64_t{0} : it->second.staged,
      " rows; the ps may have restarted or another import started); restart the import with the "
      "page at row 0"));
}

absl::StatusOr<std::optional<std::vector<DynamicTable::Rows>>> StagedTableImports::stage(
    const std::string& name, const std::string& config, ImportPagePosition at,
    DynamicTable::Rows rows) {
  absl::MutexLock lock(&mu_);
  const int64_t n = rows.keys.num_elements();
  absl::StatusOr<Action> action = check_locked(name, config, at, n);
  if (!action.ok()) return action.status();
  if (*action == Action::kDone) return std::nullopt;
  Shard& s = shards_[name];
  if (at.offset == 0) {
    s = Shard();
    s.config = config;
    s.total = at.total;
  } else if (at.offset != s.staged) {  // a repeat of the last page
    s.staged = s.offsets.back();
    s.offsets.pop_back();
    s.pages.pop_back();
  }
  s.offsets.push_back(at.offset);
  s.pages.push_back(std::move(rows));
  s.staged += n;
  done_.erase(name);
  if (s.staged < s.total) return std::nullopt;
  std::vector<DynamicTable::Rows> pages = std::move(s.pages);
  shards_.erase(name);
  done_[name] = Done{config, at, n};
  return pages;
}

void StagedTableImports::forget(const std::string& name) {
  absl::MutexLock lock(&mu_);
  shards_.erase(name);
  done_.erase(name);
}

}  // namespace psflow::internal
