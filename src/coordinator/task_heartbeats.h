// Heartbeats to every task of the cluster, behind
// ClusterCoordinator::get_task_states (internal): TF's coordination service
// marks a task failed when its heartbeats stop for heartbeat_timeout; here
// the coordinator sends them (a GetStatus call to each task every
// interval), so that tasks need no client of their own.
#ifndef PSFLOW_COORDINATOR_TASK_HEARTBEATS_H_
#define PSFLOW_COORDINATOR_TASK_HEARTBEATS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "psflow/task_state.h"

namespace psflow::internal {

// One thread per task sends a heartbeat every `interval`; a task is
// healthy until `timeout` has passed since its last answer (or since the
// start, before the first one), and healthy again at its next answer.
// Thread-safety: thread-safe.
class TaskHeartbeats {
 public:
  struct Task {
    std::string name;  // "/job:ps/replica:0/task:0"
    // One heartbeat: the task's incarnation (non-zero), or why it did not
    // answer before `deadline`. Must return by the deadline.
    std::function<absl::StatusOr<uint64_t>(absl::Time deadline)> beat;
  };
  struct Options {
    absl::Duration interval = absl::Seconds(1);  // > 0
    absl::Duration timeout = absl::Seconds(10);  // > 0
    // False: no threads; the owner (a test) calls record() itself.
    bool start_threads = true;
  };

  TaskHeartbeats(std::vector<Task> tasks, Options options, absl::Time start = absl::Now());
  // Stops the threads (each returns after its current heartbeat).
  ~TaskHeartbeats();
  TaskHeartbeats(const TaskHeartbeats&) = delete;
  TaskHeartbeats& operator=(const TaskHeartbeats&) = delete;

  // Records the outcome of task `index`'s heartbeat at `now`.
  void record(size_t index, const absl::StatusOr<uint64_t>& outcome, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Every task's state at `now`, in the order of the tasks given.
  [[nodiscard]] std::vector<TaskState> states(absl::Time now) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Seen {
    absl::Time last_answer;  // the start until the first answer
    absl::Status last_error;
    uint64_t incarnation = 0;
    int64_t restarts = 0;
  };
  void loop(size_t index);

  const std::vector<Task> tasks_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::vector<Seen> seen_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::vector<std::thread> threads_;
};

// The heartbeat of the task `index` of `job` ("worker" or "ps") at
// `address`: a fail-fast GetStatus call on a channel of its own, returning
// the task's incarnation (errors name the task and address).
[[nodiscard]] TaskHeartbeats::Task heartbeat_task(const std::string& address, std::string_view job,
                                                  int index);

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_TASK_HEARTBEATS_H_
