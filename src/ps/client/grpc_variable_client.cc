// VariableClient over gRPC: Execute through the generic stub, carrying the
// ExecuteRequest / ExecuteResponse wire format written and read by
// ps/grpc_execute_codec.h (tensor payloads sent from their own buffers,
// received with one copy). With a ps on the same host, large tensor
// contents travel in a shared-memory session instead (one copy in, one
// copy out, no encryption or socket work); the messages stay on gRPC.
#include <grpcpp/client_context.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/tsan_annotations.h"
#include "ps/client/shared_memory_client.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/request/lost_state.h"
#include "psflow/v1/task.pb.h"
#include "rpc/allocator_tuning.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

constexpr char kExecuteMethod[] = "/psflow.v1.VariableService/Execute";
constexpr char kOpenSharedMemoryMethod[] = "/psflow.v1.VariableService/OpenSharedMemory";
constexpr char kCloseSharedMemoryMethod[] = "/psflow.v1.VariableService/CloseSharedMemory";
// The region asked for: far more than a step of the largest dense model
// moves per ps, and its pages cost memory only once used.
constexpr uint64_t kSharedMemoryBytes = uint64_t{64} << 20;
// Waits between asking a ps for a session again after a transient
// refusal (it was down, busy or out of budget), doubling up to the longest.
constexpr absl::Duration kFirstOpenBackoff = absl::Milliseconds(100);
constexpr absl::Duration kLongestOpenBackoff = absl::Seconds(30);

// Whether a call that failed with `code` certainly left its slice alone:
// the ps answered it with a refusal, or it never left this process. Other
// failures (the connection dropped, the deadline passed, the call was
// cancelled) may leave the ps still working in the slice.
bool ps_done_with(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kPermissionDenied:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnimplemented:
    case absl::StatusCode::kUnauthenticated: return true;
    default: return false;
  }
}

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
    std::shared_ptr<OpenCall> open_call;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;  // No session is opened from here on.
      for (const auto& [raw, call] : calls_) calls.push_back(call);
      open_call = open_call_;
    }
    if (open_call != nullptr) open_call->context.TryCancel();
    // Outside the lock: cancelling may run a call's callback on this thread.
    for (const auto& call : calls) call->context.TryCancel();
    calls.clear();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](absl::flat_hash_map<Call*, std::shared_ptr<Call>>* calls) { return calls->empty(); },
        &calls_));
    open_call.reset();
    mu_.Await(absl::Condition(
        +[](std::shared_ptr<OpenCall>* open) { return *open == nullptr; }, &open_call_));
    if (session_ != nullptr) close_session(*session_);
  }

  const std::string& task_name() const override { return task_name_; }
  bool uses_shared_memory() const override {
    absl::MutexLock lock(&mu_);
    return shared_state_ == SharedState::kReady;
  }

  void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) override {
    send(std::move(batch), deadline, std::move(done), /*use_shared_memory=*/true);
  }

 private:
  struct Call {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
    // Per result, where its payload should land (VariableOpArgs::result_buffer).
    std::vector<std::shared_ptr<TensorBuffer>> destinations;
    BatchCallback done;
    // Set when the call's contents are in shared memory: the session, the
    // call's slice of it, and what sending it again without needs.
    std::shared_ptr<SharedMemoryClientSession> session;
    SharedMemoryClientSession::Slice slice;
    std::optional<ExecuteBatch> batch;
    absl::Time deadline;
  };

  // Remembers how large each variable's answer was, so that the next call
  // reading it without a destination buffer asks for room for it. Answers
  // are matched to the ops that give one each; a batch with ops giving
  // several (SNAPSHOT, DE_EXPORT) is skipped.
  void note_answer_sizes(const ExecuteBatch& batch, const std::vector<Tensor>& results) {
    using Op = v1::VariableOp;
    std::vector<const std::string*> names;
    for (const VariableOpArgs& op : batch.ops) {
      if (op.kind == Op::READ || op.kind == Op::GATHER || op.kind == Op::DE_LOOKUP ||
          op.kind == Op::DE_STATS) {
        names.push_back(&op.variable);
      } else if (op.kind == Op::SNAPSHOT || op.kind == Op::DE_EXPORT) {
        return;
      }
    }
    if (names.size() != results.size()) return;
    absl::MutexLock lock(&hints_mu_);
    // Bounded: a client touching very many variables starts over.
    if (result_hints_.size() > 65536) result_hints_.clear();
    for (size_t i = 0; i < names.size(); ++i) {
      result_hints_[*names[i]] = content_bytes(results[i], WireDType::kFloat32);
    }
  }

  struct OpenCall {
    grpc::ClientContext context;
    grpc::ByteBuffer request;
    grpc::ByteBuffer response;
  };

  enum class SharedState { kNone, kOpening, kReady, kOff };

  void send(ExecuteBatch batch, absl::Time deadline, BatchCallback done, bool use_shared_memory) {
    auto call = std::make_shared<Call>();
    call->destinations = result_destinations(batch);
    std::shared_ptr<SharedMemoryClientSession> session =
        use_shared_memory ? shared_session() : nullptr;
    std::optional<SharedMemoryClientSession::Slice> slice;
    // Bytes of the request's contents in the region: they count towards
    // its size as if they were in the message.
    size_t in_region = 0;
    if (session != nullptr) {
      const uint64_t wanted = shared_bytes_wanted(
          batch, call->destinations, [this](const VariableOpArgs& op) -> uint64_t {
            absl::MutexLock lock(&hints_mu_);
            auto it = result_hints_.find(op.variable);
            return it == result_hints_.end() ? 0 : it->second;
          });
      // A call larger than a quarter of the region goes in the message, so
      // that one huge call cannot starve the steady traffic of others.
      if (wanted > 0 && wanted <= session->region().size() / 4) slice = session->allocate(wanted);
    }
    if (slice.has_value()) {
      SharedRequest shared{session->token(), SharedArena(session->region().data(), slice->offset,
                                                         slice->offset + slice->bytes)};
      call->request = encode_execute_request(batch, &shared);
      in_region = shared.arena.next() - slice->offset;
      call->session = std::move(session);
      call->slice = *slice;
      call->batch = batch;  // Shares the tensors: cheap.
      call->deadline = deadline;
    } else {
      call->request = encode_execute_request(batch);
    }
    const size_t size = call->request.Length() + in_region;
    if (size > limits_.max_message_bytes) {
      if (call->session != nullptr) call->session->release(call->slice);
      done(annotate(request_too_large(batch, size)));
      return;
    }
    call->done = std::move(done);
    configure_context(call->context, deadline);
    Call* raw = call.get();
    {
      absl::MutexLock lock(&mu_);
      calls_.emplace(raw, std::move(call));
    }
    // gRPC runs the callback after the call completed, possibly on another
    // thread, ordered by its own synchronization (invisible to TSan).
    tsan_release(raw);
    stub_.UnaryCall(&raw->context, kExecuteMethod, grpc::StubOptions(), &raw->request,
                    &raw->response, [this, raw](grpc::Status status) {
                      tsan_acquire(raw);
                      finish(raw, status);
                    });
  }

  // The session to use now, or null; asks the ps for one (once, in the
  // background) when there is none yet, so that no call waits for it.
  std::shared_ptr<SharedMemoryClientSession> shared_session() {
    {
      absl::MutexLock lock(&mu_);
      if (shared_state_ == SharedState::kReady) return session_;
      if (shared_state_ != SharedState::kNone || closing_) return nullptr;
      if (!shared_memory_enabled()) {
        shared_state_ = SharedState::kOff;
        return nullptr;
      }
      const absl::Time now = absl::Now();
      if (now < next_open_) return nullptr;
      next_open_ = now + open_backoff_;
      open_backoff_ = std::min(2 * open_backoff_, kLongestOpenBackoff);
      shared_state_ = SharedState::kOpening;
    }
    open_session();
    return nullptr;
  }

  void open_session() {
    auto open = std::make_shared<OpenCall>();
    v1::OpenSharedMemoryRequest request;
    request.set_boot_id(host_boot_id());
    request.set_pid_namespace(pid_namespace());
    request.set_bytes(kSharedMemoryBytes);
    open->request = serialize(request);
    configure_context(open->context, absl::Now() + absl::Seconds(30));
    OpenCall* raw = open.get();
    {
      absl::MutexLock lock(&mu_);
      open_call_ = std::move(open);
    }
    tsan_release(raw);  // StartCall -> callback, as for Execute.
    stub_.UnaryCall(&raw->context, kOpenSharedMemoryMethod, grpc::StubOptions(), &raw->request,
                    &raw->response, [this, raw](grpc::Status status) {
                      tsan_acquire(raw);
                      opened(*raw, status);
                    });
  }

  // Installs the ps's answer to open_call_, then frees that call (the last
  // use of `this` for it: the destructor waits for open_call_ to be null).
  void opened(OpenCall& open, const grpc::Status& status) {
    absl::Status result = from_grpc_status(status);
    v1::OpenSharedMemoryResponse response;
    if (result.ok() && !parse(open.response, &response)) {
      result = absl::InternalError("the ps sent an OpenSharedMemoryResponse that does not parse");
    }
    std::shared_ptr<SharedMemoryClientSession> session;
    if (result.ok()) {
      absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region = SharedMemoryRegion::attach(
          response.pid(), response.fd(), response.bytes(), response.session());
      if (region.ok()) {
        session =
            std::make_shared<SharedMemoryClientSession>(response.session(), *std::move(region));
      } else {
        result = region.status();
      }
    }
    absl::MutexLock lock(&mu_);
    open_call_.reset();
    if (session != nullptr) {
      PSFLOW_LOG(Info, task_name_, " (", target_, "): tensor payloads over shared memory (",
                 response.bytes() >> 20, " MiB region); messages over gRPC");
      shared_state_ = SharedState::kReady;
      session_ = std::move(session);
      open_backoff_ = kFirstOpenBackoff;
      return;
    }
    // Retried later only when the ps may say yes next time (it was busy,
    // or unreachable); a ps on another host, or one that offers no shared
    // memory, gets the messages alone for the client's life.
    const bool transient = absl::IsUnavailable(result) || absl::IsDeadlineExceeded(result) ||
                           absl::IsResourceExhausted(result);
    if (!transient || !logged_no_session_) {
      PSFLOW_LOG(Info, task_name_, " (", target_,
                 "): tensor payloads over gRPC: ", result.message());
      logged_no_session_ = true;
    }
    shared_state_ = transient ? SharedState::kNone : SharedState::kOff;
  }

  // Tells the ps it may drop `session` (best effort, bounded wait): the ps
  // also drops sessions that stay idle.
  void close_session(const SharedMemoryClientSession& session) {
    v1::CloseSharedMemoryRequest request;
    request.set_session(session.token());
    grpc::ByteBuffer raw_request = serialize(request);
    grpc::ByteBuffer raw_response;
    grpc::ClientContext context;
    configure_context(context, absl::Now() + absl::Milliseconds(500));
    absl::Mutex done_mu;
    bool done = false;
    tsan_release(&context);  // StartCall -> callback, as for Execute.
    stub_.UnaryCall(&context, kCloseSharedMemoryMethod, grpc::StubOptions(), &raw_request,
                    &raw_response, [&](grpc::Status) {
                      tsan_acquire(&context);
                      absl::MutexLock lock(&done_mu);
                      done = true;
                    });
    absl::MutexLock lock(&done_mu);
    done_mu.Await(absl::Condition(&done));
  }

  // Forgets `session` after the ps no longer knows it (or it is spent), so
  // that a new one is opened on a later call.
  void drop_session(const std::shared_ptr<SharedMemoryClientSession>& session) {
    absl::MutexLock lock(&mu_);
    if (session_ == session) {
      session_ = nullptr;
      if (shared_state_ == SharedState::kReady) shared_state_ = SharedState::kNone;
    }
  }

  template <typename Message>
  static grpc::ByteBuffer serialize(const Message& message) {
    grpc::ByteBuffer out;
    bool own_buffer = false;
    // Fails only past protobuf's 2 GiB: these messages are a few bytes.
    (void)grpc::GenericSerialize<grpc::ProtoBufferWriter, Message>(message, &out, &own_buffer);
    return out;
  }

  template <typename Message>
  static bool parse(const grpc::ByteBuffer& buffer, Message* message) {
    grpc::ByteBuffer copy(buffer);  // Shares the slices; the reader needs a mutable buffer.
    return grpc::GenericDeserialize<grpc::ProtoBufferReader, Message>(&copy, message).ok();
  }

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
    const auto& trailers = call->context.GetServerTrailingMetadata();
    const bool unknown_session =
        call->session != nullptr && !status.ok() &&
        trailers.find(grpc::string_ref(kUnknownSharedMemorySessionMetadata)) != trailers.end();
    if (unknown_session) {
      // Refused before anything ran: sent again with its contents in the
      // message, and a new session is asked for on a later call.
      drop_session(call->session);
      send(*std::move(call->batch), call->deadline, std::move(call->done),
           /*use_shared_memory=*/false);
      absl::MutexLock lock(&mu_);
      calls_.erase(call);
      return;
    }
    if (status.ok()) {
      results =
          decode_execute_response(call->response, limits_, call->destinations,
                                  call->session != nullptr ? &call->session->region() : nullptr);
      if (!results.ok()) {
        results = annotate(absl::InternalError(
            absl::StrCat("the ps sent an ExecuteResponse this client cannot read: ",
                         results.status().message())));
      } else if (call->session != nullptr) {
        note_answer_sizes(*call->batch, *results);
      }
    } else {
      absl::Status error = annotate(from_grpc_status(status));
      // The ps came back empty (ps/request/lost_state.h): passed on for
      // ps/client/ps_failure.h to report as a ps failure.
      if (absl::IsNotFound(error) &&
          trailers.find(grpc::string_ref(kPsHoldsNothingMetadata)) != trailers.end()) {
        error.SetPayload(kPsHoldsNothingPayload, absl::Cord("1"));
      }
      results = std::move(error);
    }
    if (call->session != nullptr) {
      // An answer means the ps is done with the slice; without one it may
      // still be working in it.
      if (status.ok() || ps_done_with(static_cast<absl::StatusCode>(status.error_code()))) {
        call->session->release(call->slice);
      } else if (call->session->retire(call->slice)) {
        drop_session(call->session);
      }
    }
    // The caller may reuse its destination buffers as soon as `done` runs
    // (a buffer pool sees them free only when nobody else holds them).
    call->destinations.clear();
    call->batch.reset();
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
  mutable absl::Mutex mu_;
  absl::flat_hash_map<Call*, std::shared_ptr<Call>> calls_ ABSL_GUARDED_BY(mu_);
  SharedState shared_state_ ABSL_GUARDED_BY(mu_) = SharedState::kNone;
  std::shared_ptr<SharedMemoryClientSession> session_ ABSL_GUARDED_BY(mu_);
  absl::Time next_open_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Mutex hints_mu_;
  absl::flat_hash_map<std::string, uint64_t> result_hints_ ABSL_GUARDED_BY(hints_mu_);
  absl::Duration open_backoff_ ABSL_GUARDED_BY(mu_) = kFirstOpenBackoff;
  bool logged_no_session_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  // The OpenSharedMemory call in flight, if any.
  std::shared_ptr<OpenCall> open_call_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<VariableClient> make_grpc_variable_client(const std::string& target,
                                                          std::string task_name) {
  return std::make_unique<GrpcVariableClient>(target, std::move(task_name));
}

}  // namespace psflow::internal
