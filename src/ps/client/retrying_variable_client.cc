#include "ps/client/retrying_variable_client.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/random/random.h"
#include "absl/synchronization/mutex.h"
#include "ps/client/ps_failure.h"
#include "rpc/grpc_status.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

bool is_set_not_accumulate(Op::Kind kind) {
  switch (kind) {
    case Op::ASSIGN:
    case Op::SCATTER_UPDATE:
    case Op::SCATTER_MIN:
    case Op::SCATTER_MAX:
    case Op::CREATE:
    case Op::CREATE_IF_ABSENT:
    case Op::RESTORE:
    case Op::DE_CREATE:
    case Op::DE_IMPORT: return true;
    default: return !is_mutating(kind);
  }
}

// Waits of the client's retries, run by one thread started on first need.
// Thread-safety: thread-safe. stop() runs every pending wait at once with
// `run` = false and refuses new ones.
class RetryTimer {
 public:
  using Task = absl::AnyInvocable<void(bool run) &&>;

  ~RetryTimer() { stop(); }

  // False (and `task` dropped uncalled) once stopping.
  bool schedule(absl::Time when, Task task) {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    tasks_.emplace(when, std::move(task));
    cv_.Signal();
    return true;
  }

  void stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.Signal();
    }
    if (thread_.joinable()) thread_.join();
    // The thread ran what was pending; anything scheduled without a thread
    // cannot exist (schedule starts it).
  }

 private:
  void loop() {
    absl::MutexLock lock(&mu_);
    while (true) {
      if (stopping_) {
        // schedule() refuses tasks from now on, so these are the last.
        std::multimap<absl::Time, Task> pending;
        pending.swap(tasks_);
        mu_.Unlock();
        for (auto& [when, task] : pending) std::move(task)(false);
        mu_.Lock();
        return;
      }
      if (tasks_.empty()) {
        cv_.Wait(&mu_);
        continue;
      }
      const absl::Time first = tasks_.begin()->first;
      if (absl::Now() < first) {
        cv_.WaitWithDeadline(&mu_, first);
        continue;
      }
      Task task = std::move(tasks_.begin()->second);
      tasks_.erase(tasks_.begin());
      mu_.Unlock();
      std::move(task)(true);
      mu_.Lock();
    }
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::multimap<absl::Time, Task> tasks_ ABSL_GUARDED_BY(mu_);
  // Started under mu_ by the first schedule(); joined by stop() once
  // stopping_ is set, when nothing writes it any more.
  std::thread thread_;
};

// One logical call across its attempts.
template <typename Request, typename Result>
struct RetriedCall {
  Request request;  // Kept to send again; each attempt sends a copy.
  absl::Time deadline;
  std::function<void(Result)> done;
  int attempt = 1;
  absl::Duration backoff;

  // Ends the call with `result`. The request (and so any result buffers
  // it names) is dropped first: the caller may reuse those buffers as
  // soon as it has the result, while the transport still holds this call.
  void finish(Result result) {
    std::function<void(Result)> to_call = std::move(done);
    request = Request();
    to_call(std::move(result));
  }
};

// Thread-safety: all methods are thread-safe (see the header).
class RetryingVariableClient final : public VariableClient {
 public:
  RetryingVariableClient(std::unique_ptr<VariableClient> inner, RetryPolicy policy)
      : inner_(std::move(inner)), policy_(policy) {}

  ~RetryingVariableClient() override {
    // Pending waits end first (their callers get their last status), then
    // the inner client cancels the attempts in flight; their failures find
    // the timer stopped and are returned as they are.
    timer_.stop();
    inner_.reset();
  }

  const std::string& task_name() const override { return inner_->task_name(); }
  bool uses_shared_memory() const override { return inner_->uses_shared_memory(); }

  void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) override {
    if (policy_.max_attempts <= 1 || !is_safe_to_repeat(batch)) {
      inner_->execute_batch_async(std::move(batch), deadline, std::move(done));
      return;
    }
    using Call = RetriedCall<ExecuteBatch, absl::StatusOr<std::vector<Tensor>>>;
    auto call = std::make_shared<Call>(
        Call{std::move(batch), deadline, std::move(done), 1, policy_.initial_backoff});
    send(call, [this](const std::shared_ptr<Call>& c, auto on_result) {
      inner_->execute_batch_async(c->request, c->deadline, std::move(on_result));
    });
  }

 private:
  // Sends one attempt of `call` through `issue(call, on_result)`.
  template <typename Call, typename Issue>
  void send(const std::shared_ptr<Call>& call, Issue issue) {
    issue(call, [this, call, issue](auto result) mutable {
      if (result.ok() || !is_retryable(result.status()) || call->attempt >= policy_.max_attempts) {
        call->finish(std::move(result));
        return;
      }
      const absl::Duration wait = jittered(call->backoff);
      if (absl::Now() + wait >= call->deadline) {
        call->finish(std::move(result));
        return;
      }
      absl::Status last = result.status();
      auto retry = [this, call, issue, last](bool run) mutable {
        if (!run) {
          call->finish(last);
          return;
        }
        ++call->attempt;
        call->backoff = std::min(call->backoff * 2, policy_.max_backoff);
        send(call, issue);
      };
      // A stopping client drops `retry` uncalled: answer here instead.
      if (!timer_.schedule(absl::Now() + wait, std::move(retry))) call->finish(std::move(last));
    });
  }

  absl::Duration jittered(absl::Duration backoff) {
    thread_local absl::BitGen gen;
    return backoff * absl::Uniform(gen, 0.5, 1.0);
  }

  std::unique_ptr<VariableClient> inner_;
  const RetryPolicy policy_;
  RetryTimer timer_;
};

}  // namespace

bool is_safe_to_repeat(const ExecuteBatch& batch) {
  if (batch.update_key.has_value()) return true;
  return std::all_of(batch.ops.begin(), batch.ops.end(),
                     [](const VariableOpArgs& op) { return is_set_not_accumulate(op.kind); });
}

std::unique_ptr<VariableClient> make_retrying_variable_client(std::unique_ptr<VariableClient> inner,
                                                              RetryPolicy policy) {
  return std::make_unique<RetryingVariableClient>(std::move(inner), policy);
}

std::unique_ptr<VariableClient> make_ps_client(const std::string& target, std::string task_name) {
  return make_ps_failure_client(
      make_retrying_variable_client(make_grpc_variable_client(target, std::move(task_name))));
}

}  // namespace psflow::internal
