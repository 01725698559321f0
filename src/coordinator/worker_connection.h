// How the coordinator reaches one worker: the seam between the coordinator
// and a transport (in-process threads now, the gRPC ExecutorService next).
#ifndef PSFLOW_COORDINATOR_WORKER_CONNECTION_H_
#define PSFLOW_COORDINATOR_WORKER_CONNECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/structure.h"
#include "worker/result_cache.h"

namespace psflow::internal {

// One call of a registered function on a worker.
struct RunRequest {
  uint64_t closure_id = 0;
  std::string function_name;
  Structure args;
  // The coordinator's random session: with closure_id, what parameter
  // servers deduplicate the closure's updates by (0: none).
  uint64_t session = 0;
  // Same-worker chaining (connections whose supports_result_refs()):
  // non-zero asks the worker to keep the result under (result_session,
  // closure_id), and `input_refs` name results it kept earlier, each with
  // the place in `args` (None there) where it goes.
  uint64_t result_session = 0;
  struct InputRef {
    uint64_t closure_id = 0;
    StructurePath path = {};
  };
  std::vector<InputRef> input_refs = {};
  // How often the dispatcher has seen the worker come back after losing it.
  int64_t worker_recoveries = 0;
  // The worker process that last answered (RunResult::incarnation; 0: none).
  uint64_t last_incarnation = 0;
};

// What came back. Two levels, because they mean different things:
//  * `transport` not OK: the worker could not be reached or did not answer
//    (the function's outcome is unknown). A retryable code
//    (rpc/grpc_status.h is_retryable: UNAVAILABLE, DEADLINE_EXCEEDED,
//    ABORTED) is a worker failure: the closure is put back for another
//    worker. Any other code is final and counts as the closure's error.
//  * `transport` OK: the worker ran the function and `output` is its
//    outcome, whatever the code: an UNAVAILABLE that the function itself
//    returned (say, from a parameter server) is an application error, never
//    a reason to retry on another worker.
//
// With an OK `transport`, `input_refs_missing` means the worker ran nothing
// because it no longer holds some input_refs' results: the dispatcher sends
// the closure again with values (never an error).
struct RunResult {
  absl::Status transport;
  absl::StatusOr<Structure> output;
  bool input_refs_missing = false;
  // The worker kept the result for later input_refs (see RunRequest).
  bool result_kept = false;
  // The worker process's incarnation (0: unknown).
  uint64_t incarnation = 0;
};

// Thread-safety: implementations are thread-safe. The coordinator keeps at
// most max_in_flight() runs outstanding per connection.
class WorkerConnection {
 public:
  using Done = absl::AnyInvocable<void(RunResult) &&>;

  virtual ~WorkerConnection() = default;

  // How many runs may be outstanding at once (TF: one closure per worker).
  [[nodiscard]] virtual int max_in_flight() const { return 1; }

  // Whether the worker answers now (a cheap call that runs no closure):
  // how a dispatcher learns that a failed worker is back. OK by default.
  [[nodiscard]] virtual absl::Status probe(absl::Time deadline) { return absl::OkStatus(); }

  // Whether the worker keeps results and resolves RunRequest::input_refs
  // (same-worker chaining); otherwise both are left empty.
  [[nodiscard]] virtual bool supports_result_refs() const { return false; }

  // "/job:worker/replica:0/task:<i>", for messages.
  [[nodiscard]] virtual std::string task_name() const = 0;

  // Starts the run and returns. `done` runs exactly once, on any thread
  // (possibly before run_async returns); it must not block.
  virtual void run_async(RunRequest request, Done done) = 0;

  // Asks the worker to stop running closure `closure_id` early, when that is
  // still what it runs; a no-op otherwise. `done` still runs, with whatever
  // outcome the run reaches (usually CANCELLED).
  virtual void cancel(uint64_t closure_id) = 0;

  // Drops the worker's per-worker iterators and resources of `ids` (whose
  // last handle the coordinator dropped), answering by `deadline`; OK also
  // for ids the worker does not hold. Blocks; never called on a callback
  // of run_async. OK by default (a transport without per-worker state).
  [[nodiscard]] virtual absl::Status dispose_per_worker(const std::vector<std::string>& ids,
                                                        absl::Time deadline) {
    return absl::OkStatus();
  }
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_WORKER_CONNECTION_H_
