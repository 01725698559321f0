#include "coordinator/worker_dispatcher.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "coordinator/closure_errors.h"
#include "rpc/grpc_status.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {
namespace {

constexpr absl::Duration kFirstProbeBackoff = absl::Milliseconds(100);
constexpr absl::Duration kMaxProbeBackoff = absl::Seconds(5);
// One probe call's bound: short, so that join() is never held up long.
constexpr absl::Duration kProbeTimeout = absl::Seconds(1);
// A release of per-worker objects is short; join() waits for it.
constexpr absl::Duration kDisposeTimeout = absl::Seconds(5);

}  // namespace

WorkerDispatcher::WorkerDispatcher(int worker_index, std::unique_ptr<WorkerConnection> connection,
                                   std::shared_ptr<ClosureQueue> queue, int max_in_flight,
                                   int max_worker_failures, uint64_t session,
                                   uint64_t result_session, absl::Duration start_delay)
    : worker_index_(worker_index),
      connection_(std::move(connection)),
      queue_(std::move(queue)),
      max_in_flight_(std::max(1, std::min(max_in_flight, connection_->max_in_flight()))),
      max_worker_failures_(max_worker_failures),
      session_(session),
      result_session_(connection_->supports_result_refs() ? result_session : 0),
      start_delay_(start_delay) {}

WorkerDispatcher::~WorkerDispatcher() {
  PSFLOW_CHECK(!thread_.joinable(), "WorkerDispatcher destroyed before join()");
}

void WorkerDispatcher::start() {
  thread_ = std::thread([this] { loop(); });
}

void WorkerDispatcher::join() {
  {
    absl::MutexLock lock(&mu_);
    joining_ = true;  // Cuts a back-off short.
  }
  if (thread_.joinable()) thread_.join();
}

void WorkerDispatcher::cancel_running() {
  std::vector<uint64_t> ids;
  {
    absl::MutexLock lock(&mu_);
    ids.assign(running_.begin(), running_.end());
  }
  // Outside the lock: a cancellation may complete a run on this thread.
  for (uint64_t id : ids) connection_->cancel(id);
}

void WorkerDispatcher::loop() {
  const auto has_room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return static_cast<int>(running_.size()) < max_in_flight_;
  };
  if (start_delay_ > absl::ZeroDuration()) {
    // Staggered start: the other workers take the closures meanwhile.
    absl::MutexLock lock(&mu_);
    (void)mu_.AwaitWithTimeout(absl::Condition(&joining_), start_delay_);
  }
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(&has_room));
    }
    // After the room: a run that just ended may have lost the worker.
    await_recovery();
    std::shared_ptr<Closure> closure = queue_->get();
    if (closure == nullptr) break;
    start_run(std::move(closure));
  }
  // Stopped: every outstanding run still reports to the queue.
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](absl::flat_hash_set<uint64_t>* running) { return running->empty(); }, &running_));
}

void WorkerDispatcher::start_run(std::shared_ptr<Closure> closure, bool resend) {
  if (!resend) ++closure->attempts;
  RunRequest request{closure->id(), closure->function_name(), Structure(), session_};
  request.result_session = result_session_;
  request.worker_recoveries = recoveries_.load(std::memory_order_relaxed);
  const uint64_t incarnation = incarnation_.load(std::memory_order_relaxed);
  request.last_incarnation = incarnation;
  if (result_session_ != 0 && incarnation != 0 && !closure->send_values) {
    request.args = closure->resolve_args(
        worker_index_,
        [&](const internal::RemoteValueState& input) {
          const std::optional<internal::RemoteValueState::Holder> holder = input.holder();
          return holder.has_value() && holder->result_session == result_session_ &&
                 holder->worker_index == worker_index_ && holder->incarnation == incarnation;
        },
        &request.input_refs);
  } else {
    request.args = closure->resolve_args(worker_index_);
  }
  bool healthy;
  {
    absl::MutexLock lock(&mu_);
    running_.insert(closure->id());
    healthy = !lost_since_.has_value();
  }
  connection_->run_async(std::move(request), [this, closure, healthy](RunResult result) {
    on_run_done(closure, healthy, std::move(result));
  });
}

void WorkerDispatcher::on_run_done(const std::shared_ptr<Closure>& closure, bool was_healthy,
                                   RunResult result) {
  if (result.transport.ok() && result.incarnation != 0) {
    incarnation_.store(result.incarnation, std::memory_order_relaxed);
  }
  if (result.transport.ok() && result.input_refs_missing) {
    // The worker evicted a referenced input or restarted: the same run
    // again with values (still outstanding, so join() keeps waiting).
    closure->send_values = true;
    start_run(closure, /*resend=*/true);
    return;
  }
  // The queue learns the outcome before this run stops counting as
  // outstanding, so join() (which waits on the dispatcher thread) never
  // sees a closure vanish.
  if (!result.transport.ok()) {
    if (is_retryable(result.transport)) {
      {
        absl::MutexLock lock(&mu_);
        if (!lost_since_.has_value()) lost_since_ = absl::Now();
        last_error_ = result.transport;
      }
      if (was_healthy) ++closure->worker_failures;
      if (max_worker_failures_ > 0 && closure->worker_failures >= max_worker_failures_) {
        PSFLOW_LOG(Error, "closure ", closure->id(), " ('", closure->function_name(),
                   "') was running when a worker failed ", closure->worker_failures,
                   " times; failing it as a poison closure");
        queue_->mark_failed(
            closure,
            absl::UnavailableError(absl::StrCat(
                "Closure ", closure->id(), " ('", closure->function_name(), "') was running on ",
                closure->worker_failures, " workers that failed during the call (the last: ",
                connection_->task_name(), ": ", result.transport.message(),
                "); it is presumed to crash workers and is not retried again "
                "(ClusterCoordinatorOptions::max_worker_failures_per_closure = ",
                max_worker_failures_, ").")),
            /*in_doubt=*/true);
      } else {
        PSFLOW_LOG(Warning, connection_->task_name(), " failed while running closure ",
                   closure->id(), " ('", closure->function_name(), "', attempt ", closure->attempts,
                   "); it goes back to the queue: ", result.transport.ToString());
        queue_->put_back(closure);
      }
    } else {
      PSFLOW_LOG(Warning, "closure ", closure->id(), " ('", closure->function_name(), "') on ",
                 connection_->task_name(), " failed: ", result.transport.ToString());
      queue_->mark_failed(closure, std::move(result.transport));
    }
  } else {
    if (!result.output.ok() && is_per_worker_input_error(result.output.status())) {
      result.output = per_worker_input_error(closure->function_name(), connection_->task_name(),
                                             result.output.status());
    }
    if (!result.output.ok()) {
      // Cancellations follow an earlier error, which was logged.
      if (!absl::IsCancelled(result.output.status())) {
        PSFLOW_LOG(Warning, "closure ", closure->id(), " ('", closure->function_name(), "') on ",
                   connection_->task_name(), " failed: ", result.output.status().ToString());
      }
      queue_->mark_failed(closure, std::move(result.output).status());
    } else {
      if (result.result_kept && result_session_ != 0) {
        internal::RemoteValueAccess::state(closure->output())
            ->set_holder({result_session_, worker_index_, result.incarnation});
      }
      queue_->mark_finished(closure, *std::move(result.output));
    }
  }
  absl::MutexLock lock(&mu_);
  running_.erase(closure->id());
}

WorkerDispatcher::Health WorkerDispatcher::health() const {
  absl::MutexLock lock(&mu_);
  return Health{lost_since_, last_error_};
}

absl::Status WorkerDispatcher::dispose_per_worker(const std::vector<std::string>& ids) {
  {
    absl::MutexLock lock(&mu_);
    if (lost_since_.has_value()) {
      return absl::UnavailableError(
          absl::StrCat(connection_->task_name(), " is lost: ", last_error_.message()));
    }
  }
  return connection_->dispose_per_worker(ids, absl::Now() + kDisposeTimeout);
}

void WorkerDispatcher::await_recovery() {
  absl::Duration backoff = kFirstProbeBackoff;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (!lost_since_.has_value() || joining_) return;
      // Runs still outstanding on the lost worker report first.
      mu_.Await(absl::Condition(
          +[](absl::flat_hash_set<uint64_t>* running) { return running->empty(); }, &running_));
      if (mu_.AwaitWithTimeout(absl::Condition(&joining_), backoff)) return;
    }
    absl::Status probe = connection_->probe(absl::Now() + kProbeTimeout);
    if (probe.ok()) {
      PSFLOW_LOG(Info, connection_->task_name(), " answers again; it takes closures again");
      recoveries_.fetch_add(1, std::memory_order_relaxed);
      absl::MutexLock lock(&mu_);
      lost_since_.reset();
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      last_error_ = probe;
    }
    backoff = std::min(kMaxProbeBackoff, backoff * 2);
  }
}

}  // namespace psflow::internal
