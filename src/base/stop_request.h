// A request to stop long-running work early (SIGTERM, SIGINT): made once,
// from any thread, and seen by the work it interrupts, which polls it,
// waits on it, or is told through callbacks (to cancel what it waits for).
#ifndef PSFLOW_BASE_STOP_REQUEST_H_
#define PSFLOW_BASE_STOP_REQUEST_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace psflow::internal {

// What the work is doing, as whoever stops it needs to know: `what` for
// messages ("waiting for /job:ps/replica:0/task:1 at 10.0.0.2:2222 to
// answer"), and `at_once`: stopping there loses nothing (there is nothing
// to save yet, or the state is being rebuilt anyway), so a stop may end the
// process at once instead of waiting for the work to notice.
// Thread-safety: a value type.
struct StopActivity {
  std::string what;
  bool at_once = false;
};

// Thread-safety: thread-safe. Handlers run on the thread that calls
// request() (or on_stop(), when the stop came first), one at a time, and
// hold up whoever drops a Callback meanwhile; they must not call on_stop()
// or drop a Callback.
class StopRequest {
 public:
  using Handler = absl::AnyInvocable<void(const absl::Status& reason)>;

  // Unregisters its handler on destruction, waiting for it if it runs.
  // Thread-safety: move-only; destroy on any thread but not from a handler.
  class Callback {
   public:
    Callback() = default;
    Callback(Callback&& other) noexcept;
    Callback& operator=(Callback&& other) noexcept;
    ~Callback();

   private:
    friend class StopRequest;
    Callback(StopRequest* owner, uint64_t id) : owner_(owner), id_(id) {}
    void reset();
    StopRequest* owner_ = nullptr;
    uint64_t id_ = 0;
  };

  StopRequest() = default;
  StopRequest(const StopRequest&) = delete;
  StopRequest& operator=(const StopRequest&) = delete;

  // Records a stop for `reason` (not OK; the first request wins), runs the
  // handlers, and returns the activity the work was in when the stop was
  // recorded; nullopt when a stop had been requested already.
  std::optional<StopActivity> request(absl::Status reason) ABSL_LOCKS_EXCLUDED(handlers_mu_, mu_);

  [[nodiscard]] bool requested() const ABSL_LOCKS_EXCLUDED(mu_);
  // Why the work stops; OK while no stop was requested.
  [[nodiscard]] absl::Status reason() const ABSL_LOCKS_EXCLUDED(mu_);
  // Waits for a stop request, at most `timeout`; true once one was made.
  [[nodiscard]] bool wait_for(absl::Duration timeout) const ABSL_LOCKS_EXCLUDED(mu_);

  // Says what the work does now (see StopActivity), atomically with
  // respect to request(). False when a stop was requested already: the
  // caller stops instead of starting `activity` (which then only names
  // what the stopping work does, for messages).
  [[nodiscard]] bool set_activity(StopActivity activity) ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] StopActivity activity() const ABSL_LOCKS_EXCLUDED(mu_);

  // Runs `handler(reason)` when a stop is requested, or now (on this thread)
  // when one was requested already; never after the Callback is gone.
  [[nodiscard]] Callback on_stop(Handler handler) ABSL_LOCKS_EXCLUDED(handlers_mu_, mu_);

 private:
  void remove(uint64_t id) ABSL_LOCKS_EXCLUDED(handlers_mu_);

  // Held while handlers run, so that removing one waits for it.
  absl::Mutex handlers_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::map<uint64_t, Handler> handlers_ ABSL_GUARDED_BY(handlers_mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(handlers_mu_) = 1;
  bool handlers_ran_ ABSL_GUARDED_BY(handlers_mu_) = false;

  mutable absl::Mutex mu_;
  bool requested_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
  StopActivity activity_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_STOP_REQUEST_H_
