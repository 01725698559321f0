// The seam between the executor protocol's client and the coordinator's
// per-worker transport (coordinator/grpc_worker_connection.h): one worker's
// executor channel, as RemoteExecutor uses it, with the asynchronous form of
// call_function that carries the coordinator's fields (closure id,
// sessions, result references, incarnation) and CancelFunction. The
// coordinator holds a connection of its own; it needs no RemoteExecutor.
#ifndef PSFLOW_EXECUTOR_EXECUTOR_CONNECTION_H_
#define PSFLOW_EXECUTOR_EXECUTOR_CONNECTION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "psflow/remote_executor.h"
#include "psflow/v1/task.pb.h"
#include "rpc/channel.h"

namespace psflow::internal {

// Defined in remote_executor.cc. Thread-safety: thread-safe.
class ExecutorConnection;

// A connection to the worker task `task_name` at `target`, over a channel
// with `channel_options` (its max_message_bytes is replaced by
// options.max_message_bytes). Unlike RemoteExecutor::create it sends
// nothing, so it cannot fail on a worker that is down (the coordinator
// starts before its workers may be up): channels connect lazily.
// `options` must pass create's checks; the defaults do.
[[nodiscard]] std::shared_ptr<ExecutorConnection> connect_executor(std::string_view target,
                                                                   std::string task_name,
                                                                   RemoteExecutorOptions options,
                                                                   ChannelOptions channel_options);

// `transport` is the RPC's status (annotated with the task; OK when the
// worker answered), `response` what it answered (empty unless `transport`
// is OK); the callee may move out of it.
using RunDone =
    absl::AnyInvocable<void(const absl::Status& transport, v1::RunFunctionResponse& response) &&>;

// Sends one RunFunction (create_function + create_value + create_call +
// compute fused), failing fast and without a deadline, and returns. `done`
// runs exactly once, on a gRPC thread, or inline (FAILED_PRECONDITION)
// when the connection is closed; it must not block, nor destroy `connection`.
// The call's buffers belong to the connection until `done` has returned.
void run_function_async(ExecutorConnection& connection, v1::RunFunctionRequest request,
                        RunDone done);

// When a run of `closure_id` is in flight on `connection`, sends a
// CancelFunction for it (fire and forget, deadline 5 s: the run reports
// the outcome); else nothing. The call belongs to the connection.
void cancel_function_async(ExecutorConnection& connection, uint64_t closure_id);

// One GetStatus call until `deadline`, failing fast; errors name the task.
[[nodiscard]] absl::Status probe(ExecutorConnection& connection, absl::Time deadline);

// One DisposePerWorker call releasing the worker's per-worker objects of
// `ids`, until `deadline`, failing fast; errors name the task.
[[nodiscard]] absl::Status dispose_per_worker(ExecutorConnection& connection,
                                              const std::vector<std::string>& ids,
                                              absl::Time deadline);

// Cancels every asynchronous call in flight (runs and cancellations) and
// blocks until each has run its callback and been freed. Must not run on a
// callback of those calls. RemoteExecutor's destructor does it too; so
// must the last owner of a connection made by connect_executor.
void cancel_calls_and_wait(ExecutorConnection& connection);

// The function's own outcome in `response`: OK when its code is 0, else
// that code (UNKNOWN when outside absl's range: a buggy or hostile peer)
// with its message.
[[nodiscard]] absl::Status function_status(const v1::RunFunctionResponse& response);

}  // namespace psflow::internal

#endif  // PSFLOW_EXECUTOR_EXECUTOR_CONNECTION_H_
