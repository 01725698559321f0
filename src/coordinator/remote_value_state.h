// The shared state behind RemoteValue handles (internal).
#ifndef PSFLOW_COORDINATOR_REMOTE_VALUE_STATE_H_
#define PSFLOW_COORDINATOR_REMOTE_VALUE_STATE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "psflow/remote_value.h"
#include "psflow/structure.h"

namespace psflow::internal {

// One closure's result slot. Only the closure's current owner (queue,
// dispatcher) sets it, so a second set_result is a programming error.
// Thread-safety: thread-safe.
class RemoteValueState {
 public:
  using Callback = absl::AnyInvocable<void() &&>;

  RemoteValueState(uint64_t closure_id, std::string function_name)
      : closure_id_(closure_id), function_name_(std::move(function_name)) {}

  [[nodiscard]] uint64_t closure_id() const { return closure_id_; }
  [[nodiscard]] const std::string& function_name() const { return function_name_; }

  // NOT_READY or ABORTED -> READY, then runs the on_ready callbacks on this
  // thread (without holding the lock).
  void set_result(absl::StatusOr<Structure> result) ABSL_LOCKS_EXCLUDED(mu_);
  // NOT_READY or READY -> ABORTED: the value is lost with its worker and
  // will be rebuilt (per-worker resources).
  void set_aborted() ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] RemoteValueStatus status() const ABSL_LOCKS_EXCLUDED(mu_);
  void wait() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] bool wait(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits, then the value, the error, or CANCELLED when ABORTED.
  [[nodiscard]] absl::StatusOr<Structure> fetch() const ABSL_LOCKS_EXCLUDED(mu_);
  // The value or error; requires READY (a programming error otherwise).
  [[nodiscard]] absl::StatusOr<Structure> result() const ABSL_LOCKS_EXCLUDED(mu_);
  // Whether READY with an error; false otherwise.
  [[nodiscard]] bool failed() const ABSL_LOCKS_EXCLUDED(mu_);

  // Which worker process also keeps the value (its result cache, for
  // same-worker chaining): set by the dispatcher before set_result, when
  // the worker said it kept the result.
  struct Holder {
    uint64_t result_session = 0;  // Of the coordinator that ran it.
    int worker_index = -1;
    uint64_t incarnation = 0;
  };
  void set_holder(Holder holder) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    holder_ = holder;
  }
  [[nodiscard]] std::optional<Holder> holder() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return holder_;
  }

  // Runs `callback` once READY: at once, on this thread, when it already
  // is; otherwise on the thread that sets the result. Callbacks must not
  // block; they are what lets a dependent closure move on.
  void on_ready(Callback callback) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  bool available() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return status_ != RemoteValueStatus::kNotReady;
  }

  const uint64_t closure_id_;
  const std::string function_name_;
  mutable absl::Mutex mu_;
  RemoteValueStatus status_ ABSL_GUARDED_BY(mu_) = RemoteValueStatus::kNotReady;
  absl::StatusOr<Structure> result_ ABSL_GUARDED_BY(mu_);
  std::vector<Callback> callbacks_ ABSL_GUARDED_BY(mu_);
  std::optional<Holder> holder_ ABSL_GUARDED_BY(mu_);
};

// Reaches the state inside a RemoteValue.
struct RemoteValueAccess {
  static const std::shared_ptr<RemoteValueState>& state(const RemoteValue& value) {
    return value.state_;
  }
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_REMOTE_VALUE_STATE_H_
