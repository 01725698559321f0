#include "embedding/table_reshard.h"

#include <algorithm>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "embedding/key_hash.h"

namespace psflow::internal {

absl::StatusOr<TableReshard> TableReshard::plan(const std::vector<DynamicTable::Rows>& saved,
                                                int num_tasks,
                                                const DynamicEmbeddingOptions& options) {
  TableReshard r;
  r.saved_ = &saved;
  r.dim_ = options.dim;
  r.at_.resize(static_cast<size_t>(std::max(num_tasks, 0)));
  for (size_t s = 0; s < saved.size(); ++s) {
    r.clock_ = std::max(r.clock_, saved[s].clock);
    r.applies_ = std::max(r.applies_, saved[s].applies);
    const absl::Span<const int64_t> keys = saved[s].keys.flat<int64_t>();
    for (size_t i = 0; i < keys.size(); ++i) {
      r.at_[static_cast<size_t>(dynamic_key_task(keys[i], num_tasks))].emplace_back(
          static_cast<uint32_t>(s), static_cast<uint32_t>(i));
    }
  }
  // What validate_import checks beyond each saved shard's own checks: one
  // task at a time, so the key set is one new shard's at most.
  for (size_t t = 0; t < r.at_.size(); ++t) {
    const auto n = static_cast<int64_t>(r.at_[t].size());
    auto refused = [&](const std::string& why) {
      return absl::InvalidArgumentError(
          absl::StrCat("restored into ps task ", t, " of ", r.at_.size(), ": ", why));
    };
    if (options.capacity_per_shard > 0 && n > options.capacity_per_shard) {
      return refused(absl::StrCat(n, " rows for one ps task of a table with capacity_per_shard ",
                                  options.capacity_per_shard,
                                  "; restore into more ps tasks or raise the capacity"));
    }
    absl::flat_hash_set<int64_t> distinct;
    distinct.reserve(static_cast<size_t>(n));
    for (const auto& [s, i] : r.at_[t]) {
      const int64_t key = saved[s].keys.flat<int64_t>()[i];
      if (!distinct.insert(key).second) {
        return refused(absl::StrCat("key ", key, " appears twice; a table holds one row per key"));
      }
    }
  }
  return r;
}

std::vector<int64_t> TableReshard::totals() const {
  std::vector<int64_t> out;
  for (const auto& rows : at_) out.push_back(static_cast<int64_t>(rows.size()));
  return out;
}

DynamicTable::Rows TableReshard::slice(int task, int64_t offset, int64_t n) const {
  const std::vector<DynamicTable::Rows>& saved = *saved_;
  const size_t k = saved.empty() ? 0 : saved[0].slots.size();
  const int64_t dim = dim_;
  DynamicTable::Rows r;
  r.clock = clock_;
  r.applies = applies_;
  r.keys = Tensor(DType::kInt64, {n});
  r.last_seen = Tensor(DType::kInt64, {n});
  r.values = Tensor(DType::kFloat32, {n, dim});
  for (size_t j = 0; j < k; ++j) r.slots.emplace_back(DType::kFloat32, Shape{n, dim});
  int64_t* keys = r.keys.mutable_flat<int64_t>().data();
  int64_t* seen = r.last_seen.mutable_flat<int64_t>().data();
  float* values = r.values.mutable_flat<float>().data();
  const auto row_bytes = static_cast<size_t>(dim) * sizeof(float);
  const auto& at = at_[static_cast<size_t>(task)];
  for (int64_t i = 0; i < n; ++i) {
    const auto [s, from] = at[static_cast<size_t>(offset + i)];
    const DynamicTable::Rows& src = saved[s];
    keys[i] = src.keys.flat<int64_t>()[from];
    seen[i] = src.last_seen.flat<int64_t>()[from];
    std::memcpy(values + i * dim, src.values.flat<float>().data() + int64_t{from} * dim, row_bytes);
    for (size_t j = 0; j < k; ++j) {
      std::memcpy(r.slots[j].mutable_flat<float>().data() + i * dim,
                  src.slots[j].flat<float>().data() + int64_t{from} * dim, row_bytes);
    }
  }
  return r;
}

}  // namespace psflow::internal
