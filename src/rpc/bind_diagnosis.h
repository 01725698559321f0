// Why a listening address could not be bound, for error messages.
#ifndef PSFLOW_RPC_BIND_DIAGNOSIS_H_
#define PSFLOW_RPC_BIND_DIAGNOSIS_H_

#include <string>
#include <string_view>

namespace psflow::internal {

// Binds (and listens on) a throw-away socket at `bind_address` with the
// options gRPC uses, and describes the failure ("Address already in use"),
// or returns "" when that bind succeeds (the failure was elsewhere).
[[nodiscard]] std::string diagnose_bind_failure(std::string_view bind_address, bool reuse_port);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_BIND_DIAGNOSIS_H_
