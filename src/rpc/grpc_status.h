// The one place where gRPC statuses and absl::Status meet, and the one
// function that decides whether a failed call may be retried.
#ifndef PSFLOW_RPC_GRPC_STATUS_H_
#define PSFLOW_RPC_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <cstddef>
#include <string_view>

#include "absl/status/status.h"

namespace psflow::internal {

// Code-for-code conversions (the two enums share numbering, but the mapping
// is spelled out so that a future divergence fails to compile, not silently).
// absl payloads are not sent over the wire. to_grpc_status keeps the message
// if it is valid UTF-8 of at most kMaxStatusMessageBytes, else escapes the
// invalid bytes and cuts it (saying how long it was), so that an error that
// echoes a client's megabyte name still reaches the client.
inline constexpr size_t kMaxStatusMessageBytes = 2048;
[[nodiscard]] absl::Status from_grpc_status(const grpc::Status& status);
[[nodiscard]] grpc::Status to_grpc_status(const absl::Status& status);
[[nodiscard]] absl::StatusCode from_grpc_code(grpc::StatusCode code);
[[nodiscard]] grpc::StatusCode to_grpc_code(absl::StatusCode code);

// Prefixes an error with the task it came from, keeping code and payloads:
//   "/job:ps/replica:0/task:1 (127.0.0.1:4567): failed to connect ..."
// so that users (and TF-style failure classification, which looks for
// "/job:ps" / "/job:worker") see which task failed. OK stays OK; an error
// already carrying this prefix is returned unchanged.
[[nodiscard]] absl::Status annotate_with_task(const absl::Status& status,
                                              std::string_view task_name, std::string_view address);

// Whether repeating the same call later may succeed, decided by code only
// (never by message text):
//   UNAVAILABLE        task down, restarting or unreachable: retry.
//   DEADLINE_EXCEEDED  the call or connection took too long, e.g. a task
//                      paused or overloaded: retry.
//   ABORTED            the task aborted the operation (e.g. it restarted
//                      with a new incarnation mid-call); TF treats it as a
//                      preemption and re-runs the work: retry.
// Everything else is final: CANCELLED is the caller's own decision;
// UNKNOWN and INTERNAL are bugs or handler failures that would recur;
// RESOURCE_EXHAUSTED here mostly means a message over the size limit, which
// a retry does not change; the rest describe the request itself.
[[nodiscard]] bool is_retryable(const absl::Status& status);

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_GRPC_STATUS_H_
