#include "psflow/remote_value.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "coordinator/remote_value_state.h"

namespace psflow {

using internal::av;

namespace {

absl::Status empty_remote_value_error() {
  return absl::FailedPreconditionError(
      "This RemoteValue is empty (default-constructed); RemoteValues come from "
      "ClusterCoordinator::schedule().");
}

}  // namespace

std::string_view remote_value_status_name(RemoteValueStatus status) {
  switch (status) {
    case RemoteValueStatus::kNotReady: return "NOT_READY";
    case RemoteValueStatus::kAborted: return "ABORTED";
    case RemoteValueStatus::kReady: return "READY";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, RemoteValueStatus status) {
  return os << remote_value_status_name(status);
}

absl::StatusOr<Structure> RemoteValue::fetch() const {
  if (!state_) return empty_remote_value_error();
  return state_->fetch();
}

bool RemoteValue::is_ready() const {
  return !state_ || state_->status() != RemoteValueStatus::kNotReady;
}

void RemoteValue::wait() const {
  if (state_) state_->wait();
}

bool RemoteValue::wait(absl::Duration timeout) const { return !state_ || state_->wait(timeout); }

RemoteValueStatus RemoteValue::status() const {
  // An empty handle has nothing to wait for; fetch() explains.
  return state_ ? state_->status() : RemoteValueStatus::kReady;
}

uint64_t RemoteValue::closure_id() const { return state_ ? state_->closure_id() : 0; }

std::string RemoteValue::function_name() const {
  return state_ ? state_->function_name() : std::string();
}

std::string RemoteValue::debug_string() const {
  if (!state_) return "<empty RemoteValue>";
  return absl::StrCat("<RemoteValue of closure ", state_->closure_id(), " '",
                      state_->function_name(),
                      "': ", av(remote_value_status_name(state_->status())), ">");
}

}  // namespace psflow
