#include "worker/per_worker_objects.h"

#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

constexpr std::string_view kIteratorPrefix = "psflow/iterator/";
constexpr std::string_view kResourcePrefix = "psflow/resource/";
// Outside both prefixes, so that it is never counted as an object.
constexpr std::string_view kReleasedKey = "psflow/released_per_worker";
constexpr std::string_view kInputErrorPayloadUrl = "type.psflow/psflow.PerWorkerInputError";

// The ids released last, oldest first. Thread-safety: thread-safe.
class ReleasedIds {
 public:
  void add(const std::string& id) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    if (!set_.insert(id).second) return;
    order_.push_back(id);
    if (order_.size() > kRememberedReleases) {
      set_.erase(order_.front());
      order_.pop_front();
    }
  }
  bool contains(std::string_view id) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return set_.contains(av(id));
  }

 private:
  mutable absl::Mutex mu_;
  absl::flat_hash_set<std::string> set_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::string per_worker_iterator_key(std::string_view id) {
  return absl::StrCat(av(kIteratorPrefix), av(id));
}

std::string per_worker_resource_key(std::string_view id) {
  return absl::StrCat(av(kResourcePrefix), av(id));
}

PerWorkerObjectCounts count_per_worker_objects(const WorkerResources& resources) {
  return PerWorkerObjectCounts{static_cast<int64_t>(resources.count_with_prefix(kIteratorPrefix)),
                               static_cast<int64_t>(resources.count_with_prefix(kResourcePrefix))};
}

absl::Status validate_per_worker_ids(const std::vector<std::string>& ids) {
  if (ids.size() > kMaxReleasedIdsPerRequest) {
    return absl::InvalidArgumentError(absl::StrCat("DisposePerWorker takes at most ",
                                                   kMaxReleasedIdsPerRequest, " ids at once; got ",
                                                   ids.size(), ". Send them in batches."));
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i].empty() || ids[i].size() > kMaxPerWorkerIdBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("DisposePerWorker: id ", i, " is ", ids[i].size(),
                       " bytes long; per-worker handle ids are 1 to ", kMaxPerWorkerIdBytes,
                       " bytes (PerWorkerIterator / PerWorkerResource handles)."));
    }
  }
  return absl::OkStatus();
}

int64_t release_per_worker_objects(WorkerResources& resources,
                                   const std::vector<std::string>& ids) {
  auto released = resources.get_or_create_shared<ReleasedIds>(kReleasedKey);
  int64_t dropped = 0;
  for (const std::string& id : ids) {
    // Remembered first: a closure building the object right now then
    // either finds it released or builds it before the erase below.
    released->add(id);
    dropped += resources.erase(per_worker_iterator_key(id)) ? 1 : 0;
    dropped += resources.erase(per_worker_resource_key(id)) ? 1 : 0;
  }
  return dropped;
}

bool per_worker_released(WorkerResources& resources, std::string_view id) {
  return resources.get_or_create_shared<ReleasedIds>(kReleasedKey)->contains(id);
}

absl::Status mark_per_worker_input_error(absl::Status input_error) {
  if (!input_error.ok()) input_error.SetPayload(av(kInputErrorPayloadUrl), absl::Cord("1"));
  return input_error;
}

bool is_per_worker_input_error(const absl::Status& status) {
  return status.GetPayload(av(kInputErrorPayloadUrl)).has_value();
}

}  // namespace psflow::internal
