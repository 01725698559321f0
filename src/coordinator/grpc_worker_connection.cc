#include "coordinator/grpc_worker_connection.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "psflow/cluster_spec.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"

namespace psflow {
namespace {

// A function's status code as the worker reported it; anything outside
// absl's range (a buggy or hostile peer) becomes UNKNOWN.
absl::StatusCode function_code(int32_t code) {
  if (code <= 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::StatusCode::kUnknown;
  }
  return static_cast<absl::StatusCode>(code);
}

// Thread-safety: thread-safe. Each call's buffers belong to this object
// until its callback has run, so the destructor cancels the calls in
// flight and waits for their callbacks.
class GrpcWorkerConnection final : public WorkerConnection {
 public:
  // Enough to hide the network round trip behind short closures.
  static constexpr int kMaxInFlight = 64;

  GrpcWorkerConnection(const std::string& target, int worker_index,
                       const ChannelOptions& options)
      : target_(target),
        worker_index_(worker_index),
        task_name_(psflow::task_name(kWorkerJob, worker_index)),
        channel_(create_channel(target, options)),
        stub_(v1::ExecutorService::NewStub(channel_)) {}

  ~GrpcWorkerConnection() override {
    absl::MutexLock lock(&mu_);
    for (auto& [id, call] : calls_) call->context.TryCancel();
    for (auto& [raw, call] : cancel_calls_) call->context.TryCancel();
    mu_.Await(absl::Condition(this, &GrpcWorkerConnection::no_calls_locked));
  }

  int max_in_flight() const override { return kMaxInFlight; }
  bool supports_result_refs() const override { return true; }

  absl::Status probe(absl::Time deadline) override {
    return get_status(channel_, target_, kWorkerJob, worker_index_, deadline).status();
  }
  std::string task_name() const override { return task_name_; }

  void run_async(RunRequest request, Done done) override {
    auto owned = std::make_unique<Call>();
    Call* call = owned.get();
    call->closure_id = request.closure_id;
    call->done = std::move(done);
    call->request.set_closure_id(request.closure_id);
    call->request.set_session(request.session);
    call->request.set_function_name(std::move(request.function_name));
    structure_to_proto(request.args, call->request.mutable_args());
    call->request.set_result_session(request.result_session);
    for (const RunRequest::InputRef& ref : request.input_refs) {
      v1::ResultRef* out = call->request.add_input_refs();
      out->set_closure_id(ref.closure_id);
      for (const auto& element : ref.path) {
        if (const auto* index = std::get_if<int64_t>(&element)) {
          out->add_path()->set_index(*index);
        } else {
          out->add_path()->set_key(std::get<std::string>(element));
        }
      }
    }
    {
      absl::MutexLock lock(&mu_);
      call->key = ++next_key_;
      calls_[call->key] = std::move(owned);
    }
    stub_->async()->RunFunction(&call->context, &call->request, &call->response,
                                [this, call](grpc::Status status) { finish(call, status); });
  }

  void cancel(uint64_t closure_id) override {
    {
      absl::MutexLock lock(&mu_);
      const bool running = std::any_of(calls_.begin(), calls_.end(), [&](const auto& entry) {
        return entry.second->closure_id == closure_id;
      });
      if (!running) return;
    }
    // Fire and forget, bounded: the run itself reports the outcome. The
    // call is owned here, never by its callback (see finish()).
    auto owned = std::make_unique<CancelCall>();
    CancelCall* cancel_call = owned.get();
    configure_context(cancel_call->context, absl::Now() + absl::Seconds(5));
    cancel_call->request.set_closure_id(closure_id);
    {
      absl::MutexLock lock(&mu_);
      cancel_calls_.emplace(cancel_call, std::move(owned));
    }
    stub_->async()->CancelFunction(&cancel_call->context, &cancel_call->request,
                                   &cancel_call->response, [this, cancel_call](grpc::Status) {
                                     absl::MutexLock lock(&mu_);
                                     cancel_calls_.erase(cancel_call);
                                   });
  }

 private:
  struct Call {
    uint64_t key = 0;  // Unique per connection: a closure may be retried here.
    uint64_t closure_id = 0;
    grpc::ClientContext context;
    v1::RunFunctionRequest request;
    v1::RunFunctionResponse response;
    Done done;
  };
  struct CancelCall {
    grpc::ClientContext context;
    v1::CancelFunctionRequest request;
    v1::CancelFunctionResponse response;
  };

  void finish(Call* call, const grpc::Status& status) {
    RunResult result;
    if (status.ok()) {
      result.incarnation = call->response.incarnation();
      result.result_kept = call->response.result_kept();
    }
    if (!status.ok()) {
      result.transport = annotate_with_task(from_grpc_status(status), task_name_, target_);
      result.output = result.transport;
    } else if (call->response.input_refs_missing()) {
      result.input_refs_missing = true;
      result.output = absl::UnavailableError("the worker no longer holds the referenced inputs");
    } else if (call->response.code() != 0) {
      result.output = absl::Status(function_code(call->response.code()), call->response.message());
    } else {
      absl::StatusOr<Structure> output = structure_from_proto(call->response.mutable_output());
      if (output.ok()) {
        result.output = *std::move(output);
      } else {
        result.output = absl::InternalError(absl::StrCat(
            task_name_, " returned a malformed result for closure ", call->closure_id, ": ",
            output.status().message()));
      }
    }
    Done done = std::move(call->done);
    // Run `done` before releasing the call: the destructor waits for
    // calls_ to empty, so `this` outlives every callback.
    std::move(done)(std::move(result));
    // The call (its ClientContext) is freed under the lock, before the
    // destructor can see the map empty and drop the channel: were the
    // context freed after that, on this gRPC callback thread, it could
    // release the channel's last reference there, which gRPC 1.51 does not
    // support (it aborts: "ref_counted.h assertion failed: prior > 0").
    absl::MutexLock lock(&mu_);
    calls_.erase(call->key);
  }

  bool no_calls_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return calls_.empty() && cancel_calls_.empty();
  }

  const std::string target_;
  const int worker_index_;
  const std::string task_name_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::ExecutorService::Stub> stub_;

  absl::Mutex mu_;
  uint64_t next_key_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_map<uint64_t, std::unique_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<CancelCall*, std::unique_ptr<CancelCall>> cancel_calls_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<WorkerConnection> make_grpc_worker_connection(const std::string& target,
                                                              int worker_index,
                                                              absl::Duration timeout) {
  ChannelOptions options;
  // A second above the servers' floor, so that timer jitter never makes a
  // ping look too early to them (too many of those and they close the
  // connection, failing healthy calls).
  options.keepalive_time = std::max(timeout / 2, kMinPingInterval + absl::Seconds(1));
  options.keepalive_timeout = std::max(timeout - options.keepalive_time, absl::Seconds(1));
  return std::make_unique<GrpcWorkerConnection>(target, worker_index, options);
}

}  // namespace psflow
