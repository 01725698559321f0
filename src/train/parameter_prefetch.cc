#include "train/parameter_prefetch.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace psflow::internal {

ParameterPrefetch::ParameterPrefetch(size_t num_groups, Read read)
    : num_groups_(num_groups), read_(std::move(read)), thread_([this] { loop(); }) {}

ParameterPrefetch::~ParameterPrefetch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    changed_.SignalAll();
  }
  thread_.join();
}

void ParameterPrefetch::start(Before before) {
  absl::MutexLock lock(&mu_);
  while (reading_ || request_.has_value()) changed_.Wait(&mu_);
  results_.assign(num_groups_, std::nullopt);
  request_ = std::move(before);
  changed_.SignalAll();
}

absl::StatusOr<std::vector<Tensor>> ParameterPrefetch::take(size_t g) {
  absl::MutexLock lock(&mu_);
  if (g >= results_.size()) {
    return absl::InternalError(
        absl::StrCat("parameter group ", g, " of ", results_.size(), " taken before a read"));
  }
  while (!results_[g].has_value()) changed_.Wait(&mu_);
  absl::StatusOr<std::vector<Tensor>> out = std::move(*results_[g]);
  results_[g] = absl::InternalError(absl::StrCat("parameter group ", g, " taken twice"));
  return out;
}

void ParameterPrefetch::loop() {
  mu_.Lock();
  while (true) {
    while (!request_.has_value() && !stop_) changed_.Wait(&mu_);
    if (!request_.has_value()) break;  // stop_ and no read asked for
    Before before = std::move(*request_);
    request_.reset();
    reading_ = true;
    mu_.Unlock();
    absl::Status ready = before ? before() : absl::OkStatus();
    for (size_t g = 0; g < num_groups_; ++g) {
      absl::StatusOr<std::vector<Tensor>> got = ready.ok() ? read_(g) : ready;
      if (!got.ok()) ready = got.status();  // later groups fail alike, unread
      absl::MutexLock lock(&mu_);
      results_[g] = std::move(got);
      changed_.SignalAll();
    }
    mu_.Lock();
    reading_ = false;
    changed_.SignalAll();
  }
  mu_.Unlock();
}

}  // namespace psflow::internal
