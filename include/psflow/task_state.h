// The state of one task of a cluster as the coordinator sees it (TF's
// coordination service get_task_states).
#ifndef PSFLOW_TASK_STATE_H_
#define PSFLOW_TASK_STATE_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace psflow {

// Thread-safety: a value type.
struct TaskState {
  // "/job:worker/replica:0/task:1", "/job:ps/replica:0/task:0".
  std::string task;
  // OK while the task is healthy (TF: None). Otherwise why it is not, with
  // TF's code and the task named in the message: UNAVAILABLE when it has
  // not answered heartbeats for ClusterCoordinatorOptions::
  // heartbeat_timeout (TF: "heartbeat timeout"), quoting the last error.
  absl::Status error;
  // How often heartbeats saw the task come back as a new process (a new
  // incarnation) since the coordinator started; a ps that restarted lost
  // its variables (see psflow/ps_recovery.h).
  int64_t restarts = 0;
  // The task's process as heartbeats last saw it (a random non-zero value
  // per process start); 0 before its first answer, and for tasks without
  // heartbeats.
  uint64_t incarnation = 0;

  [[nodiscard]] bool healthy() const { return error.ok(); }
};

}  // namespace psflow

#endif  // PSFLOW_TASK_STATE_H_
