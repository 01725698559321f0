// Retries of individual variable calls on transient faults (a ps restarting,
// a connection reset, a call that timed out under load), with bounded,
// jittered exponential backoff.
#ifndef PSFLOW_PS_CLIENT_RETRYING_VARIABLE_CLIENT_H_
#define PSFLOW_PS_CLIENT_RETRYING_VARIABLE_CLIENT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"

namespace psflow::internal {

// Thread-safety: a value type.
struct RetryPolicy {
  // Attempts in all, the first included; 1 disables retries.
  int max_attempts = 6;
  // The wait before the second attempt; it doubles per attempt up to
  // max_backoff. Each wait is drawn uniformly from [backoff/2, backoff]
  // ("equal jitter"), so that the workers that lost the same ps at the
  // same moment do not come back in lockstep.
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
};

// Whether sending `batch` again after an attempt whose outcome is unknown
// (the ps may or may not have applied it) leaves the same state as sending
// it once: true when it changes nothing (reads, gathers, snapshots), when it
// carries an update key (the ps applies a key once: exactly-once updates),
// or when each of its writes sets rather than accumulates (assign,
// scatter_update/min/max, create, restore).
[[nodiscard]] bool is_safe_to_repeat(const ExecuteBatch& batch);

// Wraps `inner`: a call ending with a retryable status (rpc/grpc_status.h
// is_retryable: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED) is sent again
// after the backoff, as long as it is safe to repeat, attempts remain and
// the call's own deadline leaves room for the wait; otherwise the last
// status is returned as it is (it already names the task). The waits run
// on one timer thread of the client's, never on a caller's or a gRPC
// callback's thread.
// Thread-safety: all methods are thread-safe. The destructor ends the
// pending waits at once (their callers get the status of their last
// attempt) and returns once every callback has run; `inner` is destroyed
// after that.
[[nodiscard]] std::unique_ptr<VariableClient> make_retrying_variable_client(
    std::unique_ptr<VariableClient> inner, RetryPolicy policy = {});

// How every role reaches a ps task: the gRPC client of `target` with the
// default retries, its ps failures reported as UNAVAILABLE
// (ps/client/ps_failure.h).
[[nodiscard]] std::unique_ptr<VariableClient> make_ps_client(const std::string& target,
                                                             std::string task_name);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_CLIENT_RETRYING_VARIABLE_CLIENT_H_
