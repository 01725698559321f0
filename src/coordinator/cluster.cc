#include "coordinator/cluster.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/strings.h"
#include "base/thread_stacks.h"
#include "coordinator/closure.h"
#include "coordinator/remote_structure_walk.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

// TF's Worker._maybe_delay: delay * index, capped when the cap is set.
absl::Duration start_delay(const ClusterCoordinatorOptions& options, int worker_index) {
  const absl::Duration delay = options.schedule_start_delay * worker_index;
  return options.schedule_start_delay_max > absl::ZeroDuration()
             ? std::min(delay, options.schedule_start_delay_max)
             : delay;
}

}  // namespace

Cluster::Cluster(std::vector<std::unique_ptr<WorkerConnection>> workers,
                 const ClusterCoordinatorOptions& options,
                 std::vector<TaskHeartbeats::Task> heartbeats)
    : registry_(options.registry != nullptr ? *options.registry : FunctionRegistry::global()),
      session_(absl::Uniform<uint64_t>(absl::BitGen(), 1, std::numeric_limits<uint64_t>::max())),
      queue_(std::make_shared<ClosureQueue>(options.max_queued_closures,
                                            [this] { cancel_running(); })) {
  dispatchers_.reserve(workers.size());
  for (size_t i = 0; i < workers.size(); ++i) {
    dispatchers_.push_back(std::make_unique<WorkerDispatcher>(
        static_cast<int>(i), std::move(workers[i]), queue_, options.max_in_flight_per_worker,
        options.max_worker_failures_per_closure, options.exactly_once ? session_ : 0,
        options.same_worker_chaining ? session_ : 0, start_delay(options, static_cast<int>(i))));
  }
  for (auto& dispatcher : dispatchers_) dispatcher->start();
  if (options.heartbeat_interval > absl::ZeroDuration() && !heartbeats.empty()) {
    TaskHeartbeats::Options beats;
    beats.interval = options.heartbeat_interval;
    beats.timeout = options.heartbeat_timeout;
    heartbeats_ = std::make_unique<TaskHeartbeats>(std::move(heartbeats), beats);
  }
  per_worker_ = std::make_shared<PerWorkerRegistry>(
      num_workers(), static_cast<size_t>(std::max(1, options.per_worker_dispose_batch_size)),
      [this](int worker, const std::vector<std::string>& ids) {
        return dispatchers_[static_cast<size_t>(worker)]->dispose_per_worker(ids);
      });
  per_worker_->start();
  CoordinatorWatchdog::Options watchdog;
  watchdog.stall_timeout = options.watchdog_timeout;
  watchdog.all_workers_lost_timeout = options.all_workers_lost_timeout;
  if (!options.stack_dump_dir.empty()) {
    watchdog.dump_stacks = [dir = options.stack_dump_dir] {
      return write_thread_stacks(dir, "watchdog-stacks");
    };
  }
  watchdog_ = std::make_unique<CoordinatorWatchdog>(
      watchdog, [this] { return watchdog_snapshot(); },
      [this](const absl::Status& error) { (void)queue_->abort_queued(error); });
}

WatchdogSnapshot Cluster::watchdog_snapshot() const {
  WatchdogSnapshot s;
  s.queued = queue_->num_queued();
  s.in_flight = queue_->num_in_flight();
  s.last_finish = queue_->last_finish();
  for (const auto& dispatcher : dispatchers_) {
    const WorkerDispatcher::Health health = dispatcher->health();
    WatchdogSnapshot::Worker w;
    w.task_name = dispatcher->task_name();
    w.lost_since = health.lost_since;
    w.last_error = health.last_error;
    s.workers.push_back(std::move(w));
  }
  s.tasks = task_states(absl::Now());
  return s;
}

std::vector<TaskState> Cluster::task_states(absl::Time now) const {
  std::vector<TaskState> beats;
  if (heartbeats_ != nullptr) beats = heartbeats_->states(now);
  std::vector<bool> used(beats.size(), false);
  std::vector<TaskState> out;
  for (const auto& dispatcher : dispatchers_) {
    const std::string name = dispatcher->task_name();
    const auto it = std::find_if(beats.begin(), beats.end(),
                                 [&](const TaskState& b) { return b.task == name; });
    if (it != beats.end()) {
      used[it - beats.begin()] = true;
      out.push_back(*it);
      continue;
    }
    // No heartbeats: what its dispatcher knows.
    const WorkerDispatcher::Health health = dispatcher->health();
    TaskState state{name, absl::OkStatus(), 0, 0};
    if (health.lost_since.has_value()) {
      state.error = absl::UnavailableError(absl::StrCat(
          "Task ", name, " is not answering (lost for ",
          absl::FormatDuration(absl::Trunc(now - *health.lost_since, absl::Milliseconds(100))),
          health.last_error.ok() ? ""
                                 : absl::StrCat("; last error: ", health.last_error.ToString()),
          ")"));
    }
    out.push_back(std::move(state));
  }
  for (size_t i = 0; i < beats.size(); ++i) {
    if (!used[i]) out.push_back(std::move(beats[i]));
  }
  return out;
}

Cluster::~Cluster() {
  watchdog_.reset();
  queue_->stop();
  cancel_running();
  for (auto& dispatcher : dispatchers_) dispatcher->join();
  // Failures handled on other threads (closures fed by RemoteValues of
  // another coordinator) may still reach cancel_running(); the dispatchers
  // must outlive them.
  queue_->await_no_in_flight();
  // Every closure has ended: the workers drop this coordinator's
  // per-worker objects, through the connections the dispatchers still own.
  per_worker_->stop();
}

absl::Status Cluster::join() {
  absl::Status status = queue_->wait();
  per_worker_->flush();
  return status;
}

absl::StatusOr<RemoteValue> Cluster::schedule(std::string_view function_name,
                                              RemoteStructure args) {
  PSFLOW_ASSIGN_OR_RETURN(const RegisteredFunction* function, registry_.lookup(function_name));
  absl::Status empty_input;
  for_each_remote_value(args, "args", [&](const std::string& path, const RemoteValue& value) {
    if (value.valid()) return true;
    empty_input = absl::InvalidArgumentError(absl::StrCat(
        "Argument ", path, " of '", function->name,
        "' is an empty RemoteValue (default-constructed); pass one returned by schedule()."));
    return false;
  });
  PSFLOW_RETURN_IF_ERROR(empty_input);
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::shared_ptr<const PerWorkerLease>> pins,
                          per_worker_->pin(args));
  auto closure = std::make_shared<Closure>(next_closure_id_.fetch_add(1, std::memory_order_relaxed),
                                           function->name, std::move(args));
  closure->set_pins(std::move(pins));
  RemoteValue output = closure->output();
  PSFLOW_RETURN_IF_ERROR(queue_->put(std::move(closure)));
  return output;
}

void Cluster::cancel_running() {
  for (auto& dispatcher : dispatchers_) dispatcher->cancel_running();
}

}  // namespace psflow::internal
