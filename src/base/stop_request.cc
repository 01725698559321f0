#include "base/stop_request.h"

#include <utility>

namespace psflow::internal {

StopRequest::Callback::Callback(Callback&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), id_(std::exchange(other.id_, 0)) {}

StopRequest::Callback& StopRequest::Callback::operator=(Callback&& other) noexcept {
  if (this != &other) {
    reset();
    owner_ = std::exchange(other.owner_, nullptr);
    id_ = std::exchange(other.id_, 0);
  }
  return *this;
}

StopRequest::Callback::~Callback() { reset(); }

void StopRequest::Callback::reset() {
  if (owner_ != nullptr) owner_->remove(id_);
  owner_ = nullptr;
  id_ = 0;
}

std::optional<StopActivity> StopRequest::request(absl::Status reason) {
  if (reason.ok()) reason = absl::CancelledError("stop requested");
  StopActivity activity;
  {
    absl::MutexLock lock(&mu_);
    if (requested_) return std::nullopt;
    requested_ = true;
    reason_ = reason;
    activity = activity_;
  }
  absl::MutexLock lock(&handlers_mu_);
  handlers_ran_ = true;
  for (auto& [id, handler] : handlers_) handler(reason);
  return activity;
}

bool StopRequest::requested() const {
  absl::MutexLock lock(&mu_);
  return requested_;
}

absl::Status StopRequest::reason() const {
  absl::MutexLock lock(&mu_);
  return reason_;
}

bool StopRequest::wait_for(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(&requested_), timeout);
}

bool StopRequest::set_activity(StopActivity activity) {
  absl::MutexLock lock(&mu_);
  activity_ = std::move(activity);
  return !requested_;
}

StopActivity StopRequest::activity() const {
  absl::MutexLock lock(&mu_);
  return activity_;
}

StopRequest::Callback StopRequest::on_stop(Handler handler) {
  absl::MutexLock lock(&handlers_mu_);
  if (handlers_ran_) {
    handler(reason());
    return Callback();
  }
  const uint64_t id = next_id_++;
  handlers_.emplace(id, std::move(handler));
  return Callback(this, id);
}

void StopRequest::remove(uint64_t id) {
  absl::MutexLock lock(&handlers_mu_);
  handlers_.erase(id);
}

}  // namespace psflow::internal
