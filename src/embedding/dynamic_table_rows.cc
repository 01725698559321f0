// DynamicTable's checkpoint side: a shard's rows out (export_rows) and a
// whole shard's rows in (import_rows).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "embedding/dynamic_table.h"
#include "embedding/key_hash.h"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxStep = int64_t{1} << 62;

}  // namespace

absl::StatusOr<DynamicTable::Rows> DynamicTable::export_rows(int64_t max_bytes) const {
  const int64_t dim = options_.dim;
  absl::MutexLock lock(&mu_);
  const int64_t n = stats_.rows;
  const int64_t bytes = n * (16 + 4 * stride_);
  if (bytes > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the shard's ", n, " rows take ", bytes, " bytes, more than the ", max_bytes,
        " one answer may hold; save with more ps tasks (fewer rows per task) or a larger "
        "max_message_bytes"));
  }
  Rows out;
  out.keys = Tensor(DType::kInt64, {n});
  out.values = Tensor(DType::kFloat32, {n, dim});
  out.last_seen = Tensor(DType::kInt64, {n});
  for (int s = 0; s < num_slots_; ++s) out.slots.emplace_back(DType::kFloat32, Shape{n, dim});
  out.clock = stats_.clock;
  out.applies = stats_.applies;
  int64_t* keys = out.keys.mutable_flat<int64_t>().data();
  int64_t* seen = out.last_seen.mutable_flat<int64_t>().data();
  float* values = out.values.mutable_flat<float>().data();
  std::vector<float*> slots;
  for (Tensor& t : out.slots) slots.push_back(t.mutable_flat<float>().data());
  // The rows in recency order (index order without an eviction rule).
  std::vector<uint32_t> order;
  order.reserve(static_cast<size_t>(n));
  if (options_.ttl_steps > 0 || options_.capacity_per_shard > 0) {
    for (uint32_t r = front_; r != kNil && order.size() < static_cast<size_t>(n);
         r = meta(r).next) {
      order.push_back(r);
    }
  } else {
    for (const auto& [key, r] : index_) order.push_back(r);
  }
  const int64_t i = static_cast<int64_t>(order.size());
  for (int64_t j = 0; j < i && j < n; ++j) {
    const uint32_t r = order[static_cast<size_t>(j)];
    const float* from = row(r);
    keys[j] = meta(r).key;
    seen[j] = meta(r).last_seen;
    std::memcpy(values + j * dim, from, static_cast<size_t>(dim) * sizeof(float));
    for (size_t s = 0; s < slots.size(); ++s) {
      std::memcpy(slots[s] + j * dim, from + static_cast<int64_t>(s + 1) * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
  }
  if (i != n) {
    return absl::InternalError(absl::StrCat("the shard counts ", n, " rows but holds ", i));
  }
  return out;
}

absl::Status DynamicTable::validate_export_page(int64_t cursor, int64_t limit) {
  if (cursor < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "export cursor ", cursor, " is negative; start with 0 and pass each next cursor back"));
  }
  if (limit < 1 || limit > kMaxPageRows) {
    return absl::InvalidArgumentError(
        absl::StrCat("export page limit ", limit, " is outside [1, ", kMaxPageRows, "] rows"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DynamicTable::ExportPage> DynamicTable::export_page(int64_t cursor, int64_t limit,
                                                                   int64_t max_bytes) {
  PSFLOW_RETURN_IF_ERROR(validate_export_page(cursor, limit));
  const int64_t row_bytes = 16 + 4 * stride_;
  if (limit > max_bytes / row_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a page of ", limit, " rows takes up to ", limit * row_bytes,
                     " bytes, more than the ", max_bytes, " one answer may hold; ask for at most ",
                     max_bytes / row_bytes, " rows per page"));
  }
  std::shared_ptr<const Rows> copy;
  uint32_t id = 0;
  const auto offset = static_cast<int64_t>(static_cast<uint64_t>(cursor) & 0xFFFFFFFFu);
  if (cursor == 0) {
    PSFLOW_ASSIGN_OR_RETURN(Rows rows, export_rows(std::numeric_limits<int64_t>::max()));
    copy = std::make_shared<const Rows>(std::move(rows));
    absl::MutexLock lock(&export_mu_);
    export_id_ = export_id_ % 0x7FFFFFFFu + 1;
    id = export_id_;
    export_copy_ = copy;
  } else {
    id = static_cast<uint32_t>(static_cast<uint64_t>(cursor) >> 32);
    absl::MutexLock lock(&export_mu_);
    if (export_copy_ == nullptr || id != export_id_) {
      return absl::FailedPreconditionError(absl::StrCat(
          "export cursor ", cursor, " belongs to a copy of the shard this ps no longer holds ",
          "(another export started, rows were imported, or the ps restarted); start the export "
          "again with cursor 0"));
    }
    copy = export_copy_;
  }
  const int64_t total = copy->keys.num_elements();
  if (offset > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("export cursor ", cursor, " points at row ", offset, " of a copy of ", total,
                     " rows; pass back the next cursor an answer gave"));
  }
  ExportPage page;
  page.offset = offset;
  page.total = total;
  const int64_t n = std::min(limit, total - offset);
  page.rows = slice_table_rows(*copy, offset, n);
  if (offset + n < total) {
    page.next_cursor =
        static_cast<int64_t>((uint64_t{id} << 32) | static_cast<uint64_t>(offset + n));
  } else {
    absl::MutexLock lock(&export_mu_);
    if (export_id_ == id) export_copy_.reset();
  }
  return page;
}

absl::Status DynamicTable::validate_import(const DynamicEmbeddingOptions& options,
                                           const Rows& rows) {
  const int64_t dim = options.dim;
  const Tensor& k = rows.keys;
  if (!k.valid() || k.dtype() != DType::kInt64 || k.rank() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the keys must be a 1-D int64 tensor, not ",
                     k.valid() ? k.debug_string(0) : std::string("absent")));
  }
  const int64_t n = k.num_elements();
  auto check_rows = [&](const Tensor& t, std::string_view what) -> absl::Status {
    if (!t.valid() || t.dtype() != DType::kFloat32 || t.rank() != 2 || t.dim(0) != n ||
        t.dim(1) != dim) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the ", av(what), " must be float32 [", n, ", ", dim, "] (one row per key), not ",
          t.valid() ? t.debug_string(0) : std::string("absent")));
    }
    return absl::OkStatus();
  };
  absl::Status s = check_rows(rows.values, "values");
  if (!s.ok()) return s;
  const std::vector<std::string_view> names = optimizer_slot_names(options.optimizer.kind);
  if (rows.slots.size() != names.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(rows.slots.size(), " slot tensors for a table whose optimizer ",
                     av(optimizer_name(options.optimizer.kind)), " keeps ", names.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    s = check_rows(rows.slots[i], absl::StrCat("slot '", av(names[i]), "'"));
    if (!s.ok()) return s;
  }
  const Tensor& seen = rows.last_seen;
  if (!seen.valid() || seen.dtype() != DType::kInt64 || seen.rank() != 1 ||
      seen.num_elements() != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("the last-seen steps must be int64 [", n, "] (one per key), not ",
                     seen.valid() ? seen.debug_string(0) : std::string("absent")));
  }
  if (rows.clock < 0 || rows.clock > kMaxStep || rows.applies < 0 || rows.applies > kMaxStep) {
    return absl::InvalidArgumentError(
        absl::StrCat("clock ", rows.clock, " and applies ", rows.applies, " must be in [0, 2^62]"));
  }
  if (options.capacity_per_shard > 0 && n > options.capacity_per_shard) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " rows for one ps task of a table with capacity_per_shard ", options.capacity_per_shard,
        "; restore into more ps tasks or raise the capacity"));
  }
  if (n > int64_t{kNil} - 1) {
    return absl::InvalidArgumentError(absl::StrCat(n, " rows are more than one shard can index"));
  }
  const absl::Span<const int64_t> last = seen.flat<int64_t>();
  for (size_t i = 0; i < last.size(); ++i) {
    if (last[i] < 0 || last[i] > rows.clock) {
      return absl::InvalidArgumentError(absl::StrCat("row ", i, "'s last-seen step ", last[i],
                                                     " is outside [0, clock ", rows.clock, "]"));
    }
  }
  absl::flat_hash_set<int64_t> distinct;
  distinct.reserve(static_cast<size_t>(n));
  for (int64_t key : k.flat<int64_t>()) {
    if (!distinct.insert(key).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("key ", key, " appears twice; a table holds one row per key"));
    }
  }
  return absl::OkStatus();
}

absl::Status DynamicTable::validate_import_pages(const DynamicEmbeddingOptions& options,
                                                 absl::Span<const Rows> pages) {
  int64_t n = 0;
  for (size_t p = 0; p < pages.size(); ++p) {
    if (absl::Status s = validate_import(options, pages[p]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("page ", p, ": ", s.message()));
    }
    if (pages[p].clock != pages[0].clock || pages[p].applies != pages[0].applies) {
      return absl::InvalidArgumentError(absl::StrCat(
          "page ", p, " has clock ", pages[p].clock, " and applies ", pages[p].applies, ", page 0 ",
          pages[0].clock, " and ", pages[0].applies, "; one shard has one of each"));
    }
    n += pages[p].keys.num_elements();
  }
  if (options.capacity_per_shard > 0 && n > options.capacity_per_shard) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " rows for one ps task of a table with capacity_per_shard ", options.capacity_per_shard,
        "; restore into more ps tasks or raise the capacity"));
  }
  if (n > int64_t{kNil} - 1) {
    return absl::InvalidArgumentError(absl::StrCat(n, " rows are more than one shard can index"));
  }
  if (pages.size() < 2) return absl::OkStatus();
  absl::flat_hash_set<int64_t> distinct;
  distinct.reserve(static_cast<size_t>(n));
  for (const Rows& page : pages) {
    for (int64_t key : page.keys.flat<int64_t>()) {
      if (!distinct.insert(key).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("key ", key, " appears in two pages; a table holds one row per key"));
      }
    }
  }
  return absl::OkStatus();
}

void DynamicTable::import_rows(const Rows& rows) { import_pages(absl::MakeConstSpan(&rows, 1)); }

void DynamicTable::import_pages(absl::Span<const Rows> pages) {
  {
    // A paged export's copy is of the rows replaced now.
    absl::MutexLock lock(&export_mu_);
    export_copy_.reset();
  }
  const int64_t dim = options_.dim;
  // (page, row) of every row, least recently used first, so that each row
  // pushed to the front leaves the list ordered by last-seen step (ties
  // keep the saved order, which is most recent first: reversed here).
  std::vector<std::pair<uint32_t, uint32_t>> order;
  int64_t n = 0;
  for (const Rows& page : pages) n += page.keys.num_elements();
  order.reserve(static_cast<size_t>(n));
  for (size_t p = pages.size(); p-- > 0;) {
    for (int64_t i = pages[p].keys.num_elements(); i-- > 0;) {
      order.emplace_back(static_cast<uint32_t>(p), static_cast<uint32_t>(i));
    }
  }
  auto last_of = [&](const std::pair<uint32_t, uint32_t>& at) {
    return pages[at.first].last_seen.flat<int64_t>()[at.second];
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return last_of(a) < last_of(b); });

  absl::MutexLock lock(&mu_);
  index_.clear();
  index_.reserve(static_cast<size_t>(n));
  value_chunks_.clear();
  meta_chunks_.clear();
  free_.clear();
  free_.shrink_to_fit();
  high_water_ = 0;
  front_ = back_ = kNil;
  if (sketch_.has_value()) sketch_.emplace(options_.sketch_width);
  stats_ = DynamicTableStats();
  stats_.clock = pages.empty() ? 0 : pages.back().clock;
  stats_.applies = pages.empty() ? 0 : pages.back().applies;
  const bool recency = options_.ttl_steps > 0 || options_.capacity_per_shard > 0;
  for (const auto& [p, at] : order) {
    const Rows& rows = pages[p];
    const auto i = static_cast<int64_t>(at);
    const float* values = rows.values.flat<float>().data();
    const uint32_t r = high_water_++;
    if (r / kChunkRows >= value_chunks_.size()) {
      value_chunks_.push_back(std::make_unique<float[]>(static_cast<size_t>(kChunkRows * stride_)));
      meta_chunks_.push_back(std::make_unique<RowMeta[]>(static_cast<size_t>(kChunkRows)));
    }
    float* to = row(r);
    std::memcpy(to, values + i * dim, static_cast<size_t>(dim) * sizeof(float));
    for (size_t s = 0; s < rows.slots.size(); ++s) {
      std::memcpy(to + static_cast<int64_t>(s + 1) * dim,
                  rows.slots[s].flat<float>().data() + i * dim,
                  static_cast<size_t>(dim) * sizeof(float));
    }
    RowMeta& m = meta(r);
    m.key = rows.keys.flat<int64_t>()[static_cast<size_t>(i)];
    m.last_seen = rows.last_seen.flat<int64_t>()[static_cast<size_t>(i)];
    m.prev = m.next = kNil;
    if (recency) push_front(r);
    index_.emplace(m.key, r);
  }
  stats_.rows = n;
  stats_.created = n;
}

DynamicTable::Rows slice_table_rows(const DynamicTable::Rows& rows, int64_t offset, int64_t n) {
  DynamicTable::Rows out;
  out.clock = rows.clock;
  out.applies = rows.applies;
  const int64_t dim = rows.values.rank() == 2 ? rows.values.dim(1) : 0;
  out.keys = Tensor(DType::kInt64, {n});
  out.last_seen = Tensor(DType::kInt64, {n});
  out.values = Tensor(DType::kFloat32, {n, dim});
  const auto ints = static_cast<size_t>(n) * sizeof(int64_t);
  const auto floats = static_cast<size_t>(n * dim) * sizeof(float);
  if (n > 0) {
    std::memcpy(out.keys.mutable_flat<int64_t>().data(), rows.keys.flat<int64_t>().data() + offset,
                ints);
    std::memcpy(out.last_seen.mutable_flat<int64_t>().data(),
                rows.last_seen.flat<int64_t>().data() + offset, ints);
    std::memcpy(out.values.mutable_flat<float>().data(),
                rows.values.flat<float>().data() + offset * dim, floats);
  }
  for (const Tensor& slot : rows.slots) {
    Tensor t(DType::kFloat32, {n, dim});
    if (n > 0) {
      std::memcpy(t.mutable_flat<float>().data(), slot.flat<float>().data() + offset * dim, floats);
    }
    out.slots.push_back(std::move(t));
  }
  return out;
}

DynamicTable::Rows concat_table_rows(absl::Span<const DynamicTable::Rows> pages) {
  DynamicTable::Rows out;
  if (pages.empty()) return out;
  int64_t n = 0;
  for (const DynamicTable::Rows& p : pages) n += p.keys.num_elements();
  const DynamicTable::Rows& last = pages.back();
  const int64_t dim = last.values.rank() == 2 ? last.values.dim(1) : 0;
  out.clock = last.clock;
  out.applies = last.applies;
  out.keys = Tensor(DType::kInt64, {n});
  out.last_seen = Tensor(DType::kInt64, {n});
  out.values = Tensor(DType::kFloat32, {n, dim});
  for (size_t s = 0; s < last.slots.size(); ++s)
    out.slots.emplace_back(DType::kFloat32, Shape{n, dim});
  int64_t at = 0;
  for (const DynamicTable::Rows& p : pages) {
    const int64_t m = p.keys.num_elements();
    if (m == 0) continue;
    const auto ints = static_cast<size_t>(m) * sizeof(int64_t);
    const auto floats = static_cast<size_t>(m * dim) * sizeof(float);
    std::memcpy(out.keys.mutable_flat<int64_t>().data() + at, p.keys.flat<int64_t>().data(), ints);
    std::memcpy(out.last_seen.mutable_flat<int64_t>().data() + at,
                p.last_seen.flat<int64_t>().data(), ints);
    std::memcpy(out.values.mutable_flat<float>().data() + at * dim, p.values.flat<float>().data(),
                floats);
    for (size_t s = 0; s < out.slots.size(); ++s) {
      std::memcpy(out.slots[s].mutable_flat<float>().data() + at * dim,
                  p.slots[s].flat<float>().data(), floats);
    }
    at += m;
  }
  return out;
}

std::vector<DynamicTable::Rows> reshard_table_rows(const std::vector<DynamicTable::Rows>& saved,
                                                   int num_tasks, int64_t dim) {
  const size_t k = saved.empty() ? 0 : saved[0].slots.size();
  int64_t clock = 0;
  int64_t applies = 0;
  // Positions (shard, row) per target task.
  std::vector<std::vector<std::pair<size_t, int64_t>>> at(static_cast<size_t>(num_tasks));
  for (size_t s = 0; s < saved.size(); ++s) {
    clock = std::max(clock, saved[s].clock);
    applies = std::max(applies, saved[s].applies);
    const absl::Span<const int64_t> keys = saved[s].keys.flat<int64_t>();
    for (size_t i = 0; i < keys.size(); ++i) {
      at[static_cast<size_t>(dynamic_key_task(keys[i], num_tasks))].emplace_back(
          s, static_cast<int64_t>(i));
    }
  }
  std::vector<DynamicTable::Rows> out(static_cast<size_t>(num_tasks));
  for (size_t t = 0; t < out.size(); ++t) {
    const auto n = static_cast<int64_t>(at[t].size());
    DynamicTable::Rows& r = out[t];
    r.clock = clock;
    r.applies = applies;
    r.keys = Tensor(DType::kInt64, {n});
    r.last_seen = Tensor(DType::kInt64, {n});
    r.values = Tensor(DType::kFloat32, {n, dim});
    for (size_t j = 0; j < k; ++j) r.slots.emplace_back(DType::kFloat32, Shape{n, dim});
    int64_t* keys = r.keys.mutable_flat<int64_t>().data();
    int64_t* seen = r.last_seen.mutable_flat<int64_t>().data();
    float* values = r.values.mutable_flat<float>().data();
    std::vector<float*> slots;
    for (Tensor& slot : r.slots) slots.push_back(slot.mutable_flat<float>().data());
    const auto row_bytes = static_cast<size_t>(dim) * sizeof(float);
    for (int64_t i = 0; i < n; ++i) {
      const auto [s, from] = at[t][static_cast<size_t>(i)];
      const DynamicTable::Rows& src = saved[s];
      keys[i] = src.keys.flat<int64_t>()[static_cast<size_t>(from)];
      seen[i] = src.last_seen.flat<int64_t>()[static_cast<size_t>(from)];
      std::memcpy(values + i * dim, src.values.flat<float>().data() + from * dim, row_bytes);
      for (size_t j = 0; j < k; ++j) {
        std::memcpy(slots[j] + i * dim, src.slots[j].flat<float>().data() + from * dim, row_bytes);
      }
    }
  }
  return out;
}

}  // namespace psflow::internal
