#include "ps/server/variable_service.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "ps/request/grpc_execute_codec.h"
#include "ps/request/lost_state.h"
#include "psflow/status_macros.h"
#include "rpc/authorization.h"
#include "rpc/grpc_status.h"
#include "rpc/parsed_call.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

// Upper bound of a result's protobuf framing: tags, lengths, dtype, shape.
constexpr size_t kFramingBytes = 32 + 11 * 32;

size_t saturating_add(size_t a, size_t b) {
  size_t out = 0;
  return __builtin_add_overflow(a, b, &out) ? SIZE_MAX : out;
}

size_t saturating_mul(size_t a, size_t b) {
  size_t out = 0;
  return __builtin_mul_overflow(a, b, &out) ? SIZE_MAX : out;
}

struct Estimate {
  // Bytes of the READ and GATHER results of variables that exist now, with
  // room for their framing.
  size_t response_bytes = 0;
  // Bytes the ops read or write beyond the request itself.
  size_t work_bytes = 0;
};

// Looks at the variables the batch names (shapes are fixed at creation) to
// size its response and its work before anything runs. Ops on unknown
// variables count as nothing: validation rejects them later.
Estimate estimate(const ExecuteBatch& batch, const VariableStore& store) {
  Estimate e;
  for (const VariableOpArgs& op : batch.ops) {
    switch (op.kind) {
      case Op::READ:
      case Op::GATHER:
      case Op::SNAPSHOT: {
        absl::StatusOr<std::shared_ptr<VariableShard>> shard = store.find(op.variable);
        if (!shard.ok()) break;
        const Shape& shape = (*shard)->shape();
        // A string element is counted at the size of the std::string the
        // ps must allocate for it (its bytes on the wire are unknown until
        // read): that keeps a gather of many rows of strings from
        // exhausting memory under the response limit.
        const bool strings = (*shard)->dtype() == DType::kString;
        size_t bytes = strings ? sizeof(std::string) : dtype_size((*shard)->dtype());
        for (size_t i = op.kind == Op::GATHER ? 1 : 0; i < shape.size(); ++i) {
          bytes = saturating_mul(bytes, static_cast<size_t>(shape[i]));
        }
        if (op.kind == Op::GATHER) {
          bytes = saturating_mul(bytes,
                                 op.ids.valid() ? static_cast<size_t>(op.ids.num_elements()) : 0);
        }
        // A snapshot answers with copies of the value and of up to two
        // slots of its shape.
        if (op.kind == Op::SNAPSHOT) bytes = saturating_mul(bytes, 3);
        // Gathers and snapshots copy; reads are sent from the stored buffer.
        if (op.kind != Op::READ || strings) e.work_bytes = saturating_add(e.work_bytes, bytes);
        e.response_bytes = saturating_add(e.response_bytes, saturating_add(bytes, kFramingBytes));
        break;
      }
      case Op::DE_LOOKUP: {
        absl::StatusOr<std::shared_ptr<DynamicTable>> table = store.find_table(op.variable);
        if (!table.ok() || !op.ids.valid()) break;
        const size_t bytes =
            saturating_mul(static_cast<size_t>(op.ids.num_elements()),
                           static_cast<size_t>((*table)->options().dim) * sizeof(float));
        e.work_bytes = saturating_add(e.work_bytes, saturating_mul(bytes, 2));
        e.response_bytes = saturating_add(e.response_bytes, saturating_add(bytes, kFramingBytes));
        break;
      }
      case Op::DE_STATS: e.response_bytes += kFramingBytes + 128; break;
      case Op::DE_CREATE: break;
      case Op::DE_EXPORT: {
        // A copy of every row: key, last seen, values and slots.
        absl::StatusOr<std::shared_ptr<DynamicTable>> table = store.find_table(op.variable);
        if (!table.ok()) break;
        const DynamicTable& t = **table;
        const size_t row_bytes =
            16 + static_cast<size_t>(t.options().dim * (1 + t.num_slots())) * sizeof(float);
        // A page holds at most its limit (optimizer_steps) of rows.
        int64_t rows = std::max<int64_t>(t.stats().rows, 0);
        if (op.optimizer_steps > 0) rows = std::min(rows, op.optimizer_steps);
        const size_t bytes = saturating_mul(static_cast<size_t>(rows), row_bytes);
        e.work_bytes = saturating_add(e.work_bytes, bytes);
        e.response_bytes = saturating_add(e.response_bytes, saturating_add(bytes, kFramingBytes));
        break;
      }
      case Op::DE_IMPORT:
        // The decoded tensors are copied into the table's rows.
        e.work_bytes =
            saturating_add(e.work_bytes, 2 * (op.value.valid() ? op.value.byte_size() : 0));
        break;
      case Op::APPLY_DENSE:
      case Op::APPLY_SPARSE:
      case Op::DE_APPLY:
        // The variable's rows, up to two slots, and the gradient, each read
        // and written, with square roots and divisions on the way.
        e.work_bytes += 8 * (op.value.valid() ? op.value.byte_size() : 0);
        break;
      case Op::CREATE:
      case Op::CREATE_IF_ABSENT:
      case Op::ASSIGN: break;  // adopt the decoded buffer
      default: e.work_bytes += 2 * (op.value.valid() ? op.value.byte_size() : 0); break;
    }
  }
  return e;
}

absl::Status response_too_large(size_t bytes, size_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat("the ExecuteResponse would be ", bytes, " bytes, more than max_message_bytes ",
                   limit, "; read or gather fewer or smaller variables per request"));
}

// Runs `work`, turning an exception (an allocation that failed on a request
// the estimates let through) into an error for that call instead of the end
// of the process. A failure part-way may leave earlier ops of the batch
// applied, as a lost ps would.
template <typename Work>
absl::Status guarded(Work&& work) {
  try {
    return work();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        "the ps ran out of memory serving this request; send smaller batches or tensors");
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("the ps failed serving this request: ", e.what()));
  }
}

// PERMISSION_DENIED for the first op of `batch` that `caller`'s role may
// not run; checked before any op runs, so a refused batch changes nothing.
absl::Status authorize_batch(const PeerIdentity& caller, const ExecuteBatch& batch) {
  for (size_t i = 0; i < batch.ops.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(authorize_variable_op(caller, batch.ops[i].kind, i));
  }
  return absl::OkStatus();
}

// Runs a decoded batch and serializes its results into `response`.
absl::Status run(const PeerIdentity& caller, VariableStore& store, size_t max_message_bytes,
                 ExecuteBatch& batch, const Estimate& estimate, const ExecuteCallMemory& memory,
                 grpc::ByteBuffer* response) {
  PSFLOW_RETURN_IF_ERROR(authorize_batch(caller, batch));
  // Checked before anything runs, so that an oversized read never leaves
  // the batch's other ops applied; the exact check after running catches
  // the rare variable replaced (with a larger shape) in between.
  if (estimate.response_bytes > max_message_bytes) {
    return response_too_large(estimate.response_bytes, max_message_bytes);
  }
  std::vector<Tensor> results;
  std::vector<WireDType> wire;
  PSFLOW_RETURN_IF_ERROR(execute_variable_ops(store, batch, &results, &wire));
  const size_t bytes = execute_response_size(results, wire);
  if (bytes > max_message_bytes) return response_too_large(bytes, max_message_bytes);
  if (memory.region != nullptr && memory.result_bytes > 0) {
    SharedArena arena(memory.region->data(), memory.result_offset,
                      memory.result_offset + memory.result_bytes);
    *response = encode_execute_response(results, wire, &arena);
  } else {
    *response = encode_execute_response(results, wire);
  }
  return absl::OkStatus();
}

// Finishes an Execute call with `status`. A variable this ps does not hold
// while it holds none at all means, for a running job, that the ps came
// back empty after a restart: the answer stays NOT_FOUND with its message,
// and carries the flag (ps/request/lost_state.h) by which clients report it
// as a ps failure.
void finish_execute(grpc::CallbackServerContext* context, grpc::ServerUnaryReactor* reactor,
                    const absl::Status& status, const VariableStore& store) {
  if (absl::IsNotFound(status) && store.size() == 0) {
    context->AddTrailingMetadata(kPsHoldsNothingMetadata, "1");
  }
  reactor->Finish(to_grpc_status(status));
}

}  // namespace

absl::Status VariableServiceImpl::find_call_memory(const PeerIdentity& caller,
                                                   const grpc::ByteBuffer& request,
                                                   ExecuteCallMemory* memory) {
  PSFLOW_ASSIGN_OR_RETURN(std::optional<SharedMemoryCallInfo> info,
                          read_shared_memory_call(request, limits_));
  if (!info.has_value()) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region =
      shared_memory_.find(caller, info->session);
  if (!region.ok()) return absl::FailedPreconditionError(region.status().message());
  if (info->result_bytes > 0 && !(*region)->contains(info->result_offset, info->result_bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ExecuteRequest.shared_memory's results [", info->result_offset, ", +",
                     info->result_bytes, ") lie outside the session's region (payload bytes ",
                     SharedMemoryRegion::kHeaderBytes, " to ", (*region)->size(), ")"));
  }
  memory->region = *std::move(region);
  memory->result_offset = info->result_offset;
  memory->result_bytes = info->result_bytes;
  return absl::OkStatus();
}

VariableServiceImpl::VariableServiceImpl(const TaskStatus* status,
                                         std::shared_ptr<VariableStore> store,
                                         VariableServiceOptions options)
    : status_(status),
      store_(std::move(store)),
      options_(options),
      shared_memory_(options.shared_memory),
      pool_(options.num_threads) {
  limits_.max_message_bytes = options_.max_message_bytes;
}

grpc::ServerUnaryReactor* VariableServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  if (absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kPsGetStatus);
      !caller.ok()) {
    return status_->refuse(context, "GetStatus", caller.status());
  }
  return status_->answer(context, *request, response);
}

grpc::ServerUnaryReactor* VariableServiceImpl::Execute(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* request,
                                                       grpc::ByteBuffer* response) {
  status_->note_caller(context, "Execute");
  absl::StatusOr<PeerIdentity> authorized = authorize_call(*context, Method::kPsExecute);
  if (!authorized.ok()) return status_->refuse(context, "Execute", authorized.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  ExecuteCallMemory memory;
  if (absl::Status s = find_call_memory(*authorized, *request, &memory); !s.ok()) {
    status_->note_error("Execute", s);
    if (absl::IsFailedPrecondition(s)) {
      context->AddTrailingMetadata(kUnknownSharedMemorySessionMetadata, "1");
    }
    reactor->Finish(to_grpc_status(s));
    return reactor;
  }
  // The request and response buffers stay valid until Finish().
  // Every outcome but success is also in the task's log (rate-limited).
  auto finish = [this, context, reactor](const absl::Status& status) {
    status_->note_error("Execute", status);
    finish_execute(context, reactor, status, *store_);
  };
  auto finish_on_pool = [this, context, response, finish](auto work) {
    pool_.schedule([context, response, finish, work = std::move(work)]() mutable {
      // A caller that gave up (deadline, cancellation) before the work
      // started gets nothing applied.
      if (context->IsCancelled()) {
        finish(absl::CancelledError("the call was cancelled before it ran"));
        return;
      }
      finish(guarded([&] { return work(response); }));
    });
  };
  if (request->Length() > kInlineDecodeBytes) {
    finish_on_pool(
        [this, request, caller = *authorized, memory](grpc::ByteBuffer* out) -> absl::Status {
          PSFLOW_ASSIGN_OR_RETURN(ExecuteBatch batch,
                                  decode_execute_request(*request, limits_, memory.region.get()));
          return run(caller, *store_, options_.max_message_bytes, batch, estimate(batch, *store_),
                     memory, out);
        });
    return reactor;
  }
  std::optional<ExecuteBatch> to_pool;
  const absl::Status inline_status = guarded([&]() -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(ExecuteBatch batch,
                            decode_execute_request(*request, limits_, memory.region.get()));
    // Refused before the batch waits for the pool.
    PSFLOW_RETURN_IF_ERROR(authorize_batch(*authorized, batch));
    const Estimate e = estimate(batch, *store_);
    if (e.work_bytes > kInlineWorkBytes) {
      to_pool = std::move(batch);
      return absl::OkStatus();
    }
    return run(*authorized, *store_, options_.max_message_bytes, batch, e, memory, response);
  });
  if (!to_pool.has_value()) {
    finish(inline_status);
    return reactor;
  }
  finish_on_pool([this, caller = *std::move(authorized), batch = *std::move(to_pool),
                  memory = std::move(memory)](grpc::ByteBuffer* out) mutable {
    // Estimated again: the variables may have changed while it waited.
    return run(caller, *store_, options_.max_message_bytes, batch, estimate(batch, *store_), memory,
               out);
  });
  return reactor;
}

grpc::ServerUnaryReactor* VariableServiceImpl::ListVariables(grpc::CallbackServerContext* context,
                                                             const grpc::ByteBuffer* raw_request,
                                                             grpc::ByteBuffer* raw_response) {
  if (absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kPsListVariables);
      !caller.ok()) {
    return status_->refuse(context, "ListVariables", caller.status());
  }
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::ListVariablesRequest, v1::ListVariablesResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  v1::ListVariablesResponse* response = &call->response();
  for (const std::shared_ptr<VariableShard>& shard : store_->all()) {
    v1::VariableInfo* info = response->add_variables();
    info->set_name(shard->name());
    info->set_dtype(static_cast<v1::DataType>(shard->dtype()));
    for (const int64_t d : shard->shape()) info->add_shape(d);
    VariableShard::OptimizerInfo optimizer = shard->optimizer_info();
    info->set_optimizer(std::move(optimizer.optimizer));
    info->set_optimizer_steps(optimizer.steps);
  }
  call->finish(grpc::Status::OK);
  return reactor;
}

}  // namespace psflow::internal

namespace psflow::internal {

grpc::ServerUnaryReactor* VariableServiceImpl::OpenSharedMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
    grpc::ByteBuffer* raw_response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kPsOpenSharedMemory);
  if (!caller.ok()) return status_->refuse(context, "OpenSharedMemory", caller.status());
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::OpenSharedMemoryRequest, v1::OpenSharedMemoryResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  absl::StatusOr<SharedMemorySessions::Opened> opened = shared_memory_.open(
      *caller, call->request().boot_id(), call->request().pid_namespace(), call->request().bytes());
  if (!opened.ok()) {
    call->finish(to_grpc_status(opened.status()));
    return reactor;
  }
  v1::OpenSharedMemoryResponse& response = call->response();
  response.set_session(opened->token);
  response.set_pid(static_cast<int64_t>(getpid()));
  response.set_fd(opened->region->fd());
  response.set_bytes(opened->region->size());
  response.set_header_bytes(SharedMemoryRegion::kHeaderBytes);
  call->finish(grpc::Status::OK);
  return reactor;
}

grpc::ServerUnaryReactor* VariableServiceImpl::CloseSharedMemory(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
    grpc::ByteBuffer* raw_response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kPsCloseSharedMemory);
  if (!caller.ok()) return status_->refuse(context, "CloseSharedMemory", caller.status());
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::CloseSharedMemoryRequest, v1::CloseSharedMemoryResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  call->finish(to_grpc_status(shared_memory_.close(*caller, call->request().session())));
  return reactor;
}

}  // namespace psflow::internal
