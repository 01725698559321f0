// WorkerConnection over gRPC: runs closures on a worker task's
// ExecutorService (internal). It is built on the executor protocol's
// client connection (executor/executor_connection.h), the one
// RemoteExecutor uses: it holds one, which owns the channel and the stub,
// and sends each closure as the asynchronous form of
// RemoteExecutor::call_function (one RunFunction round trip) with the
// coordinator's fields: closure id and session (exactly-once updates on
// the ps), result references (same-worker chaining) and the incarnation.
#ifndef PSFLOW_COORDINATOR_GRPC_WORKER_CONNECTION_H_
#define PSFLOW_COORDINATOR_GRPC_WORKER_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "coordinator/worker_connection.h"

namespace psflow::internal {

// A connection to the worker task `task_name` at `target` ("host:port").
// Calls fail fast: a worker that is down gives a retryable UNAVAILABLE
// transport error at once (the closure goes to another worker). A run has
// no deadline, since functions may legitimately take long; a worker that
// vanishes or pauses mid-call is noticed by the channel's keepalive within
// about `timeout` (rpc/channel.h ChannelOptions).
// The destructor cancels the runs (and CancelFunction calls) in flight and
// waits for their callbacks. probe() is a GetStatus call. Creating it
// sends nothing: the worker may be down when the coordinator starts.
[[nodiscard]] std::unique_ptr<WorkerConnection> make_grpc_worker_connection(
    const std::string& target, int worker_index, absl::Duration timeout = absl::Seconds(20));

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_GRPC_WORKER_CONNECTION_H_
