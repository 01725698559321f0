// Runs one batched VariableService request against a ps's variables.
#ifndef PSFLOW_PS_EXECUTE_H_
#define PSFLOW_PS_EXECUTE_H_

#include "absl/status/status.h"
#include "ps/variable_store.h"
#include "psflow/v1/variable.pb.h"

namespace psflow {

// Executes `request.ops` in order. Every op is first decoded and validated
// (variable exists, dtypes, shapes, row ids, optimizer settings); if any op
// is bad, INVALID_ARGUMENT / NOT_FOUND names the op index and nothing is
// changed. Then the ops run; each is atomic on its shard. Tensor payloads
// are moved out of `request` rather than copied, so it is left consumed.
// READ and GATHER results are appended to `response->results` in order.
// Thread-safety: safe to call concurrently on the same store.
[[nodiscard]] absl::Status execute_variable_ops(VariableStore& store,
                                                v1::ExecuteRequest& request,
                                                v1::ExecuteResponse* response);

// Conversions between OptimizerConfig and its wire form.
[[nodiscard]] absl::StatusOr<OptimizerConfig> optimizer_from_proto(
    const v1::OptimizerProto& proto);
void optimizer_to_proto(const OptimizerConfig& config, v1::OptimizerProto* proto);

}  // namespace psflow

#endif  // PSFLOW_PS_EXECUTE_H_
