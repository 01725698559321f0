// What GetStatus reports about the task this process plays.
#ifndef PSFLOW_RPC_TASK_STATUS_H_
#define PSFLOW_RPC_TASK_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/server_callback.h"
#include "psflow/v1/task.pb.h"

namespace psflow::internal {

// A random non-zero 64-bit value drawn once per process: a client seeing a
// different incarnation for the same address knows the task restarted (and
// lost its state), as TF's device incarnations.
[[nodiscard]] uint64_t process_incarnation();
// When this process started (first use of this library's statics).
[[nodiscard]] absl::Time process_start_time();

// Identity of one task: job, index, pid, incarnation, uptime and version;
// and the log of who connected to it.
// Thread-safety: every method may run concurrently (the connection log is
// guarded by its own mutex).
class TaskStatus {
 public:
  // `insecure_exposed`: the task serves plaintext on a non-loopback address
  // (--insecure); every new connection is then logged as a warning.
  TaskStatus(std::string job_name, int task_index, bool insecure_exposed = false);

  void fill(v1::GetStatusResponse& response) const;
  // The GetStatus handler of every service a task serves: fills `response`
  // and finishes the call. Logs the caller's connection (note_caller).
  grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* context,
                                   v1::GetStatusResponse* response) const;
  // The same for a raw callback method: parses the request first
  // (INVALID_ARGUMENT when it is no GetStatusRequest).
  grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer& request,
                                   grpc::ByteBuffer* response) const;
  // Logs at INFO, once per connection (the caller's address and port), that
  // a client connected and which call it made first: a coordinator asks
  // GetStatus when it connects, workers update variables with Execute. At
  // most kMaxLoggedConnections connections are logged, so that a long-lived
  // task's log stays short; never a line per call. A warning instead when
  // the task is insecure_exposed.
  void note_caller(grpc::CallbackServerContext* context, std::string_view call) const;
  static constexpr size_t kMaxLoggedConnections = 1024;
  // Logs at WARNING that `call` failed with `status` (nothing when it is
  // OK): the first failure of each call and code with its message, then
  // only the 2nd, 4th, 8th, ... with their counts, so that a client
  // repeating a bad request (or a stop cancelling every call) cannot flood
  // the log while an operator still sees what goes wrong and how often.
  void note_error(std::string_view call, const absl::Status& status) const;
  // Finishes a call the caller may not make with `status`, noted as above.
  grpc::ServerUnaryReactor* refuse(grpc::CallbackServerContext* context, std::string_view call,
                                   const absl::Status& status) const;
  static constexpr size_t kMaxErrorKinds = 64;
  [[nodiscard]] const std::string& job_name() const { return job_name_; }
  [[nodiscard]] int task_index() const { return task_index_; }

 private:
  std::string job_name_;
  int task_index_;
  bool insecure_exposed_;
  mutable absl::Mutex peers_mu_;
  mutable absl::flat_hash_set<std::string> peers_ ABSL_GUARDED_BY(peers_mu_);
  mutable absl::Mutex errors_mu_;
  // Failures seen per (call, code).
  mutable absl::flat_hash_map<std::pair<std::string, int>, int64_t> errors_
      ABSL_GUARDED_BY(errors_mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_TASK_STATUS_H_
