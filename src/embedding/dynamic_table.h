// One ps task's shard of a dynamic embedding table: int64 keys to rows
// created on first lookup, with admission, expiry and the rows' optimizer
// slots (docs/embeddings.md).
#ifndef PSFLOW_EMBEDDING_DYNAMIC_TABLE_H_
#define PSFLOW_EMBEDDING_DYNAMIC_TABLE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "embedding/count_min_sketch.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/optimizer_config.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Counters of one table shard. Every count is exact (the sketch only
// decides admission).
// Thread-safety: a value type.
struct DynamicTableStats {
  int64_t rows = 0;               // live rows
  int64_t clock = 0;              // the largest step seen
  int64_t created = 0;            // rows created (admitted keys), ever
  int64_t evicted_ttl = 0;        // rows evicted by ttl_steps
  int64_t evicted_capacity = 0;   // rows evicted by capacity_per_shard
  int64_t not_admitted = 0;       // looked-up keys answered without a row
  int64_t dropped_gradients = 0;  // gradient rows of keys without a row
  int64_t applies = 0;            // gradient applies (Adam's step count)
  int64_t bytes = 0;              // memory of rows, index and sketch
  int64_t sketch_bytes = 0;       // of which the admission sketch

  // The wire form: one int64 per field, in declaration order.
  static constexpr int kFields = 10;
  [[nodiscard]] std::vector<int64_t> to_vector() const;
  [[nodiscard]] static DynamicTableStats from_vector(const std::vector<int64_t>& v);
};

// Keys are looked up by an absl::flat_hash_map into rows kept in chunks of
// kChunkRows; each row holds its dim values then its slots (value, s0, s1)
// so that an optimizer step touches one contiguous span, and beside it its
// key, last-seen step and its neighbours in the recency list (24 bytes).
// Recency: every lookup or update of a row sets its last-seen step to the
// table's clock (the largest step any request carried) and, when the table
// has an eviction rule (ttl_steps or capacity_per_shard), moves it to the
// front of a list, so the list is ordered by last-seen step and both rules
// evict from its back in O(rows evicted).
// Thread-safety: thread-safe; one lock per table.
class DynamicTable {
 public:
  static constexpr int64_t kMaxDim = 4096;
  // Keys in one lookup or update.
  static constexpr int64_t kMaxKeys = int64_t{1} << 20;
  // Bytes of one lookup's result.
  static constexpr int64_t kMaxResultBytes = int64_t{256} << 20;
  static constexpr int64_t kMaxAdmitAfter = CountMinSketch::kMaxCount;
  static constexpr int64_t kMaxSketchWidth = int64_t{1} << 28;
  static constexpr int64_t kChunkRows = 1024;

  // INVALID_ARGUMENT naming the bad option and its allowed range.
  [[nodiscard]] static absl::Status validate_options(const DynamicEmbeddingOptions& options);
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<DynamicTable>> create(
      const DynamicEmbeddingOptions& options);

  [[nodiscard]] const DynamicEmbeddingOptions& options() const { return options_; }
  // Slots per row of the table's optimizer (0, 1 or 2).
  [[nodiscard]] int num_slots() const { return num_slots_; }

  // Checks of lookup()'s keys: a 1-D int64 tensor of at most kMaxKeys
  // whose result fits kMaxResultBytes.
  [[nodiscard]] absl::Status validate_lookup(const Tensor& keys) const;
  // The rows of `keys` as a float32 [n, dim] tensor, in key order. `step`
  // (< 0: none) first advances the clock and expires rows. A key without a
  // row counts a sighting; once admitted its row is created by the
  // initializer, else it reads as zeros. With `replay` (a retried request
  // whose first run happened) nothing changes: rows read as stored, keys
  // without one as zeros.
  [[nodiscard]] Tensor lookup(const Tensor& keys, int64_t step, bool replay)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Checks of apply(): the optimizer is the table's kind and valid, the
  // learning rate finite and >= 0, keys as for lookup, gradients float32
  // [n, dim].
  [[nodiscard]] absl::Status validate_apply(const OptimizerConfig& config, double learning_rate,
                                            const Tensor& keys, const Tensor& grads) const;
  // Sums the gradients of duplicate keys, then applies the optimizer to
  // the rows that exist (touching them); gradients of keys without a row
  // are dropped. One apply is one optimizer step (Adam's bias correction).
  void apply(const OptimizerConfig& config, double learning_rate, const Tensor& keys,
             const Tensor& grads, int64_t step) ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] DynamicTableStats stats() const ABSL_LOCKS_EXCLUDED(mu_);
  // The row of `key` (values then slots, dim * (1 + num_slots())) and its
  // last-seen step; nullopt without a row. Does not touch the row.
  struct RowCopy {
    std::vector<float> values;
    int64_t last_seen = 0;
  };
  [[nodiscard]] std::optional<RowCopy> find(int64_t key) const ABSL_LOCKS_EXCLUDED(mu_);
  // Every row (from most to least recently used when the table has an
  // eviction rule; in index order otherwise): what a checkpoint saves.
  void for_each_row(const std::function<void(int64_t key, const float* row, int64_t last_seen)>& fn)
      const ABSL_LOCKS_EXCLUDED(mu_);

  // A shard's rows as a checkpoint saves them (docs/embeddings.md,
  // "Checkpoints"), copied under the lock: one consistent state, after a
  // prefix of the requests this shard applied. Rows from most to least
  // recently used (index order without an eviction rule).
  // Thread-safety: a value type.
  struct Rows {
    Tensor keys;                // int64 [n]
    Tensor values;              // float32 [n, dim]
    std::vector<Tensor> slots;  // num_slots() x float32 [n, dim], optimizer_slot_names order
    Tensor last_seen;           // int64 [n]
    int64_t clock = 0;          // the shard's clock
    int64_t applies = 0;        // the shard's optimizer step count
  };
  // INVALID_ARGUMENT when the bytes of the copy would exceed `max_bytes`.
  [[nodiscard]] absl::StatusOr<Rows> export_rows(int64_t max_bytes) const ABSL_LOCKS_EXCLUDED(mu_);
  // Paged export: a page sequence reads one copy of the shard taken when
  // its first page (cursor 0) is asked for, i.e. the state after a prefix
  // of the requests this shard applied, however the table changes while
  // the pages are read. The ps keeps that copy until the last page is read,
  // or a new sequence starts (cursor 0 again), or rows are imported; a
  // cursor of a copy no longer held is FAILED_PRECONDITION (start again at
  // cursor 0). `cursor` is 0 or a next_cursor this table answered; `limit`
  // is the page's row count at most (1 to kMaxPageRows).
  // Thread-safety: a value type.
  struct ExportPage {
    Rows rows;                // rows [offset, offset + n) of the copy
    int64_t offset = 0;       // of the page's first row in the copy
    int64_t total = 0;        // rows in the copy
    int64_t next_cursor = 0;  // 0 after the last page
  };
  static constexpr int64_t kMaxPageRows = int64_t{1} << 24;
  // INVALID_ARGUMENT for a negative cursor or a limit outside [1,
  // kMaxPageRows]; nothing else (a cursor's copy is checked by export_page).
  [[nodiscard]] static absl::Status validate_export_page(int64_t cursor, int64_t limit);
  // INVALID_ARGUMENT also when one page of `limit` rows would take more
  // than `max_bytes`, naming the largest limit that fits.
  [[nodiscard]] absl::StatusOr<ExportPage> export_page(int64_t cursor, int64_t limit,
                                                       int64_t max_bytes)
      ABSL_LOCKS_EXCLUDED(mu_, export_mu_);
  // The checks of import_rows against `options` (those of the table that
  // will receive the rows): dtypes and shapes, the slot count of the
  // optimizer, one last-seen step per key, distinct keys, last-seen steps
  // and applies in [0, clock] and [0, 2^62], and at most capacity_per_shard
  // rows. INVALID_ARGUMENT naming the bad tensor or the first duplicate key.
  [[nodiscard]] static absl::Status validate_import(const DynamicEmbeddingOptions& options,
                                                    const Rows& rows);
  // Replaces every row with `rows` (validated) at once: clock and applies
  // as given, the recency list ordered by last-seen step, the admission
  // sketch emptied (counts of keys without a row are not checkpointed) and
  // the counters restarted (rows = created = n, the others 0).
  void import_rows(const Rows& rows) ABSL_LOCKS_EXCLUDED(mu_, export_mu_);
  // The checks of import_pages: each page as validate_import checks it,
  // all with the same clock and applies, no key in two pages, and at most
  // capacity_per_shard rows in all.
  [[nodiscard]] static absl::Status validate_import_pages(const DynamicEmbeddingOptions& options,
                                                          absl::Span<const Rows> pages);
  // import_rows of the pages' rows together (validated), in page order.
  void import_pages(absl::Span<const Rows> pages) ABSL_LOCKS_EXCLUDED(mu_, export_mu_);

 private:
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  struct RowMeta {
    int64_t key;
    int64_t last_seen;
    uint32_t prev;  // towards the front (more recent)
    uint32_t next;  // towards the back (less recent)
  };

  explicit DynamicTable(const DynamicEmbeddingOptions& options);

  [[nodiscard]] float* row(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] const float* row(uint32_t r) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  [[nodiscard]] RowMeta& meta(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] const RowMeta& meta(uint32_t r) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void advance(int64_t step) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row of each key (kNil where it has none), prefetching ahead.
  void resolve(absl::Span<const int64_t> keys, std::vector<uint32_t>& rows)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts loading row `r` (any, kNil included) into the cache for writing.
  void prefetch_row_of(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void touch(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void unlink(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void push_front(uint32_t r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void evict_back() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The row index of a new row for `key`, initialized and at the front.
  uint32_t insert(int64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  [[nodiscard]] bool admit(int64_t key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const DynamicEmbeddingOptions options_;
  const int num_slots_;
  const int64_t stride_;  // floats per row: dim * (1 + num_slots_)

  mutable absl::Mutex mu_;
  absl::flat_hash_map<int64_t, uint32_t> index_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<float[]>> value_chunks_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<RowMeta[]>> meta_chunks_ ABSL_GUARDED_BY(mu_);
  uint32_t high_water_ ABSL_GUARDED_BY(mu_) = 0;  // row indices ever used
  std::vector<uint32_t> free_ ABSL_GUARDED_BY(mu_);
  uint32_t front_ ABSL_GUARDED_BY(mu_) = kNil;
  uint32_t back_ ABSL_GUARDED_BY(mu_) = kNil;
  std::optional<CountMinSketch> sketch_ ABSL_GUARDED_BY(mu_);
  DynamicTableStats stats_ ABSL_GUARDED_BY(mu_);
  // The copy a paged export reads (null: none) and its id, the high half of
  // its cursors. Taken after mu_ when both are held.
  mutable absl::Mutex export_mu_;
  std::shared_ptr<const Rows> export_copy_ ABSL_GUARDED_BY(export_mu_);
  uint32_t export_id_ ABSL_GUARDED_BY(export_mu_) = 0;
};

// Rows saved from any number of shards, regrouped for `num_tasks` ps tasks
// by each key's task (dynamic_key_task), keeping their saved order. Every
// new shard gets the largest saved clock and applies (as a dense part's
// restored step count is the largest among the saved parts it draws from).
// Rows [offset, offset + n) of `rows` (clock and applies kept).
[[nodiscard]] DynamicTable::Rows slice_table_rows(const DynamicTable::Rows& rows, int64_t offset,
                                                  int64_t n);

// The pages' rows one after another (clock and applies of the last page;
// the pages all have the same slot count and dim).
[[nodiscard]] DynamicTable::Rows concat_table_rows(absl::Span<const DynamicTable::Rows> pages);

[[nodiscard]] std::vector<DynamicTable::Rows> reshard_table_rows(
    const std::vector<DynamicTable::Rows>& saved, int num_tasks, int64_t dim);

}  // namespace psflow::internal

#endif  // PSFLOW_EMBEDDING_DYNAMIC_TABLE_H_
