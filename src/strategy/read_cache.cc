// cache_variable_reads(): TF's cached-read scope and its nesting error.
#include "strategy/read_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "psflow/variable_policy.h"
#include "strategy/thread_scopes.h"

namespace psflow {
namespace internal {
namespace {

std::string key_of(const VariableState& part) {
  return absl::StrCat(part.job, ":", part.task, ":", part.name);
}

}  // namespace

std::optional<Tensor> ReadCache::find(const VariableState& part) const {
  absl::MutexLock lock(&mu);
  auto it = values.find(key_of(part));
  if (it == values.end()) return std::nullopt;
  return it->second;
}

Tensor ReadCache::put(const VariableState& part, const Tensor& value) {
  absl::MutexLock lock(&mu);
  return values.try_emplace(key_of(part), value).first->second;
}

ReadCache* current_read_cache() { return thread_scopes().read_cache.get(); }

}  // namespace internal

VariableReadCacheScope::VariableReadCacheScope(VariableReadCacheScope&& other) noexcept
    : active_(std::exchange(other.active_, false)) {}

VariableReadCacheScope::~VariableReadCacheScope() {
  if (active_) internal::thread_scopes().read_cache = nullptr;
}

absl::StatusOr<VariableReadCacheScope> cache_variable_reads() {
  internal::ThreadScopes& scopes = internal::thread_scopes();
  if (scopes.read_cache != nullptr) {
    return absl::FailedPreconditionError(
        "cache_variable_reads scope cannot be nested; leave the enclosing scope first");
  }
  scopes.read_cache = std::make_shared<internal::ReadCache>();
  VariableReadCacheScope scope;
  scope.active_ = true;
  return scope;
}

}  // namespace psflow
