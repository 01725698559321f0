// The coordinator's watchdog (internal): nothing waits forever without
// saying what it waits for.
//
// TF's watchdog (off by default) only logs when no closure finished for a
// while. psflow's is on by default and does two things:
//  * stall report: when closures are queued or running and none has
//    finished for `stall_timeout`, a warning names the counts and each lost
//    worker with its last error, and repeats every further `stall_timeout`;
//  * no-worker bound: when every worker has been lost for
//    `all_workers_lost_timeout` while closures are queued, those closures
//    fail with UNAVAILABLE naming the workers and their last errors, and
//    join/schedule/done report it as any closure error (TF lets a failed
//    worker wait 3600 s for its recovery; that is the default here too).
#ifndef PSFLOW_COORDINATOR_WATCHDOG_H_
#define PSFLOW_COORDINATOR_WATCHDOG_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "psflow/task_state.h"

namespace psflow::internal {

// What the watchdog looks at, taken at each check.
// Thread-safety: a value type.
struct WatchdogSnapshot {
  struct Worker {
    std::string task_name;
    // Set while the worker is lost (not answering): since when, and why.
    std::optional<absl::Time> lost_since;
    absl::Status last_error;
  };
  int64_t queued = 0;  // waiting for inputs included
  int64_t in_flight = 0;
  absl::Time last_finish;  // when a closure last finished or failed
  std::vector<Worker> workers;
  std::vector<TaskState> tasks;  // ClusterCoordinator::get_task_states
};

// Thread-safety: thread-safe; the callbacks run on the watchdog's thread.
class CoordinatorWatchdog {
 public:
  struct Options {
    absl::Duration stall_timeout = absl::Minutes(2);           // <= 0: no report
    absl::Duration all_workers_lost_timeout = absl::Hours(1);  // <= 0: never
    // False: no thread; the owner (a test) calls check() itself.
    bool start_thread = true;
    // Called at each stall report: writes the thread stacks and returns
    // the file's path. Null: no dump.
    std::function<absl::StatusOr<std::string>()> dump_stacks;
  };
  // `snapshot` is called at every check; `abort_queued(error)` fails the
  // queued closures. Starts checking at once.
  CoordinatorWatchdog(Options options, std::function<WatchdogSnapshot()> snapshot,
                      std::function<void(const absl::Status&)> abort_queued);
  // Stops the thread; no callback runs after it returns.
  ~CoordinatorWatchdog();
  CoordinatorWatchdog(const CoordinatorWatchdog&) = delete;
  CoordinatorWatchdog& operator=(const CoordinatorWatchdog&) = delete;

  // One check at `now` (the thread calls it every period; without the
  // thread, tests call it with their own clock). Returns the warning it
  // logged or the error it failed the queue with, if any.
  std::optional<std::string> check(absl::Time now);

 private:
  void loop();

  const Options options_;
  const std::function<WatchdogSnapshot()> snapshot_;
  const std::function<void(const absl::Status&)> abort_queued_;
  // Only the checking thread (or a test calling check()) touches these.
  std::optional<absl::Time> busy_since_;
  std::optional<absl::Time> last_warning_;
  absl::Notification stop_;
  std::thread thread_;
};

// The watchdog's message for `s` at `now`: counts, each lost worker with
// how long it has been lost and its last error, and the tasks whose state
// is not healthy.
[[nodiscard]] std::string describe_waiting(const WatchdogSnapshot& s, absl::Time now);

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_WATCHDOG_H_
