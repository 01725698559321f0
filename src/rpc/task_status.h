// What GetStatus reports about the task this process plays.
#ifndef PSFLOW_RPC_TASK_STATUS_H_
#define PSFLOW_RPC_TASK_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_callback.h"
#include "psflow/v1/task.pb.h"

namespace psflow::internal {

// A random non-zero 64-bit value drawn once per process: a client seeing a
// different incarnation for the same address knows the task restarted (and
// lost its state), as TF's device incarnations.
[[nodiscard]] uint64_t process_incarnation();
// When this process started (first use of this library's statics).
[[nodiscard]] absl::Time process_start_time();

// Identity of one task: job, index, pid, incarnation, uptime and version.
// Thread-safety: immutable after construction; fill() may run concurrently.
class TaskStatus {
 public:
  TaskStatus(std::string job_name, int task_index);

  void fill(v1::GetStatusResponse& response) const;
  // The GetStatus handler of every service a task serves: fills `response`
  // and finishes the call.
  grpc::ServerUnaryReactor* answer(grpc::CallbackServerContext* context,
                                   v1::GetStatusResponse* response) const;
  [[nodiscard]] const std::string& job_name() const { return job_name_; }
  [[nodiscard]] int task_index() const { return task_index_; }

 private:
  std::string job_name_;
  int task_index_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_TASK_STATUS_H_
