#include <map>
#include <string>
#include <typeindex>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/worker_context.h"

namespace psflow {

using internal::av;

struct WorkerResources::Impl {
  struct Entry {
    std::type_index type;
    std::shared_ptr<void> object;
  };
  mutable absl::Mutex mu;
  std::map<std::string, Entry, std::less<>> entries ABSL_GUARDED_BY(mu);
};

WorkerResources::WorkerResources() : impl_(std::make_unique<Impl>()) {}
WorkerResources::~WorkerResources() = default;

std::shared_ptr<void> WorkerResources::find_or_insert(
    std::string_view key, const std::type_info& type,
    absl::FunctionRef<std::shared_ptr<void>()> make) {
  absl::MutexLock lock(&impl_->mu);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) {
    it = impl_->entries.emplace(std::string(key), Impl::Entry{std::type_index(type), make()}).first;
  }
  PSFLOW_CHECK(it->second.type == std::type_index(type), "Worker resource '", av(key), "' holds a ",
               it->second.type.name(), ", not the requested ", type.name());
  return it->second.object;
}

bool WorkerResources::erase(std::string_view key) {
  std::shared_ptr<void> dropped;
  absl::MutexLock lock(&impl_->mu);
  auto it = impl_->entries.find(key);
  if (it == impl_->entries.end()) return false;
  // Destroyed after the lock is released (declared before it): a
  // destructor may use the resources again.
  dropped = std::move(it->second.object);
  impl_->entries.erase(it);
  return true;
}

void WorkerResources::clear() {
  std::map<std::string, Impl::Entry, std::less<>> dropped;
  {
    absl::MutexLock lock(&impl_->mu);
    dropped.swap(impl_->entries);
  }
  // Destructors run outside the lock: they may use the resources again.
}

size_t WorkerResources::count_with_prefix(std::string_view prefix) const {
  absl::MutexLock lock(&impl_->mu);
  size_t n = 0;
  for (auto it = impl_->entries.lower_bound(prefix);
       it != impl_->entries.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    ++n;
  }
  return n;
}

size_t WorkerResources::size() const {
  absl::MutexLock lock(&impl_->mu);
  return impl_->entries.size();
}

}  // namespace psflow
