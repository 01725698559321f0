// What GetStatus reports about the task this process plays.
#ifndef PSFLOW_SERVER_TASK_STATUS_H_
#define PSFLOW_SERVER_TASK_STATUS_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "psflow/v1/task.pb.h"

namespace psflow {

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
  [[nodiscard]] const std::string& job_name() const { return job_name_; }
  [[nodiscard]] int task_index() const { return task_index_; }

 private:
  std::string job_name_;
  int task_index_;
};

}  // namespace psflow

#endif  // PSFLOW_SERVER_TASK_STATUS_H_
