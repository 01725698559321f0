#include "worker/executor_service.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/shown_text.h"
#include "rpc/grpc_status.h"
#include "rpc/parsed_call.h"
#include "worker/function_runner.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {
namespace {

int pool_size(int requested) { return std::max(1, requested); }

}  // namespace

ExecutorServiceImpl::ExecutorServiceImpl(const TaskStatus* status, ExecutorServiceOptions options)
    : status_(status),
      options_(std::move(options)),
      registry_(options_.registry != nullptr ? *options_.registry : FunctionRegistry::global()),
      values_(ValueGraphOptions{
          .max_live_values = options_.max_live_values,
          .max_value_bytes = options_.max_value_bytes,
          .id_prefix = absl::StrCat(absl::Hex(process_incarnation() & 0xffffffffu), "-"),
          .random_bytes = nullptr}),
      results_(ResultCacheOptions{.max_entries = options_.result_cache_entries,
                                  .max_bytes = options_.result_cache_bytes}),
      pool_(pool_size(options_.num_threads)) {
  limits_.max_message_bytes = options_.max_message_bytes;
}

ExecutorServiceImpl::~ExecutorServiceImpl() {
  // Ask running functions to stop so that the pool joins promptly.
  values_.cancel_calls();
  absl::MutexLock lock(&mu_);
  for (auto& [id, flag] : running_) flag->store(true, std::memory_order_relaxed);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* raw_request,
                                                         grpc::ByteBuffer* raw_response) {
  if (absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerGetStatus);
      !caller.ok()) {
    return status_->refuse(context, "GetStatus", caller.status());
  }
  return status_->answer(context, *raw_request, raw_response);
}

absl::Status ExecutorServiceImpl::check_function(std::string_view name,
                                                 const PeerIdentity& caller) const {
  absl::StatusOr<const RegisteredFunction*> function = registry_.lookup(name);
  if (function.ok()) return absl::OkStatus();
  if (may_list_function_names(caller)) return function.status();
  // The registry's message lists registered and similar names: only the
  // chief (or a local developer) may learn them.
  return absl::NotFoundError(absl::StrCat(
      "No function named '", shown_name(name),
      "' is registered in this worker's binary; the chief's copy of this error lists the "
      "registered names"));
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::RunFunction(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* raw_request,
                                                           grpc::ByteBuffer* raw_response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerRunFunction);
  if (!caller.ok()) return status_->refuse(context, "RunFunction", caller.status());
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::RunFunctionRequest, v1::RunFunctionResponse>(*raw_request,
                                                                           raw_response, &reactor);
  if (call == nullptr) return reactor;
  start_run(*caller, call->request(), &call->response(),
            [call](const grpc::Status& status) { call->finish(status); });
  return reactor;
}

void ExecutorServiceImpl::start_run(const PeerIdentity& caller, v1::RunFunctionRequest& request_ref,
                                    v1::RunFunctionResponse* response, RunFinish finish) {
  const v1::RunFunctionRequest* request = &request_ref;
  if (request->function_name().empty()) {
    std::move(finish)(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                   "RunFunction needs a function_name; got an empty one."));
    return;
  }
  // An unknown function fails like one that ran and failed (code in the
  // response), before its arguments are decoded.
  if (absl::Status known = check_function(request->function_name(), caller); !known.ok()) {
    status_->note_error("RunFunction", known);
    response->set_incarnation(process_incarnation());
    response->set_code(static_cast<int32_t>(known.code()));
    response->set_message(std::string(known.message()));
    std::move(finish)(grpc::Status::OK);
    return;
  }
  // Results are kept per client: another client naming the same session
  // finds none of them.
  const uint64_t result_session = scoped_session(caller.owner(), request->result_session());
  // Decoding validates the untrusted args (shapes, sizes, depth) and moves
  // tensor payloads out of the request without copying them.
  absl::StatusOr<Structure> args = structure_from_proto(request_ref.mutable_args(), limits_);
  if (!args.ok()) {
    const absl::Status malformed = absl::InvalidArgumentError(
        absl::StrCat("RunFunction '", shown_name(request->function_name()), "' (closure ",
                     request->closure_id(), "): malformed args: ", args.status().message()));
    status_->note_error("RunFunction", malformed);
    std::move(finish)(to_grpc_status(malformed));
    return;
  }
  if (request->input_refs_size() > 0) {
    // Substituted on arrival: the inputs finished before this closure was
    // sent, and an eviction while it waits for the function thread must not
    // lose them.
    args = substitute_input_refs(*request, result_session, *std::move(args));
    if (absl::IsNotFound(args.status())) {
      response->set_input_refs_missing(true);
      response->set_incarnation(process_incarnation());
      std::move(finish)(grpc::Status::OK);
      return;
    }
    if (!args.ok()) {
      std::move(finish)(to_grpc_status(absl::InvalidArgumentError(
          absl::StrCat("RunFunction '", shown_name(request->function_name()), "' (closure ",
                       request->closure_id(), "): ", args.status().message()))));
      return;
    }
  }
  // Registered on arrival, so that a cancellation also reaches a closure
  // still waiting for the function thread (a pipelining coordinator sends
  // several ahead).
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  RunningKey key{caller.owner(), request->closure_id()};
  {
    absl::MutexLock lock(&mu_);
    running_[key] = cancelled;
  }
  pool_.schedule([this, finish = std::move(finish), request, response, cancelled, result_session,
                  key = std::move(key), args = *std::move(args)]() mutable {
    run(key, request->session(), result_session, request->function_name(), std::move(args),
        cancelled, response, request->worker_recoveries(),
        // This process replaced the one the coordinator knew: a salt of
        // its own, so that rebuilt datasets take new orders.
        request->last_incarnation() != 0 && request->last_incarnation() != process_incarnation());
    std::move(finish)(grpc::Status::OK);
  });
}

uint64_t ExecutorServiceImpl::scoped_session(const std::string& owner, uint64_t session) {
  if (session == 0) return 0;
  absl::MutexLock lock(&mu_);
  auto [it, added] = session_salts_.try_emplace(owner, 0);
  if (added) {
    absl::BitGen gen;  // Seeded from the OS.
    it->second = absl::Uniform<uint64_t>(gen) | 1;
  }
  const uint64_t scoped = session ^ it->second;
  return scoped == 0 ? it->second : scoped;
}

absl::StatusOr<Structure> ExecutorServiceImpl::substitute_input_refs(
    const v1::RunFunctionRequest& request, uint64_t result_session, Structure args) {
  if (result_session == 0) {
    return absl::InvalidArgumentError("input_refs need a non-zero result_session");
  }
  for (const v1::ResultRef& ref : request.input_refs()) {
    std::optional<Structure> value = results_.get(result_session, ref.closure_id());
    if (!value.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("the result of closure ", ref.closure_id(), " is no longer kept"));
    }
    StructurePath path;
    path.reserve(ref.path_size());
    for (const v1::PathElement& element : ref.path()) {
      if (element.element_case() == v1::PathElement::kIndex) {
        path.emplace_back(element.index());
      } else if (element.element_case() == v1::PathElement::kKey) {
        path.emplace_back(element.key());
      } else {
        return absl::InvalidArgumentError("an input_refs path element is empty");
      }
    }
    absl::StatusOr<Structure> replaced = replace_at_path(args, path, *std::move(value));
    if (!replaced.ok()) return replaced.status();
    args = *std::move(replaced);
  }
  return args;
}

void ExecutorServiceImpl::fill_result_cache_stats(v1::GetExecutorStatsResponse& response) const {
  const ResultCacheStats stats = results_.stats();
  response.set_cached_results(stats.entries);
  response.set_cached_result_bytes(stats.bytes);
  response.set_result_ref_hits(stats.hits);
  response.set_result_ref_misses(stats.misses);
}

void ExecutorServiceImpl::run(const RunningKey& key, uint64_t session, uint64_t result_session,
                              const std::string& function_name, Structure args,
                              const std::shared_ptr<std::atomic<bool>>& cancelled,
                              v1::RunFunctionResponse* response, int64_t worker_recoveries,
                              bool restarted) {
  const uint64_t closure_id = key.second;
  absl::StatusOr<Structure> output = Structure();
  if (cancelled->load(std::memory_order_relaxed)) {
    output = absl::CancelledError(absl::StrCat("closure ", closure_id, " ('", function_name,
                                               "') was cancelled before it started"));
  }
  if (output.ok()) {
    // Sticky for the process: datasets built by later closures (after the
    // coordinator learnt this incarnation) get the same salt.
    if (restarted) restarted_.store(true, std::memory_order_relaxed);
    output = invoke(session, closure_id, function_name, args, *cancelled, worker_recoveries);
  }
  {
    absl::MutexLock lock(&mu_);
    auto it = running_.find(key);
    if (it != running_.end() && it->second == cancelled) running_.erase(it);
  }
  response->set_incarnation(process_incarnation());
  if (output.ok()) {
    response->set_code(0);
    structure_to_proto(*output, response->mutable_output());
    // Kept before the response leaves, so that a closure chained on this
    // one (sent only once this result reached the coordinator) finds it.
    if (result_session != 0) {
      response->set_result_kept(results_.put(result_session, closure_id, *std::move(output),
                                             response->output().ByteSizeLong()));
    }
  } else {
    status_->note_error(absl::StrCat("RunFunction '", shown_name(function_name), "'"),
                        output.status());
    response->set_code(static_cast<int32_t>(output.status().code()));
    response->set_message(std::string(output.status().message()));
    response->set_input_error(is_per_worker_input_error(output.status()));
  }
}

absl::StatusOr<Structure> ExecutorServiceImpl::invoke(uint64_t session, uint64_t closure_id,
                                                      std::string_view function_name,
                                                      const Structure& args,
                                                      const std::atomic<bool>& cancelled,
                                                      int64_t worker_recoveries) {
  const VariableClientLookup* variables = options_.variables ? &options_.variables : nullptr;
  WorkerContext ctx(options_.worker_index, closure_id, resources_, cancelled, options_.num_workers,
                    variables);
  ctx.set_worker_recoveries(worker_recoveries);
  ctx.set_restart_salt(restarted_.load(std::memory_order_relaxed) ? process_incarnation() : 0);
  // The closure's updates are stamped for exactly-once application on the ps.
  ctx.set_update_session(session);
  return run_registered_function(registry_, function_name, ctx, args);
}

grpc::ServerUnaryReactor* ExecutorServiceImpl::CancelFunction(grpc::CallbackServerContext* context,
                                                              const grpc::ByteBuffer* raw_request,
                                                              grpc::ByteBuffer* raw_response) {
  absl::StatusOr<PeerIdentity> caller = authorize_call(*context, Method::kWorkerCancelFunction);
  if (!caller.ok()) return status_->refuse(context, "CancelFunction", caller.status());
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::CancelFunctionRequest, v1::CancelFunctionResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  const v1::CancelFunctionRequest* request = &call->request();
  v1::CancelFunctionResponse* response = &call->response();
  {
    // Another client's closure of the same id is not this caller's to
    // cancel: the answer is that of an id not running.
    absl::MutexLock lock(&mu_);
    auto it = running_.find(RunningKey{caller->owner(), request->closure_id()});
    if (it != running_.end()) {
      it->second->store(true, std::memory_order_relaxed);
      response->set_was_running(true);
    }
  }
  call->finish(grpc::Status::OK);
  return reactor;
}

}  // namespace psflow::internal
