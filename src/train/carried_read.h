// The read of a closure's first step's parameters, started during the last
// step of the closure before it on the same worker (internal; overlap
// across closures, docs/overlap.md): the link's pull direction stays busy
// from one closure to the next instead of idling through the last push and
// the first read.
#ifndef PSFLOW_TRAIN_CARRIED_READ_H_
#define PSFLOW_TRAIN_CARRIED_READ_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "train/parameter_prefetch.h"

namespace psflow::internal {

// Holds at most one read in flight (or done) for the next closure of one
// training run. A read is handed over only to a closure of the same run
// that takes it before the read's deadline: a late read would be older
// than the one the closure makes itself, by more than the staleness
// docs/overlap.md states.
// Thread-safety: thread-safe.
class CarriedRead {
 public:
  CarriedRead() = default;
  // Waits for the read kept, if any.
  ~CarriedRead();
  CarriedRead(const CarriedRead&) = delete;
  CarriedRead& operator=(const CarriedRead&) = delete;

  // The read kept for `run_id` if `now` is before its deadline, else null;
  // the read kept (handed over or dropped) is no longer kept.
  [[nodiscard]] std::unique_ptr<ParameterPrefetch> take(std::string_view run_id, absl::Time now);
  // Keeps `read` (a ParameterPrefetch with a read started) for the next
  // closure of `run_id`, until `deadline`; drops any read kept before.
  void put(std::string run_id, std::unique_ptr<ParameterPrefetch> read, absl::Time deadline);

 private:
  absl::Mutex mu_;
  std::string run_id_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<ParameterPrefetch> read_ ABSL_GUARDED_BY(mu_);
  absl::Time deadline_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_CARRIED_READ_H_
