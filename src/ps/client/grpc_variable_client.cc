// VariableClient over gRPC: Execute through the generic stub, carrying the
// ExecuteRequest / ExecuteResponse wire format written and read by
// ps/grpc_execute_codec.h (tensor payloads sent from their own buffers,
// received with one copy).
#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/request/lost_state.h"
#include "rpc/allocator_tuning.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

constexpr char kExecuteMethod[] = "/psflow.v1.VariableService/Execute";

// Responses are decoded on the gRPC thread that completes the call (one copy
// of each payload, at memcpy speed), just before `done` runs there.
// Thread-safety: all methods are thread-safe. The channel and every call's
// buffers belong to this object, never to a gRPC callback (see
// rpc/health_check.h for why): the destructor cancels the calls in flight
// and returns only once each has run its callback and been freed.
class GrpcVariableClient final : public VariableClient {
 public:
  GrpcVariableClient(std::string target, std::string task_name)
      : target_(std::move(target)),
        task_name_(std::move(task_name)),
        channel_(create_channel(target_)),
        stub_(channel_) {
    tune_allocator_for_transfers();
    limits_.max_message_bytes = static_cast<size_t>(kDefaultMaxMessageBytes);
  }

  ~GrpcVariableClient() override {
    std::vector<std::shared_ptr<Call>> calls;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [raw, call] : calls_) calls.push_back(call);
    }
    // Outside the lock: cancelling may run a call's callback on this thread.
    for (const auto& call : calls) call->context.TryCancel();
    calls.clear();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](absl::flat_hash_map<Call*, std::shared_ptr<Call>>* calls) { return calls->empty(); },
        &calls_));
  }

  const std::string& task_name() const override { return task_name_; }

  void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) override {
    auto call = std::make_shared<Call>();
    call->request = encode_execute_request(batch);
    const size_t size = call->request.Length();
    if (size > limits_.max_message_bytes) {
      done(annotate(request_too_large(batch, size)));
      return;
    }
    call->destinations = result_destinations(batch);
    call->done = std::move(done);
    configure_context(call->context, deadline);
    Call* raw = call.get();
    {
      absl::MutexLock lock(&mu_);
      calls_.emplace(raw, std::move(call));
    }
    stub_.UnaryCall(&raw->context, kExecuteMethod, grpc::StubOptions(), &raw->request,
                    &raw->response, [this, raw](grpc::Status status) { finish(raw, status); });
  }

 private:
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    // Per result, where its payload should land (VariableOpArgs::result_buffer).
    std::vector<std::shared_ptr<TensorBuffer>> destinations;
    BatchCallback done;
  };

  // The result buffers of `batch`'s READ and GATHER ops in result order;
  // empty when there are none, or when an op whose result count is not
  // known beforehand (SNAPSHOT: it depends on the ps's state; kinds newer
  // than this list) makes the order unknown.
  static std::vector<std::shared_ptr<TensorBuffer>> result_destinations(const ExecuteBatch& batch) {
    using Op = v1::VariableOp;
    std::vector<std::shared_ptr<TensorBuffer>> out;
    bool any = false;
    for (const VariableOpArgs& op : batch.ops) {
      switch (op.kind) {
        case Op::READ:
        case Op::GATHER:
          any = any || op.result_buffer != nullptr;
          out.push_back(op.result_buffer);
          break;
        case Op::DE_LOOKUP:
        case Op::DE_STATS: out.emplace_back(); break;
        case Op::ASSIGN:
        case Op::ASSIGN_ADD:
        case Op::ASSIGN_SUB:
        case Op::SCATTER_UPDATE:
        case Op::SCATTER_ADD:
        case Op::SCATTER_SUB:
        case Op::SCATTER_MUL:
        case Op::SCATTER_DIV:
        case Op::SCATTER_MIN:
        case Op::SCATTER_MAX:
        case Op::APPLY_DENSE:
        case Op::APPLY_SPARSE:
        case Op::CREATE:
        case Op::CREATE_IF_ABSENT:
        case Op::DELETE:
        case Op::RESTORE:
        case Op::DE_CREATE:
        case Op::DE_APPLY: break;  // no result
        default: return {};
      }
    }
    if (!any) out.clear();
    return out;
  }

  // RESOURCE_EXHAUSTED for a request over the message limit. When one op's
  // tensor alone is over it, splitting the batch cannot help: the variable
  // must be sharded, which the error says, naming it.
  absl::Status request_too_large(const ExecuteBatch& batch, size_t size) const {
    const VariableOpArgs* largest = nullptr;
    size_t largest_bytes = 0;
    for (const VariableOpArgs& op : batch.ops) {
      const size_t bytes =
          (op.value.valid() ? op.value.byte_size() : 0) + (op.ids.valid() ? op.ids.byte_size() : 0);
      if (bytes > largest_bytes) {
        largest_bytes = bytes;
        largest = &op;
      }
    }
    if (largest != nullptr && largest_bytes > limits_.max_message_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("variable '", largest->variable, "' carries ", largest_bytes,
                       " bytes in one request, more than the limit of ", limits_.max_message_bytes,
                       "; shard it: give the strategy a variable_partitioner (e.g. "
                       "max_size_partitioner(256 << 20)) so that every part fits"));
    }
    return absl::ResourceExhaustedError(
        absl::StrCat("the ExecuteRequest is ", size, " bytes, more than the limit of ",
                     limits_.max_message_bytes, "; split the batch into smaller requests"));
  }

  absl::Status annotate(const absl::Status& status) const {
    return annotate_with_task(status, task_name_, target_);
  }

  void finish(Call* call, const grpc::Status& status) {
    absl::StatusOr<std::vector<Tensor>> results;
    if (status.ok()) {
      results = decode_execute_response(call->response, limits_, call->destinations);
      if (!results.ok()) {
        results = annotate(absl::InternalError(
            absl::StrCat("the ps sent an ExecuteResponse this client cannot read: ",
                         results.status().message())));
      }
    } else {
      absl::Status error = annotate(from_grpc_status(status));
      // The ps came back empty (ps/request/lost_state.h): passed on for
      // ps/client/ps_failure.h to report as a ps failure.
      const auto& trailers = call->context.GetServerTrailingMetadata();
      if (absl::IsNotFound(error) &&
          trailers.find(grpc::string_ref(kPsHoldsNothingMetadata)) != trailers.end()) {
        error.SetPayload(kPsHoldsNothingPayload, absl::Cord("1"));
      }
      results = std::move(error);
    }
    call->done(std::move(results));
    // Last use of `this`: the call (context and buffers) is freed under the
    // lock, before the destructor can see the map empty.
    absl::MutexLock lock(&mu_);
    calls_.erase(call);
  }

  const std::string target_;
  const std::string task_name_;
  CodecLimits limits_;
  std::shared_ptr<grpc::Channel> channel_;
  grpc::GenericStub stub_;
  absl::Mutex mu_;
  absl::flat_hash_map<Call*, std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<VariableClient> make_grpc_variable_client(const std::string& target,
                                                          std::string task_name) {
  return std::make_unique<GrpcVariableClient>(target, std::move(task_name));
}

}  // namespace psflow::internal
