#include "coordinator/remote_value_state.h"

#include <utility>

#include "base/logging.h"
#include "coordinator/closure_errors.h"

namespace psflow::internal {

void RemoteValueState::set_result(absl::StatusOr<Structure> result) {
  std::vector<Callback> callbacks;
  {
    absl::MutexLock lock(&mu_);
    PSFLOW_CHECK(status_ != RemoteValueStatus::kReady, "closure ", closure_id_, " ('",
                 function_name_, "') finished twice");
    result_ = std::move(result);
    status_ = RemoteValueStatus::kReady;
    callbacks.swap(callbacks_);
  }
  for (Callback& callback : callbacks) std::move(callback)();
}

void RemoteValueState::set_aborted() {
  absl::MutexLock lock(&mu_);
  status_ = RemoteValueStatus::kAborted;
}

RemoteValueStatus RemoteValueState::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

void RemoteValueState::wait() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &RemoteValueState::available));
}

bool RemoteValueState::wait(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(this, &RemoteValueState::available), timeout);
}

absl::StatusOr<Structure> RemoteValueState::fetch() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &RemoteValueState::available));
  if (status_ == RemoteValueStatus::kAborted) return closure_aborted_error();
  return result_;
}

absl::StatusOr<Structure> RemoteValueState::result() const {
  absl::MutexLock lock(&mu_);
  PSFLOW_CHECK(status_ == RemoteValueStatus::kReady, "closure ", closure_id_, " has no result yet");
  return result_;
}

bool RemoteValueState::failed() const {
  absl::MutexLock lock(&mu_);
  return status_ == RemoteValueStatus::kReady && !result_.ok();
}

void RemoteValueState::on_ready(Callback callback) {
  {
    absl::MutexLock lock(&mu_);
    if (status_ != RemoteValueStatus::kReady) {
      callbacks_.push_back(std::move(callback));
      return;
    }
  }
  std::move(callback)();
}

}  // namespace psflow::internal
