// Client side of the VariableService: batched variable ops on one ps task.
#ifndef PSFLOW_PS_CLIENT_VARIABLE_CLIENT_H_
#define PSFLOW_PS_CLIENT_VARIABLE_CLIENT_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ps/request/execute_batch.h"
#include "ps/request/update_key.h"
#include "psflow/tensor.h"
#include "psflow/v1/variable.pb.h"

namespace psflow::internal {

// Sends batches of variable ops to one ps task (or, for variables made
// outside a strategy scope, to an in-process store with the same semantics).
// Thread-safety: all methods are thread-safe; many requests may be in flight.
class VariableClient {
 public:
  // The results of a batch's READ and GATHER ops, in op order.
  using BatchCallback = std::function<void(absl::StatusOr<std::vector<Tensor>>)>;

  virtual ~VariableClient() = default;
  // "/job:ps/replica:0/task:1", or "/job:chief/replica:0/task:0" for local.
  [[nodiscard]] virtual const std::string& task_name() const = 0;
  // Whether calls now carry their large tensor contents in shared memory
  // (a ps on this host; see ps/server/variable_service.h).
  [[nodiscard]] virtual bool uses_shared_memory() const { return false; }
  // Runs `batch` on the task and calls `done` exactly once, possibly on
  // another thread, possibly before returning. Errors name the task. No
  // payload is copied into or out of protos: the batch's tensors are
  // shared, not copied (the gRPC client sends their bytes straight from
  // their buffers), so do not write to them until `done` runs. Results are
  // the caller's own tensors.
  virtual void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) = 0;
  // Blocking form.
  [[nodiscard]] absl::StatusOr<std::vector<Tensor>> execute_batch(ExecuteBatch batch,
                                                                  absl::Time deadline);
};

// Runs one batch per client in parallel and waits for all of them.
// results[i] holds the READ/GATHER results of batches[i]; a null client or
// an empty batch is skipped (its result is empty). With `update_keys` (a scheduled
// closure's), batches that change state and carry no key yet get the
// closure's next key, one for all of them.
[[nodiscard]] std::vector<absl::StatusOr<std::vector<Tensor>>> execute_batches_parallel(
    const std::vector<VariableClient*>& clients, std::vector<ExecuteBatch> batches,
    absl::Time deadline, internal::UpdateKeys* update_keys = nullptr);

// gRPC client for the VariableService of the ps task at `target`
// ("127.0.0.1:4567"), named `task_name` in errors. Calls fail fast with
// UNAVAILABLE naming the task when it is down, and never outlive their
// deadline. The client must outlive the callbacks of its calls: its
// destructor cancels calls in flight and waits for their callbacks, so it
// must not run inside one.
[[nodiscard]] std::unique_ptr<VariableClient> make_grpc_variable_client(const std::string& target,
                                                                        std::string task_name);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_CLIENT_VARIABLE_CLIENT_H_
