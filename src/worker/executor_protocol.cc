// ExecutorServiceImpl: the executor protocol's handlers (CreateValue,
// CreateCall, CreateStruct, CreateSelection, Compute, Dispose,
// GetExecutorStats). See executor_service.h.
#include <grpcpp/support/proto_buffer_reader.h>
#include <grpcpp/support/proto_buffer_writer.h>
#include <grpcpp/support/slice.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/tsan_annotations.h"
#include "rpc/grpc_status.h"
#include "rpc/parsed_call.h"
#include "tensor/wire.h"
#include "worker/executor_service.h"

namespace psflow::internal {
namespace {

// Parses a request that arrived as raw bytes.
template <typename Request>
absl::Status parse(const grpc::ByteBuffer& bytes, Request* request) {
  grpc::ByteBuffer copy(bytes);  // Shares the slices; the reader needs a mutable buffer.
  grpc::ProtoBufferReader reader(&copy);
  if (!reader.status().ok() || !request->ParseFromZeroCopyStream(&reader)) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed ", request->GetTypeName(),
                     ": the bytes are not a valid protobuf encoding of it (truncated, corrupt, "
                     "or a string field that is not UTF-8)"));
  }
  return absl::OkStatus();
}

template <typename Response>
void serialize(const Response& message, grpc::ByteBuffer* out) {
  bool own_buffer = false;
  // Fails only past 2 GiB, which a response of ids cannot reach.
  (void)grpc::GenericSerialize<grpc::ProtoBufferWriter, Response>(message, out, &own_buffer);
}

grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(to_grpc_status(status));
  return reactor;
}

// The reactor of a Create* call. A value created for a call the client
// gave up on (deadline, cancellation) is disposed: nobody holds its id, so
// it could never be freed. The call is checked before creating (the
// handler), after creating (finish) and, when the cancellation arrives
// while the id is on its way, by OnCancel.
// Thread-safety: finish() and OnCancel() may race; mu_ orders them.
class CreateReactor final : public grpc::ServerUnaryReactor {
 public:
  CreateReactor(grpc::CallbackServerContext* context, ValueGraph* values, std::string owner)
      : context_(context), values_(values), owner_(std::move(owner)) {}

  // Finishes with the new value's id, or the error.
  template <typename Response>
  void finish(const absl::StatusOr<std::string>& id, grpc::ByteBuffer* response)
      ABSL_LOCKS_EXCLUDED(mu_) {
    // gRPC runs OnDone after Finish, possibly on another thread, ordered
    // by its own synchronization (invisible to TSan).
    tsan_release(this);
    if (!id.ok()) {
      Finish(to_grpc_status(id.status()));
      return;
    }
    {
      absl::MutexLock lock(&mu_);
      if (!cancelled_ && !context_->IsCancelled()) {
        id_ = *id;
        Response message;
        message.mutable_value_ref()->set_id(*id);
        serialize(message, response);
        tsan_release(this);  // After id_ and the response were written.
        Finish(grpc::Status::OK);
        return;
      }
      cancelled_ = true;
    }
    (void)values_->dispose(owner_, {*id});
    tsan_release(this);
    Finish(grpc::Status(grpc::StatusCode::CANCELLED,
                        "the call was cancelled; the value it created was disposed"));
  }

  void OnCancel() override ABSL_LOCKS_EXCLUDED(mu_) {
    std::string id;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return;
      cancelled_ = true;
      id = std::move(id_);
    }
    if (!id.empty()) (void)values_->dispose(owner_, {id});
  }
  void OnDone() override {
    tsan_acquire(this);
    delete this;
  }

 private:
  grpc::CallbackServerContext* const context_;
  ValueGraph* const values_;
  const std::string owner_;  // The client that created the value.
  absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::string id_ ABSL_GUARDED_BY(mu_);  // The id sent, until the call is done.
};

template <typename Response>
grpc::ServerUnaryReactor* finish_with_id(grpc::CallbackServerContext* context, ValueGraph& values,
                                         std::string owner, const absl::StatusOr<std::string>& id,
                                         grpc::ByteBuffer* response) {
  auto* reactor = new CreateReactor(context, &values, std::move(owner));
  reactor->finish<Response>(id, response);
  return reactor;
}

// A ComputeResponse holding `value`, whose encoded_size() is `size`: the
// structure encoded once, straight into the bytes gRPC sends.
void serialize_value(const Structure& value, size_t size, grpc::ByteBuffer* out) {
  auto* bytes = new std::string();
  bytes->reserve(size + 16);
  internal::put_tag(bytes, 1, internal::WireType::kLengthDelimited);
  internal::put_varint(bytes, size);
  encode_structure(value, bytes);
  grpc::Slice slice(
      bytes->data(), bytes->size(), [](void* p) { delete static_cast<std::string*>(p); }, bytes);
  *out = grpc::ByteBuffer(&slice, 1);
}

void serialize_outline(const Structure& value, grpc::ByteBuffer* out) {
  v1::ComputeResponse message;
  v1::StructOutline* outline = message.mutable_outline();
  outline->set_size(static_cast<int64_t>(value.size()));
  if (value.kind() == Structure::Kind::kDict) {
    outline->set_kind(v1::StructOutline::DICT);
    for (const auto& [key, unused] : value.fields()) outline->add_keys(key);
  } else {
    outline->set_kind(value.kind() == Structure::Kind::kList ? v1::StructOutline::LIST
                                                             : v1::StructOutline::TUPLE);
  }
  serialize(message, out);
}

// Compute's reactor: finished once, either by the value becoming known or
// by the call's cancellation (client gone, deadline, server shutdown),
// whichever comes first. The waiter may outlive the reactor, so the two
// share only `State`.
// Thread-safety: deliver(), fail() and OnCancel() may race; the atomic
// `finished` lets exactly one of them finish the call.
class ComputeReactor final : public grpc::ServerUnaryReactor {
 public:
  struct State {
    std::atomic<bool> finished{false};
    ComputeReactor* reactor = nullptr;  // Valid until finished is claimed, then until Finish.
    grpc::ByteBuffer* response = nullptr;
    bool outline_structs = false;
    size_t max_message_bytes = 0;
  };

  ComputeReactor(grpc::ByteBuffer* response, bool outline_structs, size_t max_message_bytes)
      : state_(std::make_shared<State>()) {
    state_->reactor = this;
    state_->response = response;
    state_->outline_structs = outline_structs;
    state_->max_message_bytes = max_message_bytes;
  }

  [[nodiscard]] const std::shared_ptr<State>& state() const { return state_; }

  // Finishes with `result` unless the call already finished.
  static void deliver(State& state, const ValueGraph::Result& result) {
    if (state.finished.exchange(true)) return;
    // Finish -> OnDone, as in fail(); the OK path releases again after
    // writing the response.
    tsan_release(state.reactor);
    if (!result.ok()) {
      state.reactor->Finish(to_grpc_status(result.status()));
      return;
    }
    // An allocation that fails (a value built of shared parts can encode to
    // far more than it holds in memory) fails this call, not the worker.
    try {
      if (state.outline_structs && (result->is_sequence() || result->is_dict())) {
        serialize_outline(*result, state.response);
      } else if (const size_t size = encoded_size(*result); size > state.max_message_bytes) {
        state.reactor->Finish(to_grpc_status(absl::ResourceExhaustedError(absl::StrCat(
            "Compute: the value encodes to ", size, " bytes, more than max_message_bytes ",
            state.max_message_bytes, "; compute its parts (CreateSelection) instead"))));
        return;
      } else {
        serialize_value(*result, size, state.response);
      }
    } catch (const std::bad_alloc&) {
      state.reactor->Finish(to_grpc_status(absl::ResourceExhaustedError(
          "Compute: the worker ran out of memory encoding the value")));
      return;
    }
    tsan_release(state.reactor);  // After the response was written.
    state.reactor->Finish(grpc::Status::OK);
  }

  void fail(const absl::Status& status) {
    if (state_->finished.exchange(true)) return;
    // gRPC runs OnDone after Finish, possibly on another thread, ordered
    // by its own synchronization (invisible to TSan).
    tsan_release(this);
    Finish(to_grpc_status(status));
  }

  void OnCancel() override {
    fail(
        absl::CancelledError("Compute was cancelled (the client gave up, its deadline passed, "
                             "or the worker is shutting down)"));
  }
  void OnDone() override {
    tsan_acquire(this);
    delete this;
  }

 private:
  std::shared_ptr<State> state_;
};

}  // namespace

grpc::ServerUnaryReactor* ExecutorServiceImpl::CreateValue(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request,
                                                           grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCreateValue);
  if (!caller.ok()) return status_->refuse(context, "CreateValue", caller.status());
  const std::string owner = caller->owner();
  v1::CreateValueRequest message;
  if (absl::Status s = parse(*request, &message); !s.ok()) return finish(context, s);
  // Decoding a large structure takes a while: not for a client gone.
  if (context->IsCancelled()) {
    return finish(context, absl::CancelledError("CreateValue was cancelled before it created"));
  }
  if (options_.before_create_for_testing) options_.before_create_for_testing(*context);
  absl::StatusOr<std::string> id;
  switch (message.value_case()) {
    case v1::CreateValueRequest::kStructure: {
      // Validates the untrusted structure (shapes, sizes, depth) and moves
      // tensor payloads out of the message.
      absl::StatusOr<Structure> value = structure_from_proto(message.mutable_structure(), limits_);
      if (!value.ok()) {
        id = absl::InvalidArgumentError(
            absl::StrCat("CreateValue: malformed structure: ", value.status().message()));
      } else {
        id = values_.create_value(owner, *std::move(value));
      }
      break;
    }
    case v1::CreateValueRequest::kFunctionName: {
      const absl::Status known = check_function(message.function_name(), *caller);
      id = known.ok() ? values_.create_function(owner, message.function_name()) : known;
      break;
    }
    case v1::CreateValueRequest::VALUE_NOT_SET:
      id = absl::InvalidArgumentError(
          "CreateValue needs a value: set `structure` (a concrete value) or `function_name` (a "
          "function registered in the worker's binary)");
      break;
  }
  return finish_with_id<v1::CreateValueResponse>(context, values_, owner, id, response);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::CreateCall(grpc::CallbackServerContext* context,
                                                          const grpc::ByteBuffer* request,
                                                          grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCreateCall);
  if (!caller.ok()) return status_->refuse(context, "CreateCall", caller.status());
  v1::CreateCallRequest message;
  if (absl::Status s = parse(*request, &message); !s.ok()) return finish(context, s);
  if (message.function_ref().id().empty()) {
    return finish(context, absl::InvalidArgumentError(
                               "CreateCall needs function_ref: the id CreateValue returned for a "
                               "function_name"));
  }
  std::optional<std::string_view> argument;
  if (message.has_argument_ref()) {
    if (message.argument_ref().id().empty()) {
      return finish(context, absl::InvalidArgumentError(
                                 "CreateCall: argument_ref is present but empty; leave it unset "
                                 "to call the function without an argument"));
    }
    argument = message.argument_ref().id();
  }
  std::string id;
  {
    absl::MutexLock lock(&call_order_mu_);
    absl::StatusOr<ValueGraph::PendingCall> call =
        values_.create_call(caller->owner(), message.function_ref().id(), argument);
    if (!call.ok()) return finish(context, call.status());
    id = call->id;
    // Queued behind the functions received earlier (RunFunction and calls
    // alike); the RPC returns at once.
    pool_.schedule([this, call = *std::move(call)]() {
      values_.run_call(call, [this](const std::string& function_name, const Structure& args,
                                    uint64_t number, const std::atomic<bool>& cancelled) {
        return invoke(/*session=*/0, (uint64_t{1} << 63) | number, function_name, args, cancelled);
      });
    });
  }
  return finish_with_id<v1::CreateCallResponse>(context, values_, caller->owner(), id, response);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::CreateStruct(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer* request,
                                                            grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCreateStruct);
  if (!caller.ok()) return status_->refuse(context, "CreateStruct", caller.status());
  v1::CreateStructRequest message;
  if (absl::Status s = parse(*request, &message); !s.ok()) return finish(context, s);
  std::vector<ValueGraph::Element> elements;
  elements.reserve(static_cast<size_t>(message.elements_size()));
  for (int i = 0; i < message.elements_size(); ++i) {
    v1::CreateStructRequest::Element* element = message.mutable_elements(i);
    if (element->value_ref().id().empty()) {
      return finish(context, absl::InvalidArgumentError(
                                 absl::StrCat("CreateStruct: element ", i, " has no value_ref")));
    }
    elements.push_back({std::move(*element->mutable_name()),
                        std::move(*element->mutable_value_ref()->mutable_id())});
  }
  return finish_with_id<v1::CreateStructResponse>(
      context, values_, caller->owner(),
      values_.create_struct(caller->owner(), elements, message.list()), response);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::CreateSelection(grpc::CallbackServerContext* context,
                                                               const grpc::ByteBuffer* request,
                                                               grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCreateSelection);
  if (!caller.ok()) return status_->refuse(context, "CreateSelection", caller.status());
  v1::CreateSelectionRequest message;
  if (absl::Status s = parse(*request, &message); !s.ok()) return finish(context, s);
  if (message.source_ref().id().empty()) {
    return finish(context,
                  absl::InvalidArgumentError("CreateSelection needs source_ref: the value to "
                                             "select from"));
  }
  return finish_with_id<v1::CreateSelectionResponse>(
      context, values_, caller->owner(),
      values_.create_selection(caller->owner(), message.source_ref().id(), message.index()),
      response);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::Compute(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCompute);
  if (!caller.ok()) return status_->refuse(context, "Compute", caller.status());
  v1::ComputeRequest message;
  absl::Status status = parse(*request, &message);
  if (status.ok() && message.value_ref().id().empty()) {
    status = absl::InvalidArgumentError("Compute needs value_ref: the value to compute");
  }
  auto* reactor =
      new ComputeReactor(response, message.outline_structs(), limits_.max_message_bytes);
  if (status.ok()) {
    status = values_.compute(caller->owner(), message.value_ref().id(),
                             [state = reactor->state()](const ValueGraph::Result& result) {
                               ComputeReactor::deliver(*state, result);
                             });
  }
  if (!status.ok()) reactor->fail(status);
  return reactor;
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::Dispose(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerDispose);
  if (!caller.ok()) return status_->refuse(context, "Dispose", caller.status());
  v1::DisposeRequest message;
  if (absl::Status s = parse(*request, &message); !s.ok()) return finish(context, s);
  std::vector<std::string> ids;
  ids.reserve(static_cast<size_t>(message.value_refs_size()));
  for (v1::ValueRef& ref : *message.mutable_value_refs())
    ids.push_back(std::move(*ref.mutable_id()));
  if (absl::Status s = values_.dispose(caller->owner(), ids); !s.ok()) return finish(context, s);
  serialize(v1::DisposeResponse(), response);
  return finish(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::GetExecutorStats(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
    grpc::ByteBuffer* raw_response) {
  if (absl::StatusOr<PeerIdentity> caller =
          authorize_call(*context, Method::kWorkerGetExecutorStats);
      !caller.ok()) {
    return status_->refuse(context, "GetExecutorStats", caller.status());
  }
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::GetExecutorStatsRequest, v1::GetExecutorStatsResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  v1::GetExecutorStatsResponse* response = &call->response();
  const ValueGraphStats stats = values_.stats();
  response->set_live_values(stats.live_values);
  response->set_pending_values(stats.pending_values);
  response->set_max_live_values(stats.max_live_values);
  response->set_values_created(stats.values_created);
  response->set_values_disposed(stats.values_disposed);
  response->set_waiting_computes(stats.waiting_computes);
  fill_result_cache_stats(*response);
  fill_per_worker_stats(*response);
  call->finish(grpc::Status::OK);
  return reactor;
}

}  // namespace psflow::internal
