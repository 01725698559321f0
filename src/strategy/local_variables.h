// The coordinator's own variables: those created outside any strategy
// scope (TF places them on "/job:chief/replica:0/task:0/device:CPU:0").
#ifndef PSFLOW_STRATEGY_LOCAL_VARIABLES_H_
#define PSFLOW_STRATEGY_LOCAL_VARIABLES_H_

#include <memory>
#include <string>
#include <string_view>

#include "ps/client/variable_client.h"

namespace psflow::internal {

inline constexpr std::string_view kLocalJob = "chief";
inline constexpr int kLocalTask = 0;

// The process-wide in-process store's client (never destroyed).
[[nodiscard]] const std::shared_ptr<VariableClient>& local_variable_client();

// A unique name in the process-wide namespace of local variables
// (NameRegistry::reserve).
[[nodiscard]] std::string reserve_local_name(std::string_view base, int num_parts);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_LOCAL_VARIABLES_H_
