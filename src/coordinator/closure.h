// One scheduled call: a function name, its arguments and its result slot
// (internal).
#ifndef PSFLOW_COORDINATOR_CLOSURE_H_
#define PSFLOW_COORDINATOR_CLOSURE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/remote_value_state.h"
#include "coordinator/worker_connection.h"
#include "psflow/remote_value.h"
#include "psflow/structure.h"
#include "worker/per_worker_lease.h"

namespace psflow::internal {

// At any time a closure has one owner (the queue while it waits, a
// dispatcher while it runs), and only the owner finishes it, so its result
// is set exactly once.
// Thread-safety: the immutable parts and input_ready() are thread-safe;
// finish() is for the owner.
class Closure {
 public:
  Closure(uint64_t id, std::string function_name, RemoteStructure args);

  [[nodiscard]] uint64_t id() const { return id_; }
  [[nodiscard]] const std::string& function_name() const { return output_->function_name(); }
  [[nodiscard]] const RemoteStructure& args() const { return args_; }
  // The handle schedule() returns.
  [[nodiscard]] RemoteValue output() const { return RemoteValue(output_); }

  // The RemoteValue arguments, in nest order (repeats included).
  [[nodiscard]] const std::vector<RemoteValue>& inputs() const { return inputs_; }
  // Called once per entry of inputs() as it becomes READY; true for the
  // last one, when the closure may be dispatched.
  [[nodiscard]] bool input_ready() {
    return remaining_inputs_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }
  // The input error for the first failed input in nest order; OK when none
  // failed. Requires every input READY.
  [[nodiscard]] absl::Status input_error() const;
  // The arguments to send to worker `worker_index`: every RemoteValue
  // replaced by its value (the place where per-worker values will pick that
  // worker's slice). Requires every input READY without error.
  [[nodiscard]] Structure resolve_args(int worker_index) const;
  // As resolve_args, except that each RemoteValue for which
  // `by_reference(state)` is true becomes None in the args plus an entry of
  // `refs` (its closure id and place): the worker substitutes the result it
  // kept, so the value is neither encoded nor sent (same-worker chaining).
  [[nodiscard]] Structure resolve_args(
      int worker_index,
      absl::FunctionRef<bool(const internal::RemoteValueState& input)> by_reference,
      std::vector<RunRequest::InputRef>* refs) const;

  // Set when a worker answered that it no longer holds a referenced input:
  // the closure's later runs carry values only. Owned by the dispatchers.
  bool send_values = false;

  // The leases of the per-worker handles in its args, kept until it ends
  // (so that the workers keep those objects while it may run).
  void set_pins(std::vector<std::shared_ptr<const PerWorkerLease>> pins) {
    pins_ = std::move(pins);
  }

  // Sets the result (the owner only, once), and lets go of the pins.
  void finish(absl::StatusOr<Structure> result) {
    output_->set_result(std::move(result));
    pins_.clear();
  }

  // How many times a worker was asked to run it (retries after worker
  // failures included); owned by the dispatchers.
  int attempts = 0;
  // How many of those runs ended with their worker failing mid-call while
  // that worker had been healthy: a closure that keeps doing this is
  // presumed to crash workers (a poison closure).
  int worker_failures = 0;

 private:
  const uint64_t id_;
  const RemoteStructure args_;
  const std::vector<RemoteValue> inputs_;
  std::atomic<size_t> remaining_inputs_;
  const std::shared_ptr<internal::RemoteValueState> output_;
  std::vector<std::shared_ptr<const PerWorkerLease>> pins_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_CLOSURE_H_
