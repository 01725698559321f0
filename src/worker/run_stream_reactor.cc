// ExecutorService.RunFunctions: the coordinator's closures on one stream.
// Each run is validated and started exactly as a unary RunFunction
// (ExecutorServiceImpl::start_run); answers are written as their closures
// finish, all that are waiting in one message.
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/tsan_annotations.h"
#include "rpc/grpc_status.h"
#include "worker/executor_service.h"

namespace psflow::internal {
namespace {

// Raw messages, parsed here: a message that does not parse then ends the
// stream INVALID_ARGUMENT (gRPC's typed reader would take it for the end of
// the client's writes).
using Request = grpc::ByteBuffer;
using Response = grpc::ByteBuffer;

// More runs in one message is a broken or hostile client.
constexpr int kMaxRunsPerMessage = 1024;
// Answers are batched up to this many encoded bytes (a larger one alone).
constexpr size_t kMaxAnswerBatchBytes = size_t{1} << 20;

// Refuses the stream at once (the caller may not run closures).
class Refusal final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  explicit Refusal(const grpc::Status& status) {
    tsan_release(this);  // Finish -> OnDone (see RunStreamReactor).
    Finish(status);
  }
  void OnDone() override {
    tsan_acquire(this);
    delete this;
  }
};

// Thread-safety: thread-safe; gRPC's callbacks and the function threads'
// answers meet under mu_. Deletes itself once gRPC is done with the stream
// and every run it started has answered (a run holds `this`).
class RunStreamReactor final : public grpc::ServerBidiReactor<Request, Response> {
 public:
  RunStreamReactor(ExecutorServiceImpl* service, const TaskStatus* status, PeerIdentity caller)
      : service_(service), status_(status), caller_(std::move(caller)) {
    tsan_release(this);
    StartRead(&raw_in_);
  }

  // gRPC runs each callback after the operation it completes was started
  // (StartRead, StartWrite, Finish), possibly on another thread, ordered by
  // its own synchronization: stated to TSan as a release of `this` before
  // each start and an acquire at the top of each callback.
  void OnReadDone(bool ok) override {
    tsan_acquire(this);
    if (!ok) {
      Actions actions;
      {
        absl::MutexLock lock(&mu_);
        reads_done_ = true;
        actions = next_locked();
      }
      apply(actions);
      return;
    }
    in_.Clear();
    grpc::ProtoBufferReader reader(&raw_in_);
    if (!reader.status().ok() || !in_.ParseFromZeroCopyStream(&reader)) {
      fail(absl::InvalidArgumentError(
          "RunFunctions: malformed psflow.v1.RunFunctionsRequest: the bytes are not a valid "
          "protobuf encoding of it (truncated, corrupt, or a string field that is not UTF-8)"));
      return;
    }
    raw_in_.Clear();
    if (in_.runs_size() > kMaxRunsPerMessage) {
      fail(absl::InvalidArgumentError(
          absl::StrCat("RunFunctions: a message carries ", in_.runs_size(), " runs; at most ",
                       kMaxRunsPerMessage, " are allowed per message")));
      return;
    }
    for (v1::RunFunctionRequest& run_request : *in_.mutable_runs()) {
      auto run = std::make_shared<Run>();
      run->request.Swap(&run_request);
      const uint64_t closure_id = run->request.closure_id();
      bool duplicate;
      {
        absl::MutexLock lock(&mu_);
        duplicate = !in_flight_.insert(closure_id).second;
      }
      if (duplicate) {
        // Its answer could not be told from the first one's.
        fail(absl::InvalidArgumentError(absl::StrCat(
            "RunFunctions: closure ", closure_id,
            " is sent again while its run on this stream is still in flight; a closure id "
            "may be reused only after its answer came")));
        return;
      }
      service_->start_run(caller_, run->request, &run->response,
                          [this, run](const grpc::Status& status) { answer(*run, status); });
    }
    in_.Clear();
    tsan_release(this);
    StartRead(&raw_in_);
  }

  void OnWriteDone(bool ok) override {
    tsan_acquire(this);
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      // A failed write: the stream is gone, and OnDone follows.
      if (!ok) broken_ = true;
      actions = next_locked();
    }
    apply(actions);
  }

  void OnCancel() override {
    tsan_acquire(this);
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      if (!finish_status_.has_value()) finish_status_ = grpc::Status::CANCELLED;
      actions = next_locked();
    }
    apply(actions);
  }

  void OnDone() override {
    tsan_acquire(this);
    bool last;
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
      last = in_flight_.empty();
    }
    if (last) delete this;
  }

 private:
  struct Run {
    v1::RunFunctionRequest request;
    v1::RunFunctionResponse response;
  };
  // What to do outside the lock (gRPC may call back inline).
  struct Actions {
    bool write = false;
    std::optional<grpc::Status> finish;
    bool destroy = false;
  };

  void answer(Run& run, const grpc::Status& status) {
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      in_flight_.erase(run.request.closure_id());
      if (!finish_status_.has_value() && !broken_) {
        v1::RunFunctionResult& result = answers_.emplace_back();
        result.set_closure_id(run.request.closure_id());
        if (status.ok()) {
          result.mutable_response()->Swap(&run.response);
        } else {
          result.set_status_code(static_cast<int32_t>(status.error_code()));
          result.set_status_message(status.error_message());
        }
      }
      actions = next_locked();
      actions.destroy = done_ && in_flight_.empty();
    }
    apply(actions);
  }

  // Ends the stream with `error` (after the write in flight, if any).
  void fail(const absl::Status& error) {
    status_->note_error("RunFunctions", error);
    Actions actions;
    {
      absl::MutexLock lock(&mu_);
      if (!finish_status_.has_value()) finish_status_ = to_grpc_status(error);
      answers_.clear();
      actions = next_locked();
    }
    apply(actions);
  }

  // The next write, or the end of the stream once nothing is left to do.
  Actions next_locked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Actions actions;
    if (writing_ || finished_) return actions;
    if (!finish_status_.has_value() && !broken_ && !answers_.empty()) {
      out_.Clear();
      size_t bytes = 0;
      size_t taken = 0;
      while (taken < answers_.size() && (taken == 0 || bytes < kMaxAnswerBatchBytes)) {
        bytes += answers_[taken].ByteSizeLong();
        out_.add_results()->Swap(&answers_[taken]);
        ++taken;
      }
      answers_.erase(answers_.begin(), answers_.begin() + static_cast<std::ptrdiff_t>(taken));
      raw_out_.Clear();
      bool own_buffer = false;
      if (grpc::Status serialized =
              grpc::GenericSerialize<grpc::ProtoBufferWriter, v1::RunFunctionsResponse>(
                  out_, &raw_out_, &own_buffer);
          !serialized.ok()) {
        // Only answers past 2 GiB (protobuf's limit) fail to encode.
        finished_ = true;
        actions.finish =
            grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                         absl::StrCat("RunFunctions: answers could not be encoded (over 2 GiB?): ",
                                      serialized.error_message()));
        return actions;
      }
      writing_ = true;
      actions.write = true;
      return actions;
    }
    if (finish_status_.has_value() || broken_) {
      finished_ = true;
      actions.finish = finish_status_.value_or(grpc::Status::CANCELLED);
    } else if (reads_done_ && in_flight_.empty()) {
      // The client closed its side and every closure has answered.
      finished_ = true;
      actions.finish = grpc::Status::OK;
    }
    return actions;
  }

  void apply(const Actions& actions) {
    if (actions.write || actions.finish.has_value()) tsan_release(this);
    if (actions.write) StartWrite(&raw_out_);
    if (actions.finish.has_value()) Finish(*actions.finish);
    if (actions.destroy) delete this;
  }

  ExecutorServiceImpl* const service_;
  const TaskStatus* const status_;
  const PeerIdentity caller_;
  // Touched by the read callbacks only (one read at a time).
  grpc::ByteBuffer raw_in_;
  v1::RunFunctionsRequest in_;

  absl::Mutex mu_;
  // Closures of this stream whose answers are not queued yet.
  absl::flat_hash_set<uint64_t> in_flight_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::RunFunctionResult> answers_ ABSL_GUARDED_BY(mu_);
  // The message being written: filled under mu_ while no write is in
  // flight, then (raw_out_) gRPC's until OnWriteDone.
  v1::RunFunctionsResponse out_;
  grpc::ByteBuffer raw_out_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> finish_status_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* ExecutorServiceImpl::RunFunctions(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerRunFunctions);
  if (!caller.ok()) {
    status_->note_error("RunFunctions", caller.status());
    return new Refusal(to_grpc_status(caller.status()));
  }
  return new RunStreamReactor(this, status_, *std::move(caller));
}

}  // namespace psflow::internal
