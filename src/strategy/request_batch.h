// Groups variable ops by task: one batch per task, all sent in parallel.
// Every variable operation goes through it.
#ifndef PSFLOW_STRATEGY_REQUEST_BATCH_H_
#define PSFLOW_STRATEGY_REQUEST_BATCH_H_

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "psflow/optimizer_config.h"
#include "psflow/tensor.h"
#include "strategy/variable_state.h"

namespace psflow::internal {

// A new op of `kind` on `part` (no value or ids yet).
[[nodiscard]] VariableOpArgs make_op(v1::VariableOp::Kind kind, const VariableState& part);

// Collects ops for any number of tasks, then runs one ExecuteBatch per
// task in parallel (execute_batches_parallel). Ops for one task run in the
// order added, atomically as a batch on that task. Tensors are shared with
// the batch, not copied: callers must not write to them until run()
// returns. The deadline is now + the longest timeout of the parts involved.
// The batch's updates carry the update keys of its parts (a scheduled
// closure's, when any part was bound to one).
// Thread-safety: not thread-safe; a batch belongs to one operation.
class RequestBatch {
 public:
  // Appends `op` to the batch of `part`'s task. For READ and GATHER,
  // returns the index of its result in run()'s output; else -1.
  int add(const VariableState& part, VariableOpArgs op);
  // The index of `config` in the optimizers of `part`'s batch, adding it
  // there once.
  [[nodiscard]] int optimizer_index(const VariableState& part, const OptimizerConfig& config);
  [[nodiscard]] size_t num_requests() const { return groups_.size(); }

  // Sends the batches and waits for all of them. On failure returns the
  // first failed task's error (which names the task), noting how many other
  // tasks failed too; the tasks that succeeded have applied their ops.
  [[nodiscard]] absl::StatusOr<std::vector<Tensor>> run();

 private:
  struct Group {
    std::shared_ptr<VariableClient> client;
    ExecuteBatch batch;
    std::vector<int> result_slots;  // per READ/GATHER op, in order
    int optimizer = -1;             // index in batch.optimizers, once added
  };
  Group& group(const VariableState& part);

  std::vector<Group> groups_;
  absl::flat_hash_map<const VariableClient*, size_t> by_client_;
  int num_results_ = 0;
  absl::Duration timeout_ = absl::ZeroDuration();
  std::shared_ptr<UpdateKeys> update_keys_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_REQUEST_BATCH_H_
