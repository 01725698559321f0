// The variables one ps task holds, by name.
#ifndef PSFLOW_PS_SERVER_VARIABLE_STORE_H_
#define PSFLOW_PS_SERVER_VARIABLE_STORE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "embedding/dynamic_table.h"
#include "embedding/staged_table_import.h"
#include "ps/request/update_key.h"
#include "ps/server/variable_shard.h"
#include "psflow/server.h"

namespace psflow::internal {

// Name -> VariableShard. Lookups hand out shared pointers, so a shard stays
// valid for an operation in flight even if it is deleted meanwhile.
// Thread-safety: all methods are thread-safe.
class VariableStore {
 public:
  explicit VariableStore(NonFinitePolicy non_finite_updates = NonFinitePolicy::kReject)
      : non_finite_updates_(non_finite_updates) {}

  // How execute_variable_ops treats updates holding NaN or infinity.
  [[nodiscard]] NonFinitePolicy non_finite_updates() const { return non_finite_updates_; }

  enum class IfExists {
    kReplace,  // a fresh variable replaces the old one (TF's behaviour)
    kKeep,     // keep the stored value when dtype and shape match
  };

  // Creates `name` holding `initial_value`. Returns true when a variable of
  // that name existed. With kKeep and a different dtype/shape:
  // ALREADY_EXISTS naming both.
  [[nodiscard]] absl::StatusOr<bool> create(const std::string& name, Tensor initial_value,
                                            IfExists if_exists = IfExists::kReplace)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The ALREADY_EXISTS that create(kKeep) gives when `existing` is not of
  // `dtype` and `shape`, else OK: also for checking a batch before it runs.
  [[nodiscard]] static absl::Status keep_conflict(const VariableShard& existing, DType dtype,
                                                  const Shape& shape);
  // Checkpoint restore: replaces the whole state (value, slots, optimizer
  // name and steps) of `name` at once, creating it when absent. An existing
  // variable keeps its dtype and shape: a snapshot of another is
  // INVALID_ARGUMENT naming both, as is any problem validate_restore finds;
  // on error nothing changes. Returns true when the variable existed.
  [[nodiscard]] absl::StatusOr<bool> restore(const std::string& name,
                                             VariableShard::Snapshot snapshot)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The checks of restore() without applying it: `existing` is the stored
  // variable of that name, or null when there is none.
  [[nodiscard]] static absl::Status validate_restore(const std::string& name,
                                                     const VariableShard::Snapshot& snapshot,
                                                     const VariableShard* existing);
  // NOT_FOUND naming the variable and how many this ps holds.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<VariableShard>> find(std::string_view name) const
      ABSL_LOCKS_EXCLUDED(mu_);
  // True when it existed.
  bool erase(std::string_view name) ABSL_LOCKS_EXCLUDED(mu_);

  // Exactly-once updates: true when `key` was not applied before (it now
  // counts as applied), false for a duplicate. The store remembers the
  // last kUpdateWindow keys (FIFO): a closure is retried within seconds of
  // its worker's failure, while a window that size spans minutes of
  // training even at tens of thousands of updates per second.
  static constexpr size_t kUpdateWindow = size_t{1} << 20;
  [[nodiscard]] bool claim_update(const UpdateKey& key) ABSL_LOCKS_EXCLUDED(updates_mu_);
  // Duplicates refused by claim_update so far.
  [[nodiscard]] int64_t duplicate_updates() const ABSL_LOCKS_EXCLUDED(updates_mu_);
  [[nodiscard]] size_t size() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] std::vector<std::shared_ptr<VariableShard>> all() const ABSL_LOCKS_EXCLUDED(mu_);

  // Dynamic embedding tables, by name: a namespace apart from variables'.
  // create_table keeps a table of that name made with the same options
  // (returns false) and refuses one made with others (ALREADY_EXISTS);
  // check_create_table is its checks without creating.
  [[nodiscard]] absl::StatusOr<bool> create_table(const std::string& name,
                                                  const DynamicEmbeddingOptions& options)
      ABSL_LOCKS_EXCLUDED(tables_mu_);
  [[nodiscard]] absl::Status check_create_table(const std::string& name,
                                                const DynamicEmbeddingOptions& options) const
      ABSL_LOCKS_EXCLUDED(tables_mu_);
  // NOT_FOUND naming the table and how many this ps holds.
  [[nodiscard]] absl::StatusOr<std::shared_ptr<DynamicTable>> find_table(
      std::string_view name) const ABSL_LOCKS_EXCLUDED(tables_mu_);
  // Pages of paged DE_IMPORTs not yet complete.
  [[nodiscard]] StagedTableImports& staged_imports() { return staged_imports_; }

 private:
  const NonFinitePolicy non_finite_updates_;
  // Exactly-once bookkeeping; its own lock, taken alone.
  mutable absl::Mutex updates_mu_;
  absl::flat_hash_set<UpdateKey> applied_ ABSL_GUARDED_BY(updates_mu_);
  std::deque<UpdateKey> applied_order_ ABSL_GUARDED_BY(updates_mu_);
  int64_t duplicates_ ABSL_GUARDED_BY(updates_mu_) = 0;

  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<VariableShard>> shards_ ABSL_GUARDED_BY(mu_);

  mutable absl::Mutex tables_mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<DynamicTable>> tables_
      ABSL_GUARDED_BY(tables_mu_);
  StagedTableImports staged_imports_;  // thread-safe itself
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_VARIABLE_STORE_H_
