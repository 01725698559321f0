// A worker that runs registered functions on its own thread in this
// process: the WorkerConnection of unit tests, benchmarks and single-process
// runs.
#ifndef PSFLOW_COORDINATOR_IN_PROCESS_WORKER_H_
#define PSFLOW_COORDINATOR_IN_PROCESS_WORKER_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "coordinator/worker_connection.h"
#include "psflow/function_registry.h"
#include "psflow/worker_context.h"

namespace psflow::internal {

// Its transport never fails: every RunResult has an OK `transport`.
// Thread-safety: thread-safe; one run at a time (a second run_async while
// one is in flight is a programming error and aborts).
class InProcessWorker final : public WorkerConnection {
 public:
  // `registry` must outlive the worker. `variables` (may be null) is what
  // functions reach variables through.
  InProcessWorker(int worker_index, const FunctionRegistry& registry, int num_workers = 1,
                  VariableClientLookup variables = nullptr);
  // Finishes the run in flight, if any, then stops the thread.
  ~InProcessWorker() override;
  InProcessWorker(const InProcessWorker&) = delete;
  InProcessWorker& operator=(const InProcessWorker&) = delete;

  [[nodiscard]] std::string task_name() const override;
  void run_async(RunRequest request, Done done) override ABSL_LOCKS_EXCLUDED(mu_);
  // Makes WorkerContext::is_cancelled() true for that run.
  void cancel(uint64_t closure_id) override ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status dispose_per_worker(const std::vector<std::string>& ids,
                                  absl::Time deadline) override;

  [[nodiscard]] WorkerResources& resources() { return resources_; }

 private:
  struct Call {
    RunRequest request;
    Done done;
  };

  void loop();

  const int worker_index_;
  const FunctionRegistry& registry_;
  const int num_workers_;
  const VariableClientLookup variables_;
  WorkerResources resources_;
  std::atomic<bool> cancelled_{false};

  absl::Mutex mu_;
  std::optional<Call> next_ ABSL_GUARDED_BY(mu_);
  // The closure accepted by run_async until its result is handed back.
  uint64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread thread_;  // Last: starts once everything above exists.
};

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_IN_PROCESS_WORKER_H_
