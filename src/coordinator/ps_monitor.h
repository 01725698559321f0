// Watching the ps tasks' incarnations (internal to PsRecovery, see
// include/psflow/ps_recovery.h): telling a ps fault apart from other
// errors, and waiting for lost tasks to come back.
#ifndef PSFLOW_COORDINATOR_PS_MONITOR_H_
#define PSFLOW_COORDINATOR_PS_MONITOR_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "psflow/cluster_spec.h"

namespace psflow::internal {

// The ps tasks of a cluster and the incarnation each had when last seen.
// Thread-safety: use from one thread.
class PsMonitor {
 public:
  // Records every ps task's incarnation (GetStatus), waiting for tasks
  // still starting until `deadline`; the error names the tasks that did
  // not answer.
  [[nodiscard]] static absl::StatusOr<PsMonitor> create(const ClusterSpec& spec,
                                                        absl::Time deadline);

  // After `error` stopped training: waits until every ps task answers
  // again (printing once to `out`, when not null, which tasks it waits for)
  // and returns the names of those that restarted since they were last
  // seen (a new incarnation: their variables are gone), adopting their new
  // incarnations. Empty when every ps task is the one seen before: the
  // error was not a ps fault. DEADLINE_EXCEEDED naming the tasks still
  // down and quoting `error` when `deadline` passes first.
  [[nodiscard]] absl::StatusOr<std::vector<std::string>> restarted_since(const absl::Status& error,
                                                                         absl::Time deadline,
                                                                         std::FILE* out);

  // The ps tasks `error` says this process could not reach (UNAVAILABLE or
  // DEADLINE_EXCEEDED naming the task): a link cut or a task paused. Such a
  // task may come back as the same process, its variables intact but
  // holding part of the failed steps' updates.
  [[nodiscard]] std::vector<std::string> unreachable_in(const absl::Status& error) const;

  [[nodiscard]] int num_tasks() const { return static_cast<int>(tasks_.size()); }

 private:
  struct Task {
    std::string address;
    std::string name;
    uint64_t incarnation = 0;
  };
  explicit PsMonitor(std::vector<Task> tasks) : tasks_(std::move(tasks)) {}
  // Every task's incarnation, once all of them answer GetStatus (see
  // restarted_since for `error`, `deadline` and `out`).
  [[nodiscard]] absl::StatusOr<std::vector<uint64_t>> await_incarnations(const absl::Status& error,
                                                                         absl::Time deadline,
                                                                         std::FILE* out) const;
  std::vector<Task> tasks_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_PS_MONITOR_H_
