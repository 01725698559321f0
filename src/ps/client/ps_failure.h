// Which errors of a ps client are a parameter-server failure, and the
// client wrapper that reports them with TF's code.
//
// TF classifies a lost ps as UNAVAILABLE (PSUnavailableError, a subclass of
// UnavailableError), so that callers can branch on it: retry elsewhere is
// pointless, the program restores a checkpoint (PsRecovery) or stops. A ps
// that is down already fails its calls with UNAVAILABLE naming the task
// (the gRPC client fails fast). A ps that came back empty after a restart
// answers every call about the variables it lost with NOT_FOUND ("no
// variable named ..."), which would read as a caller's mistake; this layer
// turns that answer into UNAVAILABLE, keeping its message (which names the
// task and says how to restore).
#ifndef PSFLOW_PS_CLIENT_PS_FAILURE_H_
#define PSFLOW_PS_CLIENT_PS_FAILURE_H_

#include <memory>

#include "absl/status/status.h"
#include "ps/client/variable_client.h"

namespace psflow::internal {

// Whether `status` is the answer of a ps that holds no variables to a call
// about one of them (flagged by the ps itself, ps/request/lost_state.h).
[[nodiscard]] bool is_ps_lost_state(const absl::Status& status);

// `status` with the code UNAVAILABLE when is_ps_lost_state(status), message
// and payloads kept; otherwise `status` unchanged.
[[nodiscard]] absl::Status as_ps_failure(absl::Status status);

// Wraps `inner` so that every result goes through as_ps_failure. Put above
// the retrying client (ps/client/retrying_variable_client.h): an empty ps
// does not fill itself again, so such an answer is not worth a retry.
// Thread-safety: as `inner`.
[[nodiscard]] std::unique_ptr<VariableClient> make_ps_failure_client(
    std::unique_ptr<VariableClient> inner);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_CLIENT_PS_FAILURE_H_
