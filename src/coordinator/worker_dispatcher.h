// The thread that feeds one worker from the closure queue (TF's Worker and
// its WorkerClosureProcessingLoop) (internal).
#ifndef PSFLOW_COORDINATOR_WORKER_DISPATCHER_H_
#define PSFLOW_COORDINATOR_WORKER_DISPATCHER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "coordinator/closure_queue.h"
#include "coordinator/worker_connection.h"

namespace psflow::internal {

// After `start_delay` (cut short by join()), takes closures from the queue
// and runs them on its worker, keeping up to
// `max_in_flight` runs outstanding (TF keeps one; more hides the network
// round trip between one closure and the next). Each outcome is handed back
// to the queue as finished, failed or (worker failure) put back, on the
// thread that completes the run.
//
// A worker failure (a retryable transport error) marks the worker lost: the
// closure goes back to the queue for the other workers, and the dispatcher
// takes no closure until probe() answers again, probing with a backoff
// doubling from 100 ms to 5 s. A returning worker is a fresh process: its
// per-worker resources are rebuilt as its functions first use them. A
// closure that was running when a healthy worker failed counts a worker
// failure; after `max_worker_failures` of them it fails as a poison
// closure instead of being retried.
//
// Same-worker chaining (a non-zero `result_session` and a connection that
// supports_result_refs): the worker keeps each result in its bounded result
// cache, and a RemoteValue argument produced by this worker's current
// process (same incarnation) is sent as a reference rather than its value.
// When the worker answers that it no longer holds it, the closure is sent
// again at once with values, which users never see.
//
// Thread-safety: thread-safe.
class WorkerDispatcher {
 public:
  // `max_in_flight` >= 1; capped by the connection's own limit.
  WorkerDispatcher(int worker_index, std::unique_ptr<WorkerConnection> connection,
                   std::shared_ptr<ClosureQueue> queue, int max_in_flight = 1,
                   int max_worker_failures = 0, uint64_t session = 0, uint64_t result_session = 0,
                   absl::Duration start_delay = absl::ZeroDuration());
  // join() must have returned (or start() never been called).
  ~WorkerDispatcher();
  WorkerDispatcher(const WorkerDispatcher&) = delete;
  WorkerDispatcher& operator=(const WorkerDispatcher&) = delete;

  void start();
  // Returns once the queue has been stopped (ClosureQueue::stop) and every
  // run in flight is done.
  void join() ABSL_LOCKS_EXCLUDED(mu_);

  // Asks the worker to stop the closures it runs, if any (best effort).
  void cancel_running() ABSL_LOCKS_EXCLUDED(mu_);

  [[nodiscard]] int worker_index() const { return worker_index_; }
  [[nodiscard]] std::string task_name() const { return connection_->task_name(); }

  // Since when the worker does not answer (unset while it does), and the
  // last error (of its failed run or of the latest probe).
  struct Health {
    std::optional<absl::Time> lost_since;
    absl::Status last_error;
  };
  [[nodiscard]] Health health() const ABSL_LOCKS_EXCLUDED(mu_);

  // Releases per-worker objects on the worker (WorkerConnection::
  // dispose_per_worker), bounded to a few seconds; UNAVAILABLE at once
  // while the worker is lost.
  [[nodiscard]] absl::Status dispose_per_worker(const std::vector<std::string>& ids)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void loop();
  // `resend`: the same run again (with values), not a new attempt.
  void start_run(std::shared_ptr<Closure> closure, bool resend = false);
  void on_run_done(const std::shared_ptr<Closure>& closure, bool was_healthy, RunResult result);
  // Blocks until the worker answers a probe, or join() starts.
  void await_recovery();

  const int worker_index_;
  const std::unique_ptr<WorkerConnection> connection_;
  const std::shared_ptr<ClosureQueue> queue_;
  const int max_in_flight_;
  const int max_worker_failures_;
  const uint64_t session_;         // Sent with every run (exactly-once updates).
  const uint64_t result_session_;  // Same-worker chaining; 0: off.
  const absl::Duration start_delay_;
  // The worker process last heard from (RunResult::incarnation); 0 until
  // the first answer.
  std::atomic<uint64_t> incarnation_{0};
  // Times the worker answered a probe after being lost.
  std::atomic<int64_t> recoveries_{0};

  mutable absl::Mutex mu_;
  // Closures whose runs are outstanding.
  absl::flat_hash_set<uint64_t> running_ ABSL_GUARDED_BY(mu_);
  // Set from a worker failure until a probe succeeds (the worker is
  // healthy while it is unset).
  std::optional<absl::Time> lost_since_ ABSL_GUARDED_BY(mu_);
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
  bool joining_ ABSL_GUARDED_BY(mu_) = false;

  std::thread thread_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_WORKER_DISPATCHER_H_
