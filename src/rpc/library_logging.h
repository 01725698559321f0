// Routes the log lines of protobuf and gRPC through psflow's logging, so
// that a client cannot make them flood the task's log: a bad request can
// make either library log a line (protobuf: a string field that is not
// UTF-8; gRPC: a message over the limit), and psflow's logging bounds,
// escapes and rate-limits lines per place (base/logging.h).
#ifndef PSFLOW_RPC_LIBRARY_LOGGING_H_
#define PSFLOW_RPC_LIBRARY_LOGGING_H_

namespace psflow::internal {

// Idempotent; thread-safe.
void route_library_logs();

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_LIBRARY_LOGGING_H_
