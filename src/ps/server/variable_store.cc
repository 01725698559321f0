#include "ps/server/variable_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/shown_text.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {

absl::Status VariableStore::keep_conflict(const VariableShard& existing, DType dtype,
                                          const Shape& shape) {
  if (existing.dtype() == dtype && existing.shape() == shape) return absl::OkStatus();
  return absl::AlreadyExistsError(
      absl::StrCat("variable '", existing.name(), "' already exists on this ps as ",
                   av(dtype_name(existing.dtype())), " ", shape_string(existing.shape()),
                   ", which differs from the requested ", av(dtype_name(dtype)), " ",
                   shape_string(shape), "; delete it or use another name"));
}

absl::StatusOr<bool> VariableStore::create(const std::string& name, Tensor initial_value,
                                           IfExists if_exists) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a variable needs a non-empty name");
  }
  if (!initial_value.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", name, "' needs a valid initial value"));
  }
  auto shard = std::make_shared<VariableShard>(name, std::move(initial_value));
  absl::MutexLock lock(&mu_);
  auto it = shards_.find(name);
  if (it == shards_.end()) {
    shards_.emplace(name, std::move(shard));
    return false;
  }
  if (if_exists == IfExists::kKeep) {
    PSFLOW_RETURN_IF_ERROR(keep_conflict(*it->second, shard->dtype(), shard->shape()));
    return true;
  }
  it->second = std::move(shard);
  return true;
}

absl::Status VariableStore::validate_restore(const std::string& name,
                                             const VariableShard::Snapshot& snapshot,
                                             const VariableShard* existing) {
  if (name.empty()) {
    return absl::InvalidArgumentError("RESTORE needs a non-empty variable name");
  }
  if (!snapshot.value.valid()) {
    return absl::InvalidArgumentError(
        absl::StrCat("restored value of variable '", name, "' is an invalid tensor"));
  }
  if (existing != nullptr) return existing->validate_restore(snapshot);
  return validate_optimizer_slots(snapshot.slots, snapshot.value.dtype(), snapshot.value.shape(),
                                  name);
}

absl::StatusOr<bool> VariableStore::restore(const std::string& name,
                                            VariableShard::Snapshot snapshot) {
  std::shared_ptr<VariableShard> shard;
  {
    absl::MutexLock lock(&mu_);
    auto it = shards_.find(name);
    if (it != shards_.end()) shard = it->second;
  }
  if (shard != nullptr) {
    PSFLOW_RETURN_IF_ERROR(shard->restore(std::move(snapshot)));
    return true;
  }
  PSFLOW_RETURN_IF_ERROR(validate_restore(name, snapshot, nullptr));
  auto fresh = std::make_shared<VariableShard>(name, std::move(snapshot));
  {
    absl::MutexLock lock(&mu_);
    auto [it, inserted] = shards_.try_emplace(name, fresh);
    if (inserted) return false;
    shard = it->second;  // created meanwhile by another request
  }
  VariableShard::Snapshot state = fresh->snapshot();
  PSFLOW_RETURN_IF_ERROR(shard->restore(std::move(state)));
  return true;
}

absl::StatusOr<std::shared_ptr<VariableShard>> VariableStore::find(std::string_view name) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = shards_.find(av(name));
  if (it == shards_.end()) {
    if (shards_.empty()) {
      // The usual cause in a running job: the ps was restarted and lost
      // everything it held.
      return absl::NotFoundError(absl::StrCat(
          "no variable named '", shown_name(name),
          "' on this ps, which holds no variables: if it restarted, its values are lost "
          "(restore a checkpoint: PsRecovery, psflow train --ps-recovery); otherwise create "
          "the variable inside strategy.scope() first"));
    }
    return absl::NotFoundError(absl::StrCat("no variable named '", shown_name(name),
                                            "' on this ps (it holds ", shards_.size(),
                                            " others); create it inside strategy.scope() first"));
  }
  return it->second;
}

bool VariableStore::erase(std::string_view name) {
  absl::MutexLock lock(&mu_);
  return shards_.erase(av(name)) > 0;
}

size_t VariableStore::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return shards_.size();
}

std::vector<std::shared_ptr<VariableShard>> VariableStore::all() const {
  std::vector<std::shared_ptr<VariableShard>> out;
  {
    absl::ReaderMutexLock lock(&mu_);
    out.reserve(shards_.size());
    for (const auto& [name, shard] : shards_) out.push_back(shard);
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a->name() < b->name(); });
  return out;
}

bool VariableStore::claim_update(const UpdateKey& key) {
  absl::MutexLock lock(&updates_mu_);
  if (!applied_.insert(key).second) {
    ++duplicates_;
    return false;
  }
  applied_order_.push_back(key);
  if (applied_order_.size() > kUpdateWindow) {
    applied_.erase(applied_order_.front());
    applied_order_.pop_front();
  }
  return true;
}

int64_t VariableStore::duplicate_updates() const {
  absl::MutexLock lock(&updates_mu_);
  return duplicates_;
}

absl::Status VariableStore::check_create_table(const std::string& name,
                                               const DynamicEmbeddingOptions& options) const {
  if (name.empty()) {
    return absl::InvalidArgumentError("DE_CREATE needs a table name; set the op's variable");
  }
  PSFLOW_RETURN_IF_ERROR(DynamicTable::validate_options(options));
  absl::MutexLock lock(&tables_mu_);
  auto it = tables_.find(name);
  if (it != tables_.end() && !(it->second->options() == options)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "dynamic table '", shown_name(name), "' exists on this ps with other options (dim ",
        it->second->options().dim, ", seed ", it->second->options().seed,
        "); create it with the same options, or under another name"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> VariableStore::create_table(const std::string& name,
                                                 const DynamicEmbeddingOptions& options) {
  PSFLOW_RETURN_IF_ERROR(check_create_table(name, options));
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<DynamicTable> table, DynamicTable::create(options));
  absl::MutexLock lock(&tables_mu_);
  auto [it, inserted] = tables_.try_emplace(name, std::move(table));
  if (!inserted && !(it->second->options() == options)) {
    return absl::AlreadyExistsError(absl::StrCat("dynamic table '", shown_name(name),
                                                 "' was created meanwhile with other options"));
  }
  return inserted;
}

absl::StatusOr<std::shared_ptr<DynamicTable>> VariableStore::find_table(
    std::string_view name) const {
  absl::MutexLock lock(&tables_mu_);
  auto it = tables_.find(av(name));
  if (it == tables_.end()) {
    return absl::NotFoundError(absl::StrCat("no dynamic table '", shown_name(name),
                                            "' on this ps (it holds ", tables_.size(),
                                            "); create it first (DE_CREATE, from the chief)"));
  }
  return it->second;
}

}  // namespace psflow::internal
