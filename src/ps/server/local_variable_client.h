// A VariableClient over a VariableStore in this process: the ps server's
// semantics without a ps task, for variables made outside a strategy scope
// (they live with the coordinator, as TF's) and for tests.
#ifndef PSFLOW_PS_SERVER_LOCAL_VARIABLE_CLIENT_H_
#define PSFLOW_PS_SERVER_LOCAL_VARIABLE_CLIENT_H_

#include <memory>
#include <string>

#include "ps/client/variable_client.h"
#include "ps/server/variable_store.h"

namespace psflow::internal {

// In-process client over `store` (no serialisation at all on the batch
// path; READ results are copies, so callers may write to them).
[[nodiscard]] std::unique_ptr<VariableClient> make_local_variable_client(
    std::shared_ptr<VariableStore> store, std::string task_name);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_SERVER_LOCAL_VARIABLE_CLIENT_H_
