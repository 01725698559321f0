// RemoteExecutor: the client of the executor protocol (psflow/remote_executor.h),
// and the asynchronous calls the coordinator sends over the same kind of
// connection (executor/executor_connection.h).
#include "psflow/remote_executor.h"

#include <grpcpp/client_context.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/strings.h"
#include "base/tsan_annotations.h"
#include "executor/executor_connection.h"
#include "executor/run_stream.h"
#include "psflow/cluster_spec.h"
#include "psflow/status_macros.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "tensor/codec.h"

namespace psflow {

using internal::annotate_with_task;
using internal::ChannelOptions;
using internal::configure_context;
using internal::create_channel;
using internal::from_grpc_status;

namespace internal {
namespace {

using Stub = v1::ExecutorService::Stub;

// Tag and length of the CreateValueRequest field around a structure.
constexpr size_t kValueFramingBytes = 6;
// Deepest struct nesting streamed (the worker's decoder allows 64 levels).
constexpr int kMaxStreamDepth = 64;

// How long a fire-and-forget CancelFunction may take.
constexpr absl::Duration kCancelTimeout = absl::Seconds(5);

absl::Status closed_error(std::string_view target) {
  return absl::FailedPreconditionError(absl::StrCat("the RemoteExecutor for ", av(target),
                                                    " was closed; create a new one to continue"));
}

absl::Status check_options(const RemoteExecutorOptions& options) {
  if (options.dispose_batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("RemoteExecutorOptions::dispose_batch_size must be at least 1; got ",
                     options.dispose_batch_size));
  }
  if (options.max_message_bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RemoteExecutorOptions::max_message_bytes must be positive; got ",
                     options.max_message_bytes));
  }
  if (options.rpc_timeout <= absl::ZeroDuration() ||
      options.compute_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "RemoteExecutorOptions::rpc_timeout and compute_timeout must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

// The state shared by an executor and its handles: the stub (and through it
// the channel), the ids the handles own, the ids waiting to be disposed,
// and the coordinator's asynchronous calls in flight.
// Thread-safety: thread-safe; RPCs are sent without a mutex held.
//
// Lifetimes of the asynchronous calls: each call's ClientContext and
// buffers belong to this object (runs_, cancels_), never to the gRPC
// callback, and are freed under calls_mu_ after the callback is done with
// them; cancel_calls_and_wait() (RemoteExecutor's destructor) blocks until
// both maps are empty. So a context is always freed while the stub still
// holds the channel: were it freed after the owner dropped the channel, on
// the gRPC callback thread, it would release the channel's last reference
// there, which gRPC 1.51 does not support (it aborts: "ref_counted.h:183
// assertion failed: prior > 0"; see also rpc/health_check.h).
class ExecutorConnection : public std::enable_shared_from_this<ExecutorConnection> {
 public:
  ExecutorConnection(std::string target, std::string task_name, RemoteExecutorOptions options,
                     const std::shared_ptr<grpc::Channel>& channel)
      : target_(std::move(target)),
        task_name_(std::move(task_name)),
        options_(std::move(options)),
        stub_(v1::ExecutorService::NewStub(channel)),
        stream_(stub_.get(), task_name_, target_) {
    limits_.max_message_bytes = static_cast<size_t>(options_.max_message_bytes);
  }

  const std::string& target() const { return target_; }
  const RemoteExecutorOptions& options() const { return options_; }

  // --- handles ---------------------------------------------------------------

  // A handle owning `id`, a value the worker just created for us.
  absl::StatusOr<RemoteExecutorValue> adopt(std::string id) {
    {
      absl::MutexLock lock(&mu_);
      if (!closed_) {
        owned_.insert(id);
        return RemoteExecutorValue(shared_from_this(), std::move(id));
      }
    }
    // Closed while the value was being created: release it at once.
    (void)dispose_now({std::move(id)});
    return closed_error(target_);
  }

  // Checks that `value` is a live handle of this executor.
  absl::Status check(const RemoteExecutorValue& value, std::string_view role) const {
    if (!value.valid()) {
      return absl::FailedPreconditionError(
          absl::StrCat(av(role), " is an empty RemoteExecutorValue (moved from or released)"));
    }
    if (value.connection_.get() != this) {
      return absl::InvalidArgumentError(
          absl::StrCat(av(role), " '", value.id(), "' belongs to another RemoteExecutor (",
                       value.connection_->target(), "); values cannot move between executors"));
    }
    absl::MutexLock lock(&mu_);
    if (closed_) return closed_error(target_);
    return absl::OkStatus();
  }

  absl::Status check_open() const {
    absl::MutexLock lock(&mu_);
    return closed_ ? closed_error(target_) : absl::OkStatus();
  }

  void forget(const std::string& id) {
    absl::MutexLock lock(&mu_);
    owned_.erase(id);
  }

  // Queues `id` (owned by a handle being destroyed); sends a full batch.
  void dispose_later(const std::string& id) {
    std::vector<std::string> batch;
    {
      absl::MutexLock lock(&mu_);
      if (closed_ || owned_.erase(id) == 0) return;
      pending_.push_back(id);
      if (pending_.size() < static_cast<size_t>(options_.dispose_batch_size)) return;
      batch.swap(pending_);
    }
    (void)dispose_now(std::move(batch));
  }

  absl::Status close() {
    std::vector<std::string> ids;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return absl::OkStatus();
      closed_ = true;
      ids.swap(pending_);
      ids.insert(ids.end(), owned_.begin(), owned_.end());
      owned_.clear();
    }
    absl::Status first = absl::OkStatus();
    const size_t batch = static_cast<size_t>(options_.dispose_batch_size);
    for (size_t start = 0; start < ids.size(); start += batch) {
      const size_t end = std::min(ids.size(), start + batch);
      absl::Status s = dispose_now({ids.begin() + static_cast<std::ptrdiff_t>(start),
                                    ids.begin() + static_cast<std::ptrdiff_t>(end)});
      if (first.ok()) first = s;
    }
    return first;
  }

  // --- RPCs ------------------------------------------------------------------

  absl::StatusOr<std::string> create_value(const Structure& value) {
    const size_t size = encoded_size(value);
    if (size + kValueFramingBytes > static_cast<size_t>(options_.max_message_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "create_value: the value's encoding takes ", size,
          " bytes, more than one message may "
          "hold (RemoteExecutorOptions::max_message_bytes = ",
          options_.max_message_bytes, ")",
          value.is_sequence() || value.is_dict()
              ? "; set RemoteExecutorOptions::stream_structs to send it element by element"
              : "; split it into smaller tensors"));
    }
    v1::CreateValueRequest request;
    structure_to_proto(value, request.mutable_structure());
    v1::CreateValueResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::CreateValue, request, &response));
    return response.value_ref().id();
  }

  absl::StatusOr<std::string> create_function(std::string_view name) {
    v1::CreateValueRequest request;
    request.set_function_name(std::string(name));
    v1::CreateValueResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::CreateValue, request, &response));
    return response.value_ref().id();
  }

  absl::StatusOr<std::string> create_call(const std::string& function,
                                          const std::string* argument) {
    v1::CreateCallRequest request;
    request.mutable_function_ref()->set_id(function);
    if (argument != nullptr) request.mutable_argument_ref()->set_id(*argument);
    v1::CreateCallResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::CreateCall, request, &response));
    return response.value_ref().id();
  }

  absl::StatusOr<std::string> create_struct(
      const std::vector<std::pair<std::string, std::string>>& elements, bool list) {
    v1::CreateStructRequest request;
    for (const auto& [name, id] : elements) {
      v1::CreateStructRequest::Element* element = request.add_elements();
      element->set_name(name);
      element->mutable_value_ref()->set_id(id);
    }
    request.set_list(list);
    v1::CreateStructResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::CreateStruct, request, &response));
    return response.value_ref().id();
  }

  absl::StatusOr<std::string> create_selection(const std::string& source, int index) {
    v1::CreateSelectionRequest request;
    request.mutable_source_ref()->set_id(source);
    request.set_index(index);
    v1::CreateSelectionResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::CreateSelection, request, &response));
    return response.value_ref().id();
  }

  absl::StatusOr<RemoteExecutorStats> stats() {
    v1::GetExecutorStatsRequest request;
    v1::GetExecutorStatsResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::GetExecutorStats, request, &response));
    RemoteExecutorStats out;
    out.live_values = response.live_values();
    out.pending_values = response.pending_values();
    out.max_live_values = response.max_live_values();
    out.values_created = response.values_created();
    out.values_disposed = response.values_disposed();
    out.waiting_computes = response.waiting_computes();
    out.per_worker_iterators = response.per_worker_iterators();
    out.per_worker_resources = response.per_worker_resources();
    return out;
  }

  absl::Status dispose_per_worker(const std::vector<std::string>& ids, absl::Time deadline) {
    v1::DisposePerWorkerRequest request;
    for (const std::string& id : ids) request.add_ids(id);
    v1::DisposePerWorkerResponse response;
    return call(&Stub::DisposePerWorker, request, &response,
                std::max(absl::Milliseconds(1), deadline - absl::Now()));
  }

  // --- the fused call ----------------------------------------------------------

  absl::StatusOr<Structure> call_function(std::string_view function_name,
                                          const Structure& argument) {
    const size_t size = encoded_size(argument);
    if (size + function_name.size() + kValueFramingBytes * 2 >
        static_cast<size_t>(options_.max_message_bytes)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "call_function('", av(function_name), "'): the argument's encoding takes ", size,
          " bytes, more than one message may hold (RemoteExecutorOptions::max_message_bytes = ",
          options_.max_message_bytes,
          "); send it with create_value (stream_structs) and create_call instead"));
    }
    v1::RunFunctionRequest request;
    request.set_function_name(std::string(function_name));
    structure_to_proto(argument, request.mutable_args());
    v1::RunFunctionResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::RunFunction, request, &response, options_.compute_timeout));
    if (response.input_refs_missing()) {
      return malformed_result(function_name, "input_refs_missing without input_refs");
    }
    absl::Status function = function_status(response);
    if (!function.ok()) {
      return annotate_with_task(
          absl::Status(function.code(), absl::StrCat("call_function('", av(function_name),
                                                     "') failed: ", function.message())),
          task_name_, target_);
    }
    absl::StatusOr<Structure> output = structure_from_proto(response.mutable_output(), limits_);
    if (!output.ok()) return malformed_result(function_name, output.status().message());
    return output;
  }

  // --- the coordinator's asynchronous calls (executor_connection.h) ---------

  void run_async(v1::RunFunctionRequest request, RunDone done) {
    if (absl::Status open = check_open(); !open.ok()) {
      v1::RunFunctionResponse none;
      std::move(done)(open, none);
      return;
    }
    stream_.run_async(std::move(request), std::move(done));
  }

  void cancel_async(uint64_t closure_id) {
    CancelCall* cancel = nullptr;
    {
      absl::MutexLock lock(&calls_mu_);
      if (!stream_.is_running(closure_id)) return;
      auto owned = std::make_unique<CancelCall>();
      cancel = owned.get();
      cancels_.emplace(cancel, std::move(owned));
    }
    configure_context(cancel->context, absl::Now() + kCancelTimeout);
    cancel->request.set_closure_id(closure_id);
    // Freed by its callback under the lock, as runs are (see finish()).
    // StartCall -> callback is ordered by gRPC, invisibly to TSan.
    tsan_release(cancel);
    stub_->async()->CancelFunction(&cancel->context, &cancel->request, &cancel->response,
                                   [this, cancel](grpc::Status) {
                                     tsan_acquire(cancel);
                                     absl::MutexLock lock(&calls_mu_);
                                     cancels_.erase(cancel);
                                   });
  }

  absl::Status probe(absl::Time deadline) const {
    grpc::ClientContext context;
    configure_context(context, deadline);
    v1::GetStatusResponse response;
    const grpc::Status status = stub_->GetStatus(&context, v1::GetStatusRequest(), &response);
    if (!status.ok()) return annotate_with_task(from_grpc_status(status), task_name_, target_);
    return absl::OkStatus();
  }

  void cancel_calls_and_wait() {
    // The stream's callbacks may send cancellations: it ends first.
    stream_.shutdown();
    absl::MutexLock lock(&calls_mu_);
    for (auto& [raw, cancel] : cancels_) cancel->context.TryCancel();
    calls_mu_.Await(absl::Condition(this, &ExecutorConnection::no_calls_locked));
  }

  // --- streaming of structs (stream_structs) ----------------------------------

  absl::StatusOr<RemoteExecutorValue> create_value_handle(const Structure& value, int depth) {
    if (!options_.stream_structs || !(value.is_sequence() || value.is_dict()) ||
        value.size() == 0) {
      // Leaves, and empty structs (whose kind a struct of no elements
      // could not tell), go whole.
      PSFLOW_ASSIGN_OR_RETURN(std::string id, create_value(value));
      return adopt(std::move(id));
    }
    if (depth >= kMaxStreamDepth) {
      return absl::InvalidArgumentError(
          absl::StrCat("create_value: the value nests structs deeper than ", kMaxStreamDepth,
                       " levels, more than a worker accepts"));
    }
    // The element handles may go once the struct exists: the worker keeps
    // what the struct needs.
    std::vector<RemoteExecutorValue> handles;
    std::vector<std::pair<std::string, std::string>> elements;
    handles.reserve(value.size());
    if (value.is_dict()) {
      for (const auto& [key, element] : value.fields()) {
        PSFLOW_ASSIGN_OR_RETURN(RemoteExecutorValue handle,
                                create_value_handle(element, depth + 1));
        elements.emplace_back(key, handle.id());
        handles.push_back(std::move(handle));
      }
    } else {
      for (const Structure& element : value.items()) {
        PSFLOW_ASSIGN_OR_RETURN(RemoteExecutorValue handle,
                                create_value_handle(element, depth + 1));
        elements.emplace_back(std::string(), handle.id());
        handles.push_back(std::move(handle));
      }
    }
    PSFLOW_ASSIGN_OR_RETURN(std::string id,
                            create_struct(elements, value.kind() == Structure::Kind::kList));
    return adopt(std::move(id));
  }

  absl::StatusOr<Structure> compute(const std::string& id, int depth) {
    v1::ComputeRequest request;
    request.mutable_value_ref()->set_id(id);
    request.set_outline_structs(options_.stream_structs);
    v1::ComputeResponse response;
    PSFLOW_RETURN_IF_ERROR(call(&Stub::Compute, request, &response, options_.compute_timeout));
    if (response.has_value()) {
      absl::StatusOr<Structure> value = structure_from_proto(response.mutable_value(), limits_);
      if (!value.ok()) return malformed(absl::StrCat("value: ", value.status().message()));
      return value;
    }
    if (!response.has_outline() || !options_.stream_structs) {
      return malformed("neither a value nor an outline requested");
    }
    const v1::StructOutline& outline = response.outline();
    const bool dict = outline.kind() == v1::StructOutline::DICT;
    if (outline.size() < 0 || outline.size() > std::numeric_limits<int32_t>::max() ||
        (dict && outline.keys_size() != outline.size()) || depth >= kMaxStreamDepth) {
      return malformed(absl::StrCat("outline of ", outline.size(), " elements at depth ", depth));
    }
    Structure::Items items;
    Structure::Fields fields;
    for (int i = 0; i < static_cast<int>(outline.size()); ++i) {
      PSFLOW_ASSIGN_OR_RETURN(std::string element_id, create_selection(id, i));
      PSFLOW_ASSIGN_OR_RETURN(RemoteExecutorValue element, adopt(std::move(element_id)));
      PSFLOW_ASSIGN_OR_RETURN(Structure value, compute(element.id(), depth + 1));
      if (dict) {
        fields.emplace(outline.keys(i), std::move(value));
      } else {
        items.push_back(std::move(value));
      }
    }
    if (dict) {
      if (fields.size() != static_cast<size_t>(outline.size())) {
        return malformed("an outline with duplicate keys");
      }
      return Structure::dict(std::move(fields));
    }
    return outline.kind() == v1::StructOutline::LIST ? Structure::list(std::move(items))
                                                     : Structure::tuple(std::move(items));
  }

 private:
  struct CancelCall {
    grpc::ClientContext context;
    v1::CancelFunctionRequest request;
    v1::CancelFunctionResponse response;
  };

  bool no_calls_locked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(calls_mu_) { return cancels_.empty(); }

  absl::Status malformed_result(std::string_view function_name, absl::string_view what) const {
    return annotate_with_task(
        absl::InternalError(absl::StrCat("call_function('", av(function_name),
                                         "'): the worker sent a malformed result (", what, ")")),
        task_name_, target_);
  }

  absl::Status malformed(std::string_view what) const {
    return annotate_with_task(absl::InternalError(absl::StrCat(
                                  "the worker sent a malformed Compute response (", av(what), ")")),
                              task_name_, target_);
  }

  template <typename Request, typename Response>
  absl::Status call(grpc::Status (Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request, Response* response,
                    absl::Duration timeout = absl::ZeroDuration()) const {
    grpc::ClientContext context;
    configure_context(
        context, absl::Now() + (timeout == absl::ZeroDuration() ? options_.rpc_timeout : timeout));
    const grpc::Status status = (stub_.get()->*method)(&context, request, response);
    if (!status.ok()) return annotate_with_task(from_grpc_status(status), task_name_, target_);
    return absl::OkStatus();
  }

  absl::Status dispose_now(std::vector<std::string> ids) {
    if (ids.empty()) return absl::OkStatus();
    v1::DisposeRequest request;
    for (std::string& id : ids) request.add_value_refs()->set_id(std::move(id));
    v1::DisposeResponse response;
    absl::Status status = call(&Stub::Dispose, request, &response);
    if (!status.ok()) {
      PSFLOW_LOG(Warning, "RemoteExecutor: disposing of ", request.value_refs_size(),
                 " values failed: ", status.ToString());
    }
    return status;
  }

  const std::string target_;
  const std::string task_name_;
  const RemoteExecutorOptions options_;
  CodecLimits limits_;
  const std::unique_ptr<Stub> stub_;
  // The coordinator's runs (run_async); freed before stub_.
  RunStream stream_;

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  // Ids owned by live handles.
  absl::flat_hash_set<std::string> owned_ ABSL_GUARDED_BY(mu_);
  // Ids of destroyed handles, not sent yet.
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);

  // The asynchronous calls in flight, under a mutex of their own: the
  // callbacks of the coordinator's runs never wait on handle bookkeeping.
  absl::Mutex calls_mu_;
  absl::flat_hash_map<CancelCall*, std::unique_ptr<CancelCall>> cancels_ ABSL_GUARDED_BY(calls_mu_);
};

std::shared_ptr<ExecutorConnection> connect_executor(std::string_view target, std::string task_name,
                                                     RemoteExecutorOptions options,
                                                     ChannelOptions channel_options) {
  channel_options.max_message_bytes = options.max_message_bytes;
  std::shared_ptr<grpc::Channel> channel = create_channel(target, channel_options);
  return std::make_shared<ExecutorConnection>(std::string(target), std::move(task_name),
                                              std::move(options), channel);
}

void run_function_async(ExecutorConnection& connection, v1::RunFunctionRequest request,
                        RunDone done) {
  connection.run_async(std::move(request), std::move(done));
}

void cancel_function_async(ExecutorConnection& connection, uint64_t closure_id) {
  connection.cancel_async(closure_id);
}

absl::Status probe(ExecutorConnection& connection, absl::Time deadline) {
  return connection.probe(deadline);
}

void cancel_calls_and_wait(ExecutorConnection& connection) { connection.cancel_calls_and_wait(); }

absl::Status dispose_per_worker(ExecutorConnection& connection, const std::vector<std::string>& ids,
                                absl::Time deadline) {
  return connection.dispose_per_worker(ids, deadline);
}

absl::Status function_status(const v1::RunFunctionResponse& response) {
  const int32_t code = response.code();
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int32_t>(absl::StatusCode::kUnauthenticated)) {
    return absl::Status(absl::StatusCode::kUnknown, response.message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), response.message());
}

}  // namespace internal

using internal::check_options;
using internal::ExecutorConnection;

// --- RemoteExecutorValue -------------------------------------------------------

RemoteExecutorValue::RemoteExecutorValue(std::shared_ptr<ExecutorConnection> connection,
                                         std::string id)
    : connection_(std::move(connection)), id_(std::move(id)) {}

RemoteExecutorValue::RemoteExecutorValue(RemoteExecutorValue&& other) noexcept
    : connection_(std::move(other.connection_)), id_(std::move(other.id_)) {
  other.connection_ = nullptr;
  other.id_.clear();
}

RemoteExecutorValue& RemoteExecutorValue::operator=(RemoteExecutorValue&& other) noexcept {
  if (this != &other) {
    reset();
    connection_ = std::move(other.connection_);
    id_ = std::move(other.id_);
    other.connection_ = nullptr;
    other.id_.clear();
  }
  return *this;
}

RemoteExecutorValue::~RemoteExecutorValue() { reset(); }

void RemoteExecutorValue::reset() {
  if (connection_ != nullptr) connection_->dispose_later(id_);
  connection_ = nullptr;
  id_.clear();
}

absl::StatusOr<Structure> RemoteExecutorValue::compute() const {
  if (connection_ == nullptr) {
    return absl::FailedPreconditionError(
        "compute() of an empty RemoteExecutorValue (moved from or released)");
  }
  PSFLOW_RETURN_IF_ERROR(connection_->check(*this, "the value"));
  return connection_->compute(id_, 0);
}

std::string RemoteExecutorValue::release() {
  if (connection_ != nullptr) connection_->forget(id_);
  connection_ = nullptr;
  return std::exchange(id_, std::string());
}

// --- RemoteExecutor ------------------------------------------------------------

absl::StatusOr<std::unique_ptr<RemoteExecutor>> RemoteExecutor::create(
    std::string_view target, RemoteExecutorOptions options) {
  if (target.empty()) {
    return absl::InvalidArgumentError("RemoteExecutor::create needs a target (\"host:port\")");
  }
  PSFLOW_RETURN_IF_ERROR(check_options(options));
  ChannelOptions channel_options;
  channel_options.max_message_bytes = options.max_message_bytes;
  std::shared_ptr<grpc::Channel> channel = create_channel(target, channel_options);
  // Fail fast on a wrong address, and learn the task's name for messages.
  v1::GetStatusResponse status;
  {
    // Freed before `channel` (no callback thread is involved: a
    // synchronous call).
    grpc::ClientContext context;
    configure_context(context, absl::Now() + options.rpc_timeout);
    const grpc::Status rpc =
        v1::ExecutorService::NewStub(channel)->GetStatus(&context, v1::GetStatusRequest(), &status);
    if (!rpc.ok()) {
      return annotate_with_task(from_grpc_status(rpc), "the worker", target);
    }
  }
  std::string name = task_name(status.job_name(), status.task_index());
  auto connection = std::make_shared<ExecutorConnection>(std::string(target), std::move(name),
                                                         std::move(options), channel);
  return std::unique_ptr<RemoteExecutor>(new RemoteExecutor(std::move(connection)));
}

RemoteExecutor::RemoteExecutor(std::shared_ptr<ExecutorConnection> connection)
    : connection_(std::move(connection)) {}

RemoteExecutor::~RemoteExecutor() {
  (void)close();
  // Any asynchronous call still in flight is freed while connection_ (the
  // channel) is still held here.
  connection_->cancel_calls_and_wait();
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_value(const Structure& value) {
  PSFLOW_RETURN_IF_ERROR(connection_->check_open());
  return connection_->create_value_handle(value, 0);
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_function(std::string_view name) {
  PSFLOW_RETURN_IF_ERROR(connection_->check_open());
  PSFLOW_ASSIGN_OR_RETURN(std::string id, connection_->create_function(name));
  return connection_->adopt(std::move(id));
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_call(
    const RemoteExecutorValue& function) {
  PSFLOW_RETURN_IF_ERROR(connection_->check(function, "create_call's function"));
  PSFLOW_ASSIGN_OR_RETURN(std::string id, connection_->create_call(function.id(), nullptr));
  return connection_->adopt(std::move(id));
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_call(
    const RemoteExecutorValue& function, const RemoteExecutorValue& argument) {
  PSFLOW_RETURN_IF_ERROR(connection_->check(function, "create_call's function"));
  PSFLOW_RETURN_IF_ERROR(connection_->check(argument, "create_call's argument"));
  PSFLOW_ASSIGN_OR_RETURN(std::string id, connection_->create_call(function.id(), &argument.id()));
  return connection_->adopt(std::move(id));
}

absl::StatusOr<Structure> RemoteExecutor::call_function(std::string_view function_name,
                                                        const Structure& argument) {
  PSFLOW_RETURN_IF_ERROR(connection_->check_open());
  return connection_->call_function(function_name, argument);
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_struct(
    const std::vector<RemoteExecutorElement>& elements, bool as_list) {
  PSFLOW_RETURN_IF_ERROR(connection_->check_open());
  std::vector<std::pair<std::string, std::string>> ids;
  ids.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(
        connection_->check(elements[i].value(), absl::StrCat("create_struct's element ", i)));
    ids.emplace_back(elements[i].name(), elements[i].value().id());
  }
  PSFLOW_ASSIGN_OR_RETURN(std::string id, connection_->create_struct(ids, as_list));
  return connection_->adopt(std::move(id));
}

absl::StatusOr<RemoteExecutorValue> RemoteExecutor::create_selection(
    const RemoteExecutorValue& source, int index) {
  PSFLOW_RETURN_IF_ERROR(connection_->check(source, "create_selection's source"));
  PSFLOW_ASSIGN_OR_RETURN(std::string id, connection_->create_selection(source.id(), index));
  return connection_->adopt(std::move(id));
}

absl::Status RemoteExecutor::close() { return connection_->close(); }

absl::StatusOr<RemoteExecutorStats> RemoteExecutor::stats() const { return connection_->stats(); }

const std::string& RemoteExecutor::target() const { return connection_->target(); }

const RemoteExecutorOptions& RemoteExecutor::options() const { return connection_->options(); }

}  // namespace psflow
