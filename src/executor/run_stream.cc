#include "executor/run_stream.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/tsan_annotations.h"
#include "rpc/grpc_status.h"

namespace psflow::internal {
namespace {

// The worker refuses more (run_stream_reactor.cc).
constexpr int kMaxRunsPerMessage = 1024;
// Runs are batched up to this many encoded bytes (a larger one alone).
constexpr size_t kMaxBatchBytes = size_t{1} << 20;

}  // namespace

// Thread-safety: thread-safe. Owned by its RunStream's live_ list, which it
// leaves (and so is freed) as gRPC's last use of it, at the end of OnDone,
// after every run's callback has run.
class RunStream::Call final
    : public grpc::ClientBidiReactor<v1::RunFunctionsRequest, v1::RunFunctionsResponse> {
 public:
  enum class Sent { kSent, kBroken, kDuplicate };

  Call(RunStream* owner, const std::string& task_name, const std::string& target)
      : owner_(owner), task_name_(task_name), target_(target) {}

  // Opens the stream, writing the runs sent meanwhile. Called once, by the
  // creator, without the owner's lock (gRPC may call back inline).
  void start(v1::ExecutorService::Stub* stub) ABSL_LOCKS_EXCLUDED(mu_) {
    stub->async()->RunFunctions(&context_, this);
    tsan_release(this);
    StartRead(&in_);
    // Until the stream is known broken and no write is in flight, so that
    // a write never starts after OnDone.
    AddHold();
    bool write = false;
    {
      absl::MutexLock lock(&mu_);
      started_ = true;
      if (!outbox_.empty()) {
        fill_locked();
        write = true;
      }
    }
    tsan_release(this);
    if (write) StartWrite(&out_);
    StartCall();
  }

  // kSent moves `request` and `done` in; otherwise both are untouched.
  Sent send(v1::RunFunctionRequest& request, RunDone& done) ABSL_LOCKS_EXCLUDED(mu_) {
    {
      absl::MutexLock lock(&mu_);
      if (broken_) return Sent::kBroken;
      if (!pending_.try_emplace(request.closure_id(), std::move(done)).second) {
        return Sent::kDuplicate;
      }
      outbox_.push_back(std::move(request));
      // A write in flight takes this run with the next message, as does
      // start().
      if (writing_ || !started_) return Sent::kSent;
      fill_locked();
    }
    tsan_release(this);
    StartWrite(&out_);
    return Sent::kSent;
  }

  bool broken() const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return broken_;
  }
  bool is_pending(uint64_t closure_id) const ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return pending_.contains(closure_id);
  }
  void cancel() { context_.TryCancel(); }

  // gRPC runs each callback after the operation it completes was started,
  // possibly on another thread, ordered by its own synchronization: stated
  // to TSan as a release of `this` before each start and an acquire at the
  // top of each callback.
  void OnWriteDone(bool ok) override {
    tsan_acquire(this);
    bool write = false;
    bool release = false;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) broken_ = true;
      if (!broken_ && !outbox_.empty()) {
        fill_locked();
        write = true;
      } else {
        release = release_locked();
      }
    }
    if (write) {
      tsan_release(this);
      StartWrite(&out_);
    }
    if (release) RemoveHold();
  }

  void OnReadDone(bool ok) override {
    tsan_acquire(this);
    if (!ok) {
      bool release;
      {
        absl::MutexLock lock(&mu_);
        broken_ = true;
        release = release_locked();
      }
      if (release) RemoveHold();
      return;
    }
    std::vector<std::pair<RunDone, v1::RunFunctionResult>> ready;
    {
      absl::MutexLock lock(&mu_);
      ready.reserve(static_cast<size_t>(in_.results_size()));
      for (v1::RunFunctionResult& result : *in_.mutable_results()) {
        auto it = pending_.find(result.closure_id());
        // An answer for no run of ours: a broken worker; nothing waits on it.
        if (it == pending_.end()) continue;
        ready.emplace_back(std::move(it->second), std::move(result));
        pending_.erase(it);
      }
    }
    in_.Clear();
    tsan_release(this);
    StartRead(&in_);
    for (auto& [done, result] : ready) {
      absl::Status transport;
      if (result.status_code() != 0) {
        transport = annotate_with_task(
            from_grpc_status(grpc::Status(static_cast<grpc::StatusCode>(result.status_code()),
                                          result.status_message())),
            task_name_, target_);
      }
      std::move(done)(transport, *result.mutable_response());
    }
  }

  void OnDone(const grpc::Status& status) override {
    tsan_acquire(this);
    absl::flat_hash_map<uint64_t, RunDone> failed;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      failed.swap(pending_);
      outbox_.clear();
    }
    const absl::Status transport = annotate_with_task(
        status.ok() ? absl::UnavailableError("the worker ended the closure stream")
                    : from_grpc_status(status),
        task_name_, target_);
    for (auto& [id, done] : failed) {
      v1::RunFunctionResponse none;
      std::move(done)(transport, none);
    }
    // Frees this call: its last statement.
    owner_->release(this);
  }

 private:
  // Moves the next batch from outbox_ into out_ and marks the write.
  void fill_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    out_.Clear();
    size_t bytes = 0;
    size_t taken = 0;
    while (taken < outbox_.size() && taken < static_cast<size_t>(kMaxRunsPerMessage) &&
           (taken == 0 || bytes < kMaxBatchBytes)) {
      bytes += outbox_[taken].ByteSizeLong();
      out_.add_runs()->Swap(&outbox_[taken]);
      ++taken;
    }
    outbox_.erase(outbox_.begin(), outbox_.begin() + static_cast<std::ptrdiff_t>(taken));
    writing_ = true;
  }

  bool release_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!broken_ || writing_ || hold_released_) return false;
    hold_released_ = true;
    return true;
  }

  RunStream* const owner_;
  const std::string task_name_;
  const std::string target_;
  grpc::ClientContext context_;
  // Touched by the read callbacks only (one read at a time).
  v1::RunFunctionsResponse in_;
  // Filled under mu_ while no write is in flight, then gRPC's until
  // OnWriteDone.
  v1::RunFunctionsRequest out_;

  mutable absl::Mutex mu_;
  // Runs sent or queued whose answers have not come.
  absl::flat_hash_map<uint64_t, RunDone> pending_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RunFunctionRequest> outbox_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool hold_released_ ABSL_GUARDED_BY(mu_) = false;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
};

RunStream::RunStream(v1::ExecutorService::Stub* stub, std::string task_name, std::string target)
    : stub_(stub), task_name_(std::move(task_name)), target_(std::move(target)) {}

RunStream::~RunStream() { shutdown(); }

void RunStream::run_async(v1::RunFunctionRequest request, RunDone done) {
  // A second attempt on a fresh stream when the current one broke meanwhile.
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::shared_ptr<Call> call;
    bool fresh = false;
    {
      absl::MutexLock lock(&mu_);
      if (shut_down_) break;
      if (current_ == nullptr || current_->broken()) {
        current_ = std::make_shared<Call>(this, task_name_, target_);
        live_.push_back(current_);
        fresh = true;
      }
      call = current_;
    }
    const Call::Sent sent = call->send(request, done);
    if (fresh) call->start(stub_);
    switch (sent) {
      case Call::Sent::kSent: return;
      case Call::Sent::kDuplicate: {
        v1::RunFunctionResponse none;
        std::move(done)(annotate_with_task(absl::FailedPreconditionError(
                                               absl::StrCat("closure ", request.closure_id(),
                                                            " is already running on this worker")),
                                           task_name_, target_),
                        none);
        return;
      }
      case Call::Sent::kBroken: break;
    }
  }
  bool shut_down;
  {
    absl::MutexLock lock(&mu_);
    shut_down = shut_down_;
  }
  v1::RunFunctionResponse none;
  std::move(done)(
      annotate_with_task(shut_down ? absl::CancelledError("the connection to the worker is closed")
                                   : absl::UnavailableError("the closure stream broke twice"),
                         task_name_, target_),
      none);
}

bool RunStream::is_running(uint64_t closure_id) const {
  absl::MutexLock lock(&mu_);
  return std::any_of(live_.begin(), live_.end(), [&](const std::shared_ptr<Call>& call) {
    return call->is_pending(closure_id);
  });
}

void RunStream::release(Call* call) {
  // The call is freed under the lock: shutdown() returns only once every
  // call is gone, so no context outlives the stub (and its channel).
  absl::MutexLock lock(&mu_);
  if (current_.get() == call) current_ = nullptr;
  live_.erase(std::remove_if(live_.begin(), live_.end(),
                             [&](const std::shared_ptr<Call>& c) { return c.get() == call; }),
              live_.end());
}

void RunStream::shutdown() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    absl::MutexLock lock(&mu_);
    shut_down_ = true;
    calls = live_;
  }
  for (const std::shared_ptr<Call>& call : calls) call->cancel();
  calls.clear();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::vector<std::shared_ptr<Call>>* live) { return live->empty(); }, &live_));
}

}  // namespace psflow::internal
