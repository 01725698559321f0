// Runs one batched VariableService request against a ps's variables.
#ifndef PSFLOW_PS_SERVER_EXECUTE_H_
#define PSFLOW_PS_SERVER_EXECUTE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ps/request/execute_batch.h"
#include "ps/server/variable_store.h"
#include "psflow/tensor.h"
#include "psflow/v1/variable.pb.h"

namespace psflow::internal {

// Executes `batch.ops` in order. With an update key the store has applied
// before (VariableStore::claim_update), the mutating ops are skipped after
// validation and only the reads run: the retried closure's update already
// happened. Every op is first validated (variable
// exists, dtypes, shapes, row ids, optimizer settings); if any op is bad,
// INVALID_ARGUMENT / NOT_FOUND names the op index and nothing is changed.
// Then the ops run; each is atomic on its shard. Tensors are moved out of
// `batch` (an ASSIGN adopts its value's buffer when nothing else shares
// it). READ and GATHER results are appended to `results` in order; a READ
// result shares the variable's buffer (the shard copies before its next
// write, so the result never changes), so treat it as read-only. A
// SNAPSHOT appends 3 + k results, copies of the shard's state (see
// ps/snapshot_results.h).
// Thread-safety: safe to call concurrently on the same store.
// With `result_wire`, one entry per result in `results` says how to send
// it: the op's wire_dtype for READ, GATHER and DE_LOOKUP (float32 results
// only; encoders send other dtypes as they are), kFloat32 for the rest.
[[nodiscard]] absl::Status execute_variable_ops(VariableStore& store, ExecuteBatch& batch,
                                                std::vector<Tensor>* results,
                                                std::vector<WireDType>* result_wire = nullptr);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_EXECUTE_H_
