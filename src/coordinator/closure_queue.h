// The coordinator's closure queue and its error bookkeeping (TF's
// _CoordinatedClosureQueue) (internal).
#ifndef PSFLOW_COORDINATOR_CLOSURE_QUEUE_H_
#define PSFLOW_COORDINATOR_CLOSURE_QUEUE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/closure.h"

namespace psflow::internal {

// Where every closure is between schedule() and its result:
//   waiting  for its RemoteValue inputs (holds no worker);
//   queued   in the FIFO that every dispatcher takes from;
//   in flight on a worker, or being failed (see below).
// "Queued" for the size bound and for join() counts waiting + queued.
//
// Errors follow TF's model; the queue records the first application error,
// and from then on hands out no closure. The failure that recorded it then
// cancels everything waiting or queued (after its own result is set, so
// that closures fed by the failed one get an input error rather than
// CANCELLED). put(), wait() and done() report the error once no closure is
// in flight, and clear it. Failing a closure counts as in flight until the
// cancellations are done, so a report never overtakes them.
//
// Results are always set outside the lock: setting one runs the callbacks
// of dependent closures, which come back into the queue.
//
// Thread-safety: thread-safe. Owned through a shared_ptr, because input
// callbacks may outlive the coordinator (they hold only weak references).
class ClosureQueue : public std::enable_shared_from_this<ClosureQueue> {
 public:
  // `max_queued` <= 0: unbounded. `on_first_error` runs (outside the lock)
  // whenever an error is recorded while none is pending, to stop the
  // closures in flight.
  ClosureQueue(int64_t max_queued, absl::AnyInvocable<void()> on_first_error);

  // schedule(): blocks while full, then queues the closure (waiting first
  // if it has inputs). With an error pending, cancels the closure instead
  // and reports the error.
  [[nodiscard]] absl::Status put(std::shared_ptr<Closure> closure)
      ABSL_LOCKS_EXCLUDED(put_wait_mu_, mu_);
  // join(): blocks until nothing is waiting, queued or in flight, or an
  // error is pending; reports it. Blocks put() calls meanwhile.
  [[nodiscard]] absl::Status wait() ABSL_LOCKS_EXCLUDED(put_wait_mu_, mu_);
  // done(): reports a pending error; else whether nothing is left.
  [[nodiscard]] absl::StatusOr<bool> done() ABSL_LOCKS_EXCLUDED(mu_);

  // Dispatchers. get() blocks for the next closure (now in flight); null
  // once stopped.
  [[nodiscard]] std::shared_ptr<Closure> get() ABSL_LOCKS_EXCLUDED(mu_);
  // The closure in flight succeeded; `result` becomes its value.
  void mark_finished(const std::shared_ptr<Closure>& closure, Structure result)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The closure in flight failed with an application error; `in_doubt`
  // when its last worker failed mid-call (see num_in_doubt).
  void mark_failed(const std::shared_ptr<Closure>& closure, absl::Status error,
                   bool in_doubt = false) ABSL_LOCKS_EXCLUDED(mu_);
  // The closure in flight did not complete because its worker failed: it
  // goes back to the tail of the queue for any worker, or is cancelled when
  // an error is pending. May exceed the size bound (by at most one closure
  // per worker), so that a dispatcher never blocks on it.
  void put_back(std::shared_ptr<Closure> closure) ABSL_LOCKS_EXCLUDED(mu_);

  // Fails everything waiting or queued with `error` (not CANCELLED: the
  // queue itself gave up on them, e.g. no worker is left) and records
  // `error` as a closure failure would, so that join/schedule/done report
  // it once. Returns how many closures it failed.
  int64_t abort_queued(const absl::Status& error) ABSL_LOCKS_EXCLUDED(mu_);

  // Cancels everything waiting or queued (CANCELLED, "coordinator
  // destroyed"), and makes get() return null and put() fail. Closures in
  // flight finish as usual (put_back cancels them).
  void stop() ABSL_LOCKS_EXCLUDED(mu_);
  // Blocks until nothing is in flight (after stop(): until no thread works
  // on a closure of this queue any more).
  void await_no_in_flight() ABSL_LOCKS_EXCLUDED(mu_);

  // Closures that ended without a complete run after a worker failed
  // while running them (put back, then cancelled or failed before another
  // worker ran them through, or failed as a poison closure): their updates
  // may have reached some parameter servers and not others. Over the
  // queue's life.
  [[nodiscard]] int64_t num_in_doubt() const ABSL_LOCKS_EXCLUDED(mu_);

  // Closures queued (waiting included) and in flight, for tests and logs.
  [[nodiscard]] int64_t num_queued() const ABSL_LOCKS_EXCLUDED(mu_);
  [[nodiscard]] int64_t num_in_flight() const ABSL_LOCKS_EXCLUDED(mu_);
  // When a closure last finished or failed (construction time before that).
  [[nodiscard]] absl::Time last_finish() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Called once every input of `closure` is READY.
  void on_inputs_ready(std::shared_ptr<Closure> closure);
  void watch_inputs(const std::shared_ptr<Closure>& closure);
  // Records `error` if none is pending; true if it did.
  bool record_error_locked(const absl::Status& error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends an error being handled by the caller (counted in flight): cancels
  // what waits or is queued when `first`, then leaves the in-flight count.
  void finish_failure(bool first);
  // Empties the FIFO and the waiting closures, counting those that ran on a
  // worker that failed as in doubt.
  std::vector<std::shared_ptr<Closure>> take_all_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Waits for no closure in flight, then returns and clears the pending
  // error (OK when none).
  absl::Status raise_if_error_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  int64_t queued_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int64_t>(fifo_.size() + waiting_.size());
  }
  bool has_room_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return max_queued_ <= 0 || queued_locked() < max_queued_;
  }

  const int64_t max_queued_;
  absl::AnyInvocable<void()> on_first_error_;

  // Held by put() and wait(): a join() is a cut-off for other threads'
  // schedule() calls, as in TF.
  absl::Mutex put_wait_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<Closure>> fifo_ ABSL_GUARDED_BY(mu_);
  // Keyed by closure id: cancelled in schedule order.
  std::map<uint64_t, std::shared_ptr<Closure>> waiting_ ABSL_GUARDED_BY(mu_);
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t in_doubt_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_finish_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_CLOSURE_QUEUE_H_
