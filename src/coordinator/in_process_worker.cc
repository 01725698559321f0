#include "coordinator/in_process_worker.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "psflow/status_macros.h"
#include "worker/function_runner.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {

InProcessWorker::InProcessWorker(int worker_index, const FunctionRegistry& registry,
                                 int num_workers, VariableClientLookup variables)
    : worker_index_(worker_index),
      registry_(registry),
      num_workers_(num_workers),
      variables_(std::move(variables)),
      thread_([this] { loop(); }) {}

InProcessWorker::~InProcessWorker() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

std::string InProcessWorker::task_name() const {
  return absl::StrCat("/job:worker/replica:0/task:", worker_index_);
}

void InProcessWorker::run_async(RunRequest request, Done done) {
  absl::MutexLock lock(&mu_);
  PSFLOW_CHECK(running_ == 0, task_name(), " asked to run closure ", request.closure_id,
               " while closure ", running_, " is in flight");
  running_ = request.closure_id;
  cancelled_.store(false, std::memory_order_relaxed);
  next_.emplace(Call{std::move(request), std::move(done)});
}

void InProcessWorker::cancel(uint64_t closure_id) {
  absl::MutexLock lock(&mu_);
  if (running_ != 0 && running_ == closure_id) cancelled_.store(true, std::memory_order_relaxed);
}

absl::Status InProcessWorker::dispose_per_worker(const std::vector<std::string>& ids,
                                                 absl::Time deadline) {
  PSFLOW_RETURN_IF_ERROR(validate_per_worker_ids(ids));
  (void)release_per_worker_objects(resources_, ids);
  return absl::OkStatus();
}

void InProcessWorker::loop() {
  while (true) {
    std::optional<Call> call;
    {
      absl::MutexLock lock(&mu_);
      const auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return next_.has_value() || stopping_;
      };
      mu_.Await(absl::Condition(&has_work));
      if (!next_.has_value()) return;  // Stopping, and nothing was accepted.
      call.swap(next_);
    }
    WorkerContext ctx(worker_index_, call->request.closure_id, resources_, cancelled_, num_workers_,
                      variables_ ? &variables_ : nullptr);
    ctx.set_update_session(call->request.session);
    RunResult result{
        absl::OkStatus(),
        run_registered_function(registry_, call->request.function_name, ctx, call->request.args)};
    {
      // Before `done`: the caller may start the next run from inside it.
      absl::MutexLock lock(&mu_);
      running_ = 0;
    }
    std::move(call->done)(std::move(result));
  }
}

}  // namespace psflow::internal
