// For tests that build VariableService requests in their wire form: runs
// one against a store through the batch executor (the only request path)
// and answers in the wire form.
#ifndef PSFLOW_PS_SERVER_EXECUTE_TEST_UTIL_H_
#define PSFLOW_PS_SERVER_EXECUTE_TEST_UTIL_H_

#include <vector>

#include "absl/status/status.h"
#include "ps/request/execute_batch.h"
#include "ps/server/execute.h"
#include "ps/server/variable_store.h"
#include "psflow/status_macros.h"
#include "psflow/v1/variable.pb.h"
#include "tensor/codec.h"

namespace psflow::internal::testing {

// Tensor payloads are moved out of `request`, which is left consumed;
// results are appended to `response->results`.
[[nodiscard]] inline absl::Status execute_proto(VariableStore& store, v1::ExecuteRequest& request,
                                                v1::ExecuteResponse* response) {
  PSFLOW_ASSIGN_OR_RETURN(ExecuteBatch batch, batch_from_proto(request));
  std::vector<Tensor> results;
  PSFLOW_RETURN_IF_ERROR(execute_variable_ops(store, batch, &results));
  for (const Tensor& t : results) tensor_to_proto(t, response->add_results());
  return absl::OkStatus();
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_PS_SERVER_EXECUTE_TEST_UTIL_H_
