#include "train/carried_read.h"

#include <utility>

namespace psflow::internal {

CarriedRead::~CarriedRead() = default;

std::unique_ptr<ParameterPrefetch> CarriedRead::take(std::string_view run_id, absl::Time now) {
  std::unique_ptr<ParameterPrefetch> read;
  bool usable = false;
  {
    absl::MutexLock lock(&mu_);
    read = std::move(read_);
    usable = read != nullptr && run_id_ == run_id && now <= deadline_;
  }
  // A dropped read is destroyed here, outside the lock: that waits for it.
  if (!usable) return nullptr;
  return read;
}

void CarriedRead::put(std::string run_id, std::unique_ptr<ParameterPrefetch> read,
                      absl::Time deadline) {
  std::unique_ptr<ParameterPrefetch> dropped;
  absl::MutexLock lock(&mu_);
  dropped = std::move(read_);
  run_id_ = std::move(run_id);
  read_ = std::move(read);
  deadline_ = deadline;
  // `dropped` is destroyed after the lock is released (declared before it).
}

}  // namespace psflow::internal
