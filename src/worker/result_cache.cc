#include "worker/result_cache.h"

#include "absl/strings/str_cat.h"

namespace psflow::internal {
namespace {

std::string path_text(const StructurePath& path, size_t depth) {
  std::string out = "args";
  for (size_t i = 0; i < depth && i < path.size(); ++i) {
    if (const auto* index = std::get_if<int64_t>(&path[i])) {
      absl::StrAppend(&out, "[", *index, "]");
    } else {
      absl::StrAppend(&out, "['", std::get<std::string>(path[i]), "']");
    }
  }
  return out;
}

absl::StatusOr<Structure> replace_from(const Structure& s, const StructurePath& path, size_t depth,
                                       Structure value) {
  if (depth == path.size()) return value;
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Result reference at ", path_text(path, depth + 1), " does not fit the args: ", why));
  };
  if (const auto* index = std::get_if<int64_t>(&path[depth])) {
    if (!s.is_sequence()) return bad("not a tuple or list there");
    if (*index < 0 || static_cast<size_t>(*index) >= s.size()) return bad("index out of range");
    Structure::Items items = s.items();
    absl::StatusOr<Structure> inner =
        replace_from(items[*index], path, depth + 1, std::move(value));
    if (!inner.ok()) return inner.status();
    items[*index] = *std::move(inner);
    return s.kind() == Structure::Kind::kTuple ? Structure::tuple(std::move(items))
                                               : Structure::list(std::move(items));
  }
  const std::string& key = std::get<std::string>(path[depth]);
  if (!s.is_dict()) return bad("not a dict there");
  Structure::Fields fields = s.fields();
  auto it = fields.find(key);
  if (it == fields.end()) return bad("no such key");
  absl::StatusOr<Structure> inner = replace_from(it->second, path, depth + 1, std::move(value));
  if (!inner.ok()) return inner.status();
  it->second = *std::move(inner);
  return Structure::dict(std::move(fields));
}

}  // namespace

absl::StatusOr<Structure> replace_at_path(const Structure& s, const StructurePath& path,
                                          Structure value) {
  return replace_from(s, path, 0, std::move(value));
}

bool ResultCache::put(uint64_t session, uint64_t closure_id, Structure value, size_t bytes) {
  if (options_.max_entries == 0 || bytes > options_.max_bytes) return false;
  const Key key{session, closure_id};
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(key); it != index_.end()) {
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    index_.erase(it);
  }
  while (!lru_.empty() &&
         (lru_.size() >= options_.max_entries || bytes_ + bytes > options_.max_bytes)) {
    bytes_ -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
  }
  lru_.push_front(Entry{key, std::move(value), bytes});
  index_[key] = lru_.begin();
  bytes_ += bytes;
  return true;
}

std::optional<Structure> ResultCache::get(uint64_t session, uint64_t closure_id) {
  absl::MutexLock lock(&mu_);
  auto it = index_.find(Key{session, closure_id});
  if (it == index_.end()) {
    ++misses_;
    return std::nullopt;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->value;
}

ResultCacheStats ResultCache::stats() const {
  absl::MutexLock lock(&mu_);
  return ResultCacheStats{static_cast<int64_t>(lru_.size()), static_cast<int64_t>(bytes_), hits_,
                          misses_};
}

}  // namespace psflow::internal
