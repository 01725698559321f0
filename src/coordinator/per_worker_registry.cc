#include "coordinator/per_worker_registry.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "rpc/grpc_status.h"
#include "worker/named_functions.h"

namespace psflow::internal {
namespace {

// The most ids one request carries (the worker takes up to 100000).
constexpr size_t kMaxIdsPerRequest = 10000;

// Appends the ids of the per-worker handles inside `s`.
void collect_ids(const Structure& s, std::vector<std::string_view>& ids) {
  if (s.is_dict()) {
    if (std::optional<std::string_view> id = per_worker_handle_id(s)) ids.push_back(*id);
    for (const auto& [key, field] : s.fields()) collect_ids(field, ids);
  } else if (s.is_sequence()) {
    for (const Structure& item : s.items()) collect_ids(item, ids);
  }
}

void collect_ids(const RemoteStructure& s, std::vector<std::string_view>& ids) {
  switch (s.kind()) {
    case RemoteStructure::Kind::kValue: collect_ids(s.value(), ids); return;
    case RemoteStructure::Kind::kRemoteValue: return;
    case RemoteStructure::Kind::kTuple:
    case RemoteStructure::Kind::kList:
      for (const RemoteStructure& item : s.items()) collect_ids(item, ids);
      return;
    case RemoteStructure::Kind::kDict:
      for (const auto& [key, field] : s.fields()) collect_ids(field, ids);
      return;
  }
}

}  // namespace

PerWorkerRegistry::PerWorkerRegistry(int num_workers, size_t batch_size, Send send)
    : num_workers_(num_workers),
      batch_size_(std::max<size_t>(1, batch_size)),
      send_(std::move(send)),
      // Unique across coordinator processes, as new_per_worker_id.
      prefix_(absl::StrCat(new_per_worker_id(), ".")),
      queued_(static_cast<size_t>(num_workers)),
      kept_(static_cast<size_t>(num_workers)) {}

PerWorkerRegistry::~PerWorkerRegistry() {
  PSFLOW_CHECK(!thread_.joinable(), "PerWorkerRegistry destroyed before stop()");
}

void PerWorkerRegistry::start() {
  started_ = true;
  thread_ = std::thread([this] { loop(); });
}

void PerWorkerRegistry::stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

PerWorkerIssuer::Issued PerWorkerRegistry::issue() {
  absl::MutexLock lock(&mu_);
  Issued issued;
  issued.id = absl::StrCat(prefix_, ++next_);
  issued.lease = std::make_shared<const PerWorkerLease>(
      [registry = weak_from_this(), id = issued.id]() mutable {
        if (std::shared_ptr<PerWorkerRegistry> r = registry.lock()) r->release(id);
      });
  live_[issued.id] = issued.lease;
  return issued;
}

absl::StatusOr<std::vector<std::shared_ptr<const PerWorkerLease>>> PerWorkerRegistry::pin(
    const RemoteStructure& args) const {
  std::vector<std::string_view> ids;
  collect_ids(args, ids);
  // Declared before the lock: a lease that turns out to be the last one
  // releases its id (taking the lock) only after the lock is given back.
  std::vector<std::shared_ptr<const PerWorkerLease>> pins;
  if (ids.empty()) return pins;
  absl::MutexLock lock(&mu_);
  for (std::string_view id : ids) {
    if (!id.starts_with(prefix_)) continue;  // Not made by this coordinator.
    auto it = live_.find(av(id));
    std::shared_ptr<const PerWorkerLease> lease = it == live_.end() ? nullptr : it->second.lock();
    if (lease == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "The per-worker iterator or resource with id ", av(id),
          " was released: every PerWorkerIterator / PerWorkerResource holding it was destroyed, "
          "and the workers dropped their copies. Keep the handle object (not only its handle() "
          "Structure) alive while scheduling functions with it."));
    }
    pins.push_back(std::move(lease));
  }
  return pins;
}

void PerWorkerRegistry::release(const std::string& id) {
  absl::MutexLock lock(&mu_);
  if (stopping_) return;  // stop() released it already.
  live_.erase(id);
  for (std::vector<std::string>& queue : queued_) queue.push_back(id);
}

void PerWorkerRegistry::flush() {
  absl::MutexLock lock(&mu_);
  if (!started_ || stopping_ || !anything_queued_locked()) return;
  const uint64_t wanted = ++flushes_wanted_;
  const auto done = [this, wanted]()
                        ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return flushes_done_ >= wanted; };
  mu_.Await(absl::Condition(&done));
}

size_t PerWorkerRegistry::num_live() const {
  absl::MutexLock lock(&mu_);
  return live_.size();
}

bool PerWorkerRegistry::batch_full_locked() const {
  return std::any_of(queued_.begin(), queued_.end(),
                     [&](const std::vector<std::string>& q) { return q.size() >= batch_size_; });
}

bool PerWorkerRegistry::anything_queued_locked() const {
  const auto non_empty = [](const std::vector<std::string>& q) { return !q.empty(); };
  return std::any_of(queued_.begin(), queued_.end(), non_empty) ||
         std::any_of(kept_.begin(), kept_.end(), non_empty);
}

void PerWorkerRegistry::loop() {
  while (true) {
    std::vector<std::vector<std::string>> batches(static_cast<size_t>(num_workers_));
    uint64_t round;
    bool last;
    {
      absl::MutexLock lock(&mu_);
      const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || flushes_wanted_ > flushes_done_ || batch_full_locked();
      };
      mu_.Await(absl::Condition(&ready));
      last = stopping_;
      round = flushes_wanted_;
      for (size_t w = 0; w < batches.size(); ++w) {
        batches[w] = std::move(kept_[w]);
        kept_[w].clear();
        batches[w].insert(batches[w].end(), std::make_move_iterator(queued_[w].begin()),
                          std::make_move_iterator(queued_[w].end()));
        queued_[w].clear();
        if (last) {
          for (const auto& [id, lease] : live_) batches[w].push_back(id);
        }
      }
      if (last) live_.clear();
    }
    for (size_t w = 0; w < batches.size(); ++w) {
      std::vector<std::string>& ids = batches[w];
      for (size_t start = 0; start < ids.size(); start += kMaxIdsPerRequest) {
        const size_t end = std::min(ids.size(), start + kMaxIdsPerRequest);
        const std::vector<std::string> chunk(ids.begin() + static_cast<std::ptrdiff_t>(start),
                                             ids.begin() + static_cast<std::ptrdiff_t>(end));
        const absl::Status sent = send_(static_cast<int>(w), chunk);
        if (sent.ok()) continue;
        if (last || !is_retryable(sent)) {
          PSFLOW_LOG(Warning, "Releasing ", ids.size() - start,
                     " per-worker iterators/resources on worker ", w,
                     " failed; the worker keeps them: ", sent.ToString());
          break;
        }
        // Kept for the next send (the worker may be back by then).
        absl::MutexLock lock(&mu_);
        std::vector<std::string>& kept = kept_[w];
        kept.insert(kept.begin(), ids.begin() + static_cast<std::ptrdiff_t>(start), ids.end());
        if (kept.size() > kMaxKeptPerWorker) {
          const size_t drop = kept.size() - kMaxKeptPerWorker;
          PSFLOW_LOG(Warning, "Worker ", w, " has been unreachable for ", kept.size(),
                     " per-worker releases; forgetting the oldest ", drop);
          kept.erase(kept.begin(), kept.begin() + static_cast<std::ptrdiff_t>(drop));
        }
        break;
      }
    }
    absl::MutexLock lock(&mu_);
    flushes_done_ = std::max(flushes_done_, round);
    if (last) {
      // Wakes flush() calls that raced with stop().
      flushes_done_ = std::max(flushes_done_, flushes_wanted_);
      return;
    }
  }
}

}  // namespace psflow::internal
