// ClusterCoordinator: schedules registered functions on workers and
// collects their results (TF's tf.distribute.coordinator.ClusterCoordinator).
#ifndef PSFLOW_CLUSTER_COORDINATOR_H_
#define PSFLOW_CLUSTER_COORDINATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/function_registry.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/remote_value.h"
#include "psflow/structure.h"
#include "psflow/task_state.h"
#include "psflow/variable_handle.h"

namespace psflow {

class ParameterServerStrategy;
namespace internal {
class Cluster;             // The implementation (runtime).
struct CoordinatorAccess;  // The runtime's own constructors (other transports).
}  // namespace internal

struct ClusterCoordinatorOptions {
  // Closures that may wait to run (queued, or waiting for RemoteValue
  // arguments) before schedule() blocks; <= 0 means unbounded. TF's
  // _CLOSURE_QUEUE_MAX_SIZE.
  int64_t max_queued_closures = 256 * 1024;
  // Where schedule() checks function names, and where in-process workers
  // find the functions; null means FunctionRegistry::global(). Must outlive
  // the coordinator.
  const FunctionRegistry* registry = nullptr;
  // For create_in_process: how functions reach variables
  // (WorkerContext::variable), usually strategy.client_lookup(). Workers of
  // a real cluster reach their cluster's ps tasks themselves.
  VariableClientLookup variables = nullptr;
  // Closures sent to one worker before the previous ones have finished
  // (gRPC workers; in-process workers take one at a time). TF keeps 1;
  // more hides the round trip between closures, which matters for short
  // closures: the worker still runs its closures one at a time, in order.
  int max_in_flight_per_worker = 1;
  // A closure whose worker fails mid-call is run again on another worker
  // (TF retries without bound). After this many such failures of healthy
  // workers it is presumed to crash them (a poison closure) and fails with
  // UNAVAILABLE instead. <= 0: no bound, as TF.
  int max_worker_failures_per_closure = 5;
  // Exactly-once updates: every closure's variable updates carry (this
  // coordinator's random session, closure id, sequence), and each ps
  // applies a key at most once, so a closure retried after its worker died
  // mid-call never applies an update twice (TF promises at-least-once).
  // Holds for functions that make their updates from one thread in a
  // deterministic order, and within each ps's window of the last 2^20
  // updates. False: TF's at-least-once.
  bool exactly_once = true;
  // Same-worker chaining (gRPC workers): each worker keeps the results of
  // its recent closures in a bounded cache (ExecutorServiceOptions::
  // result_cache_*), and a RemoteValue argument computed by the worker
  // (process) that runs the closure is sent as a reference to that result
  // rather than its value. A worker that no longer holds it says so and
  // gets the value instead, invisibly. False: always send values.
  bool same_worker_chaining = true;
  // How long a gRPC worker may leave the coordinator's connection
  // unanswered (a paused process, a vanished machine) before its closures
  // move to other workers: half of it until a keepalive ping, half waiting
  // for its ack (the ping comes after at least 6 s: servers refuse pings
  // more often than every 5 s).
  absl::Duration worker_timeout = absl::Seconds(20);
  // The watchdog (see coordinator/watchdog.h). When closures are queued or
  // running and none has finished for watchdog_timeout, a warning names
  // what is waiting and each worker not answering, again every period
  // (TF's watchdog, which is off by default there); <= 0: off.
  absl::Duration watchdog_timeout = absl::Minutes(2);
  // Where the watchdog writes every thread's stack of this process each
  // time it reports a stall (a new file watchdog-stacks-<time>-<pid>.txt;
  // its path ends the report), as TF's watchdog dumps them. Empty: no
  // dump. `psflow train` sets its run directory.
  std::string stack_dump_dir;
  // Heartbeats behind get_task_states (TF's coordination service): every
  // heartbeat_interval the coordinator asks each worker and ps task of the
  // strategy's cluster for its status (GetStatus); a task that has not
  // answered for heartbeat_timeout (TF's default: 10 s) is unavailable
  // until it answers again. heartbeat_interval <= 0: no heartbeats (the
  // states then say only whether the workers' dispatchers have lost them).
  // In-process workers have no heartbeats either. heartbeat_timeout must be
  // > 0 when heartbeats are on.
  absl::Duration heartbeat_interval = absl::Seconds(1);
  absl::Duration heartbeat_timeout = absl::Seconds(10);
  // When every worker has been lost for this long while closures are
  // queued, they fail with UNAVAILABLE naming the workers and their last
  // errors (join/schedule/done report it once, as any closure error),
  // rather than waiting forever. TF lets a lost worker wait 3600 s for its
  // recovery. <= 0: wait forever.
  absl::Duration all_workers_lost_timeout = absl::Hours(1);
  // Per-worker iterators and resources whose last handle is gone are
  // released on the workers in batches of this many (TFF's
  // dispose_batch_size), and at every join(); at least 1.
  int per_worker_dispose_batch_size = 20;
  // Staggered start (TF's TF_COORDINATOR_SCHEDULE_START_DELAY and
  // _START_DELAY_MAX): worker i takes its first closure only
  // schedule_start_delay * i after the coordinator starts, capped at
  // schedule_start_delay_max when that is positive, so that a large job's
  // workers do not all pull the parameters at the same moment. Zero (the
  // default) starts every worker at once; negative durations are refused.
  absl::Duration schedule_start_delay = absl::ZeroDuration();
  absl::Duration schedule_start_delay_max = absl::ZeroDuration();

  // Field by field (create() for a strategy that has a coordinator needs
  // the options that coordinator was made with).
  friend bool operator==(const ClusterCoordinatorOptions&,
                         const ClusterCoordinatorOptions&) = default;
};

// Runs closures (a registered function and its arguments) on a pool of
// workers: one FIFO, one dispatcher per worker, at most
// max_in_flight_per_worker closures in flight per worker (1, as TF, unless
// asked); idle workers take the next closure. A closure runs at
// least once; it may run more than once if its worker fails mid-call, but
// its variable updates apply once (see exactly_once).
//
// Error model (TF's, application errors): the first closure error is kept
// and later ones are dropped. At that moment every queued closure is
// cancelled (its RemoteValue gives CANCELLED "The corresponding function is
// cancelled. Please reschedule the function."), closures still running are
// asked to stop, and no further closure starts. The next schedule(), join()
// or done() reports the error, once, after no closure is running any more
// (errors of those last closures are absorbed: set on their own
// RemoteValues, never reported); then the coordinator is usable again. A
// schedule() that reports the error does not queue its closure. A closure
// put back after a worker failure while an error is pending is cancelled.
// (TF's worker threads may still start queued closures until the error is
// reported; here nothing starts after it is recorded, which makes the
// outcome of every closure deterministic.)
//
// Thread-safety: thread-safe. join() holds off schedule() calls of other
// threads until it returns, as TF's.
class ClusterCoordinator {
 public:
  // TF's ClusterCoordinator(strategy): one gRPC connection per worker task
  // of the strategy's cluster. Connections are lazy: a worker that is down
  // fails its closures over to the others (and is retried with backoff).
  //
  // One coordinator per strategy, as TF's (a per-strategy singleton): while
  // a coordinator made for `strategy` lives, create() returns another
  // handle to that same coordinator (one queue, one set of workers, one
  // error state: a closure scheduled through one handle is joined, and its
  // error reported, through any of them) rather than a second, independent
  // one. The coordinator stops when its last handle is destroyed (TF: when
  // the strategy releases it); a create() after that makes a new one.
  // TF ignores the arguments of the later calls; here they must equal the
  // first call's `options`, else FAILED_PRECONDITION (a different queue
  // bound or timeout would silently not apply).
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> create(
      const ParameterServerStrategy& strategy, ClusterCoordinatorOptions options = {});
  // Workers that run functions on their own threads in this process.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> create_in_process(
      int num_workers, ClusterCoordinatorOptions options = {});

  // The last handle of a coordinator cancels queued closures (CANCELLED),
  // asks running ones to stop, waits for them, and stops every thread.
  // RemoteValues stay usable.
  ~ClusterCoordinator();
  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;

  // Queues `function_name(args)` and returns its RemoteValue at once; blocks
  // only while max_queued_closures closures wait. A closure with RemoteValue
  // arguments waits, without taking a worker, until they are ready, then
  // joins the tail of the queue; a failed argument fails it with an input
  // error (is_closure_input_error) without running it.
  // Errors: NOT_FOUND for a function not registered (naming close names);
  // INVALID_ARGUMENT for an empty RemoteValue argument; the pending error of
  // an earlier closure (see above), in which case nothing is queued.
  [[nodiscard]] absl::StatusOr<RemoteValue> schedule(std::string_view function_name,
                                                     RemoteStructure args = {});

  // Blocks until no closure is queued, waiting for arguments or running
  // (those scheduled by other threads meanwhile wait for join to return),
  // or an error is pending; reports the pending error as described above.
  [[nodiscard]] absl::Status join();

  // Whether no closure is queued, waiting or running. Does not block,
  // unless an error is pending: then it reports it as join does.
  [[nodiscard]] absl::StatusOr<bool> done();

  // Stops the work in progress early, e.g. on SIGTERM (TF has no such
  // call; `psflow train` makes it): every closure queued or waiting for its
  // inputs fails with `reason` (CANCELLED when `reason` is OK), the running
  // ones are asked to stop (WorkerContext::is_cancelled; psflow's training
  // functions stop between two steps), and `reason` is recorded as a
  // closure error would be: the next schedule(), join() or done() reports
  // it (or an error recorded before it), once no closure is running any
  // more; then the coordinator is usable again. Does not block.
  void cancel(absl::Status reason);

  // How many closures ended without a complete run after a worker failed
  // while running them: put back for another worker, then cancelled (by
  // cancel() or an error) or failed (all workers lost, a poison closure)
  // before one ran them through; over the coordinator's life. Their
  // variable updates may have reached some parameter servers and not
  // others (a retry would have completed them, see exactly_once). A
  // program that saves a checkpoint after cancel() and join() has a
  // consistent one when this did not grow since the closures were
  // scheduled.
  [[nodiscard]] int64_t closures_in_doubt() const;

  // Waits for and returns the value of every RemoteValue in `values`, the
  // rest passing through unchanged; the first error in nest order, if any.
  [[nodiscard]] absl::StatusOr<Structure> fetch(const RemoteStructure& values) const;
  [[nodiscard]] absl::StatusOr<std::vector<Structure>> fetch(
      const std::vector<RemoteValue>& values) const;

  // TF's create_per_worker_dataset(dataset_fn): `dataset_fn` is a
  // registered dataset function (PSFLOW_DATASET_FUNCTION) that each worker
  // runs with its index; NOT_FOUND when it is not registered.
  // Its iterators are released on the workers once unused (see
  // PerWorkerIterator).
  [[nodiscard]] absl::StatusOr<PerWorkerDataset> create_per_worker_dataset(
      std::string_view dataset_fn, Structure args = {}) const;

  // TF's create_per_worker_resource (the per-worker values of a resource
  // function): `resource_fn` is a registered resource function
  // (PSFLOW_RESOURCE_FUNCTION) that each worker runs, with its index and
  // `args`, the first time one of its closures asks for the resource
  // (WorkerContext::resource); NOT_FOUND when it is not registered. Every
  // call makes a new resource, released on the workers once unused (see
  // PerWorkerResource).
  [[nodiscard]] absl::StatusOr<PerWorkerResource> create_per_worker_resource(
      std::string_view resource_fn, Structure args = {}) const;

  [[nodiscard]] int num_workers() const;

  // TF's coordination-service get_task_states: one state per task of the
  // cluster, the workers (by index) then the ps tasks (by index), each OK
  // while healthy or the error that made it unavailable, naming the task
  // (see psflow/task_state.h). Driven by heartbeats (heartbeat_interval);
  // a worker without heartbeats (in-process, or heartbeats off) is
  // unavailable while its dispatcher has lost it (a failed run, until a
  // probe answers). TF returns None for a healthy task; here the status is
  // OK. The watchdog's report includes the unhealthy ones. Never blocks on
  // the network.
  [[nodiscard]] std::vector<TaskState> get_task_states() const;

 private:
  friend struct internal::CoordinatorAccess;
  explicit ClusterCoordinator(std::shared_ptr<internal::Cluster> cluster);

  // Shared by the handles create() gave for one strategy.
  std::shared_ptr<internal::Cluster> cluster_;
};

}  // namespace psflow

#endif  // PSFLOW_CLUSTER_COORDINATOR_H_
