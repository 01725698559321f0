// The ExecutorService a worker task serves: GetStatus, running the
// functions registered in this binary for a coordinator (RunFunction), and
// the TFF-style executor protocol (CreateValue/Call/Struct/Selection,
// Compute, Dispose) that RemoteExecutor speaks.
#ifndef PSFLOW_WORKER_EXECUTOR_SERVICE_H_
#define PSFLOW_WORKER_EXECUTOR_SERVICE_H_

#include <grpcpp/support/byte_buffer.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "base/thread_pool.h"
#include "psflow/function_registry.h"
#include "psflow/v1/task.grpc.pb.h"
#include "psflow/variable_handle.h"
#include "psflow/worker_context.h"
#include "rpc/authorization.h"
#include "rpc/peer_identity.h"
#include "rpc/task_status.h"
#include "tensor/codec.h"
#include "worker/result_cache.h"
#include "worker/value_graph.h"

namespace psflow::internal {

struct ExecutorServiceOptions {
  // This worker's index and the cluster's worker count (WorkerContext).
  int worker_index = 0;
  int num_workers = 1;
  // Reaches the cluster's ps tasks from functions (WorkerContext::variable);
  // null when the cluster has none.
  VariableClientLookup variables = nullptr;
  // Null: FunctionRegistry::global(). Must outlive the service.
  const FunctionRegistry* registry = nullptr;
  // Threads that run functions. 1 (the default) runs them one at a time in
  // arrival order, as TF's worker does, so functions need not synchronise
  // their per-worker state; a coordinator that pipelines closures
  // (max_in_flight_per_worker > 1) only hides the round trip.
  int num_threads = 1;
  size_t max_message_bytes = size_t{1} << 30;
  // The executor protocol: the most values (ids) the worker holds at once,
  // and the most not known yet; beyond that Create* is RESOURCE_EXHAUSTED.
  size_t max_live_values = 100000;
  // The most bytes of values clients created and did not dispose
  // (ValueGraphOptions::max_value_bytes).
  size_t max_value_bytes = size_t{16} << 30;
  // RunFunction's result cache (same-worker chaining, RunFunctionRequest.
  // result_session): the most results kept and their most encoded bytes,
  // least recently used evicted first; 0 keeps none. A miss costs the
  // coordinator one more round trip with the values, never an error.
  size_t result_cache_entries = 1024;
  size_t result_cache_bytes = size_t{64} << 20;
  // Tests only: runs in CreateValue after the request is decoded, before
  // the value is created (to cancel the call in between).
  std::function<void(grpc::CallbackServerContext&)> before_create_for_testing;
};

// Functions run on a pool, never on gRPC's callback threads (a function
// may block for seconds on parameter servers). Per-worker resources
// (WorkerContext::resources) live at most as long as the service: a worker
// restart loses them, as TF's per-worker resources are lost with the worker.
//
// A function's own error travels in RunFunctionResponse.code with an OK
// RPC, so that the coordinator can tell "the function failed" (final, the
// application's error) from "the worker could not be reached" (retry on
// another worker); malformed requests (bad args encoding) fail the RPC
// with INVALID_ARGUMENT, which is final too.
//
// Per-worker iterators and resources live in `resources_` until the
// coordinator releases them (DisposePerWorker, batched) or the process ends.
//
// The executor protocol (task.proto): values live in a ValueGraph; a call
// runs on the same function pool as RunFunction, in arrival order, with a
// WorkerContext built the same way (its closure_id is the call's number
// with the top bit set, so it never equals a coordinator's closure id).
// CreateCall returns before the call runs; Compute finishes its reactor
// when the value is known (from the function thread, or at once), so no
// thread waits for it, and with CANCELLED when the client gives up. Its
// requests arrive as raw bytes and are parsed here, so that bytes that are
// no valid message are INVALID_ARGUMENT (gRPC's own parser would say
// INTERNAL); every input is validated before anything changes.
//
// Every handler first checks the caller's role (rpc/authorization.h). The
// executor protocol's values and RunFunction's closures belong to the
// client that created them (PeerIdentity::owner): another client's ids are
// NOT_FOUND, and cancelling another client's closure id finds nothing
// running, exactly as for ids never used.
//
// Thread-safety: handlers run concurrently; the service's state is
// guarded by its mutex, the values by the ValueGraph's.
//
// Bases: every RPC of the service as a raw callback, parsed here (so that a
// body that does not parse is INVALID_ARGUMENT, see rpc/parsed_call.h),
// over the plain Service rather than CallbackService, whose typed
// CreateValue etc. the raw ones would hide (clang's -Woverloaded-virtual).
class ExecutorServiceImpl final
    : public v1::ExecutorService::WithRawCallbackMethod_CreateValue<
          v1::ExecutorService::WithRawCallbackMethod_CreateCall<
              v1::ExecutorService::WithRawCallbackMethod_CreateStruct<
                  v1::ExecutorService::WithRawCallbackMethod_CreateSelection<
                      v1::ExecutorService::WithRawCallbackMethod_Compute<
                          v1::ExecutorService::WithRawCallbackMethod_Dispose<
                              v1::ExecutorService::WithRawCallbackMethod_GetStatus<
                                  v1::ExecutorService::WithRawCallbackMethod_RunFunction<
                                      v1::ExecutorService::WithRawCallbackMethod_CancelFunction<
                                          v1::ExecutorService::
                                              WithRawCallbackMethod_GetExecutorStats<
                                                  v1::ExecutorService::
                                                      WithRawCallbackMethod_DisposePerWorker<
                                                          v1::ExecutorService::
                                                              WithRawCallbackMethod_RunFunctions<
                                                                  v1::ExecutorService::
                                                                      Service>>>>>>>>>>>> {
 public:
  // `status` must outlive the service.
  ExecutorServiceImpl(const TaskStatus* status, ExecutorServiceOptions options);
  ~ExecutorServiceImpl() override;

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* RunFunction(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override
      ABSL_LOCKS_EXCLUDED(mu_);
  // The coordinator's closure stream (run_stream_reactor.cc).
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* RunFunctions(
      grpc::CallbackServerContext* context) override;

  // How RunFunction, and each run of RunFunctions, ends: the RPC status
  // (OK: the worker ran the request, and the response says how).
  using RunFinish = absl::AnyInvocable<void(const grpc::Status&) &&>;
  // Validates and starts one RunFunction request from `caller`; `finish`
  // runs exactly once, inline or on the function thread. `request` and
  // `response` must live until it has run (their payloads are moved out of
  // `request`, and `response` is filled).
  void start_run(const PeerIdentity& caller, v1::RunFunctionRequest& request,
                 v1::RunFunctionResponse* response, RunFinish finish) ABSL_LOCKS_EXCLUDED(mu_);

  grpc::ServerUnaryReactor* CancelFunction(grpc::CallbackServerContext* context,
                                           const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override
      ABSL_LOCKS_EXCLUDED(mu_);

  // The executor protocol (executor_protocol.cc).
  grpc::ServerUnaryReactor* CreateValue(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CreateCall(grpc::CallbackServerContext* context,
                                       const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override
      ABSL_LOCKS_EXCLUDED(call_order_mu_);
  grpc::ServerUnaryReactor* CreateStruct(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* CreateSelection(grpc::CallbackServerContext* context,
                                            const grpc::ByteBuffer* request,
                                            grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Compute(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Dispose(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GetExecutorStats(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;
  // Per-worker objects (per_worker_service.cc).
  grpc::ServerUnaryReactor* DisposePerWorker(grpc::CallbackServerContext* context,
                                             const grpc::ByteBuffer* request,
                                             grpc::ByteBuffer* response) override;

 private:
  // GetExecutorStats' per-worker part.
  void fill_per_worker_stats(v1::GetExecutorStatsResponse& response) const;
  // Closures by (client, closure id): clients number their closures alike.
  using RunningKey = std::pair<std::string, uint64_t>;

  // OK when `name` is registered; else NOT_FOUND, listing registered names
  // only to callers who may see them (may_list_function_names).
  absl::Status check_function(std::string_view name, const PeerIdentity& caller) const;
  void run(const RunningKey& key, uint64_t session, uint64_t result_session,
           const std::string& function_name, Structure args,
           const std::shared_ptr<std::atomic<bool>>& cancelled, v1::RunFunctionResponse* response,
           int64_t worker_recoveries, bool restarted);
  // Puts the results that `request.input_refs` name into `args`: NOT_FOUND
  // when the cache no longer holds one, INVALID_ARGUMENT for a bad request.
  // `result_session` is the request's, scoped (scoped_session).
  absl::StatusOr<Structure> substitute_input_refs(const v1::RunFunctionRequest& request,
                                                  uint64_t result_session, Structure args);
  // The result cache's session for `owner`'s `session` (0 stays 0): the
  // session xor a random salt drawn per owner, so that clients naming the
  // same session never reach each other's results.
  uint64_t scoped_session(const std::string& owner, uint64_t session) ABSL_LOCKS_EXCLUDED(mu_);
  // GetExecutorStats' result-cache part.
  void fill_result_cache_stats(v1::GetExecutorStatsResponse& response) const;
  // Runs a registered function with this worker's WorkerContext (the path
  // RunFunction and executor-protocol calls share).
  absl::StatusOr<Structure> invoke(uint64_t session, uint64_t closure_id,
                                   std::string_view function_name, const Structure& args,
                                   const std::atomic<bool>& cancelled,
                                   int64_t worker_recoveries = 0);

  const TaskStatus* status_;
  // Set once a request showed that this process replaced the one the
  // coordinator knew; from then on functions get process_incarnation() as
  // their restart salt (see WorkerContext::restart_salt), else 0.
  std::atomic<bool> restarted_{false};
  const ExecutorServiceOptions options_;
  const FunctionRegistry& registry_;
  CodecLimits limits_;
  WorkerResources resources_;

  absl::Mutex mu_;
  // Cancellation flags of the closures received and not yet finished.
  absl::flat_hash_map<RunningKey, std::shared_ptr<std::atomic<bool>>> running_ ABSL_GUARDED_BY(mu_);
  // scoped_session's salts, by owner: one per client task or host.
  absl::flat_hash_map<std::string, uint64_t> session_salts_ ABSL_GUARDED_BY(mu_);

  ValueGraph values_;
  // Held from creating a call until it is queued, so that calls are queued
  // in the order their ids were created: a call waits for its argument,
  // which must never be queued behind it (ids are unguessable and returned
  // only once queued, but the order must not rest on that alone).
  absl::Mutex call_order_mu_;
  ResultCache results_;
  ThreadPool pool_;  // Last: joined first, while the members above exist.
};

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_EXECUTOR_SERVICE_H_
