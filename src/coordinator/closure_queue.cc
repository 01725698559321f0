#include "coordinator/closure_queue.h"

#include <utility>

#include "base/logging.h"
#include "coordinator/closure_errors.h"

namespace psflow::internal {

ClosureQueue::ClosureQueue(int64_t max_queued, absl::AnyInvocable<void()> on_first_error)
    : max_queued_(max_queued),
      on_first_error_(std::move(on_first_error)),
      last_finish_(absl::Now()) {}

absl::Status ClosureQueue::put(std::shared_ptr<Closure> closure) {
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::Status rejected;
  absl::Status cancelled;  // What the rejected closure ends with.
  bool waits_for_inputs = false;
  {
    absl::MutexLock lock(&mu_);
    const auto can_put = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopped_ || !error_.ok() || has_room_locked();
    };
    while (true) {
      mu_.Await(absl::Condition(&can_put));
      if (stopped_) {
        rejected = cancelled = coordinator_shut_down_error();
        break;
      }
      if (!error_.ok()) {
        rejected = raise_if_error_locked();
        cancelled = closure_cancelled_error();
        if (!rejected.ok()) break;
        continue;  // Another caller reported it meanwhile: look again.
      }
      if (closure->inputs().empty()) {
        fifo_.push_back(closure);
      } else {
        waiting_.emplace(closure->id(), closure);
        waits_for_inputs = true;
      }
      break;
    }
  }
  if (!rejected.ok()) {
    // TF queues the closure, then cancels it with everything else; its
    // RemoteValue is never handed out.
    closure->finish(std::move(cancelled));
    return rejected;
  }
  if (waits_for_inputs) watch_inputs(closure);
  return absl::OkStatus();
}

void ClosureQueue::watch_inputs(const std::shared_ptr<Closure>& closure) {
  const std::weak_ptr<ClosureQueue> weak_queue = weak_from_this();
  const std::weak_ptr<Closure> weak_closure = closure;
  for (const RemoteValue& input : closure->inputs()) {
    // May run at once, on this thread, when the input is already READY.
    internal::RemoteValueAccess::state(input)->on_ready([weak_queue, weak_closure] {
      std::shared_ptr<Closure> ready = weak_closure.lock();
      if (ready == nullptr || !ready->input_ready()) return;
      if (std::shared_ptr<ClosureQueue> queue = weak_queue.lock()) {
        queue->on_inputs_ready(std::move(ready));
      }
    });
  }
}

void ClosureQueue::on_inputs_ready(std::shared_ptr<Closure> closure) {
  absl::Status input_error = closure->input_error();
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (waiting_.erase(closure->id()) == 0) return;  // Cancelled meanwhile.
    if (input_error.ok()) {
      fifo_.push_back(std::move(closure));
      return;
    }
    ++in_flight_;  // Being failed: reports wait for the cancellations.
    first = record_error_locked(input_error);
  }
  PSFLOW_LOG(Warning, "closure ", closure->id(), " ('", closure->function_name(),
             "') does not run: ", input_error.ToString());
  if (first) on_first_error_();
  closure->finish(std::move(input_error));
  finish_failure(first);
}

std::shared_ptr<Closure> ClosureQueue::get() {
  absl::MutexLock lock(&mu_);
  const auto can_get = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopped_ || (error_.ok() && !fifo_.empty());
  };
  mu_.Await(absl::Condition(&can_get));
  if (stopped_) return nullptr;
  std::shared_ptr<Closure> closure = std::move(fifo_.front());
  fifo_.pop_front();
  ++in_flight_;
  return closure;
}

void ClosureQueue::mark_finished(const std::shared_ptr<Closure>& closure, Structure result) {
  // The result is on the coordinator before the closure stops counting.
  closure->finish(std::move(result));
  absl::MutexLock lock(&mu_);
  --in_flight_;
  last_finish_ = absl::Now();
}

void ClosureQueue::mark_failed(const std::shared_ptr<Closure>& closure, absl::Status error,
                               bool in_doubt) {
  bool first;
  {
    absl::MutexLock lock(&mu_);
    if (in_doubt) ++in_doubt_;
    first = record_error_locked(error);
    last_finish_ = absl::Now();
  }
  if (first) on_first_error_();
  // Before the cancellations: closures waiting for this one get an input
  // error (this closure's, not a plain CANCELLED).
  closure->finish(std::move(error));
  finish_failure(first);
}

void ClosureQueue::put_back(std::shared_ptr<Closure> closure) {
  absl::Status cancelled;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      cancelled = coordinator_shut_down_error();
    } else if (!error_.ok()) {
      cancelled = closure_cancelled_error();
    } else {
      fifo_.push_back(std::move(closure));
      --in_flight_;
      return;
    }
    ++in_doubt_;  // Its worker failed mid-call, and it runs no more.
  }
  closure->finish(std::move(cancelled));
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

int64_t ClosureQueue::abort_queued(const absl::Status& error) {
  bool first;
  std::vector<std::shared_ptr<Closure>> aborted;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return 0;
    first = record_error_locked(error);
    aborted = take_all_locked();
    ++in_flight_;  // Until the results are set: no report overtakes them.
  }
  if (first) on_first_error_();
  for (const std::shared_ptr<Closure>& closure : aborted) closure->finish(error);
  absl::MutexLock lock(&mu_);
  --in_flight_;
  return static_cast<int64_t>(aborted.size());
}

absl::Time ClosureQueue::last_finish() const {
  absl::MutexLock lock(&mu_);
  return last_finish_;
}

absl::Status ClosureQueue::wait() {
  absl::MutexLock put_lock(&put_wait_mu_);
  absl::MutexLock lock(&mu_);
  const auto idle_or_error = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopped_ || !error_.ok() || (queued_locked() == 0 && in_flight_ == 0);
  };
  mu_.Await(absl::Condition(&idle_or_error));
  return raise_if_error_locked();
}

absl::StatusOr<bool> ClosureQueue::done() {
  absl::MutexLock lock(&mu_);
  absl::Status error = raise_if_error_locked();
  if (!error.ok()) return error;
  return queued_locked() == 0 && in_flight_ == 0;
}

void ClosureQueue::stop() {
  std::vector<std::shared_ptr<Closure>> cancelled;
  {
    absl::MutexLock lock(&mu_);
    stopped_ = true;
    cancelled = take_all_locked();
  }
  for (const std::shared_ptr<Closure>& closure : cancelled) {
    closure->finish(coordinator_shut_down_error());
  }
}

void ClosureQueue::await_no_in_flight() {
  absl::MutexLock lock(&mu_);
  const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  mu_.Await(absl::Condition(&idle));
}

int64_t ClosureQueue::num_queued() const {
  absl::MutexLock lock(&mu_);
  return queued_locked();
}

int64_t ClosureQueue::num_in_doubt() const {
  absl::MutexLock lock(&mu_);
  return in_doubt_;
}

int64_t ClosureQueue::num_in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

bool ClosureQueue::record_error_locked(const absl::Status& error) {
  PSFLOW_CHECK(!error.ok(), "recording an OK status as a closure error");
  if (!error_.ok()) return false;  // The first error wins.
  error_ = error;
  return true;
}

void ClosureQueue::finish_failure(bool first) {
  std::vector<std::shared_ptr<Closure>> cancelled;
  if (first) {
    absl::MutexLock lock(&mu_);
    cancelled = take_all_locked();
  }
  for (const std::shared_ptr<Closure>& closure : cancelled) {
    closure->finish(closure_cancelled_error());
  }
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

std::vector<std::shared_ptr<Closure>> ClosureQueue::take_all_locked() {
  std::vector<std::shared_ptr<Closure>> out;
  out.reserve(fifo_.size() + waiting_.size());
  for (auto& closure : fifo_) {
    // Only put-back closures were sent to a worker before.
    if (closure->attempts > 0) ++in_doubt_;
    out.push_back(std::move(closure));
  }
  for (auto& [id, closure] : waiting_) out.push_back(std::move(closure));
  fifo_.clear();
  waiting_.clear();
  return out;
}

absl::Status ClosureQueue::raise_if_error_locked() {
  if (error_.ok()) return absl::OkStatus();
  // "No function is still being executed" when the error is reported.
  const auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return in_flight_ == 0; };
  mu_.Await(absl::Condition(&idle));
  absl::Status error = error_;  // OK if another caller reported it meanwhile.
  error_ = absl::OkStatus();
  return error;
}

}  // namespace psflow::internal
