// psflow::Server: the gRPC server of one ps or worker task.
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/logging.h"
#include "base/strings.h"
#include "ps/client/retrying_variable_client.h"
#include "ps/client/variable_client.h"
#include "ps/server/variable_service.h"
#include "psflow/server.h"
#include "psflow/status_macros.h"
#include "psflow/variable_handle.h"
#include "rpc/address.h"
#include "rpc/allocator_tuning.h"
#include "rpc/bind_diagnosis.h"
#include "rpc/channel.h"
#include "rpc/library_logging.h"
#include "rpc/task_status.h"
#include "rpc/transport_credentials.h"
#include "server/task_plan.h"
#include "server/task_transport.h"
#include "strategy/client_lookup.h"
#include "worker/executor_service.h"

namespace psflow {

using internal::diagnose_bind_failure;
using internal::ExecutorServiceImpl;
using internal::ExecutorServiceOptions;
using internal::HostPort;
using internal::join_host_port;
using internal::kMinPingInterval;
using internal::ListenAddress;
using internal::make_ps_client;
using internal::parse_host_port;
using internal::plan_task;
using internal::ps_client_lookup;
using internal::TaskPlan;
using internal::TaskStatus;
using internal::tune_allocator_for_transfers;
using internal::VariableClient;
using internal::VariableServiceImpl;
using internal::VariableServiceOptions;
using internal::VariableStore;

namespace {

// A worker reaches every ps task of its cluster through lazily connecting
// gRPC clients (creating them never blocks).
ExecutorServiceOptions executor_options(const ClusterSpec& spec, int index,
                                        const ServerOptions& options) {
  ExecutorServiceOptions out;
  out.worker_index = index;
  out.num_workers = spec.num_tasks(kWorkerJob);
  out.max_message_bytes = static_cast<size_t>(options.max_message_bytes);
  out.result_cache_entries = static_cast<size_t>(options.result_cache_entries);
  out.result_cache_bytes = static_cast<size_t>(options.result_cache_bytes);
  out.max_value_bytes = static_cast<size_t>(options.max_value_bytes);
  std::vector<std::shared_ptr<VariableClient>> ps_clients;
  for (int ps : spec.task_indices(kPsJob)) {
    absl::StatusOr<std::string> address = spec.task_address(kPsJob, ps);
    if (!address.ok() || ps != static_cast<int>(ps_clients.size())) return out;
    ps_clients.push_back(make_ps_client(*address, psflow::task_name(kPsJob, ps)));
  }
  if (!ps_clients.empty()) out.variables = ps_client_lookup(std::move(ps_clients));
  return out;
}

int to_millis(absl::Duration d) {
  return static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(d), INT32_MAX));
}

// Closes silent, half-open and idle connections (see ServerOptions).
void add_connection_bounds(grpc::ServerBuilder& builder, const ServerOptions& options) {
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS,
                             to_millis(options.handshake_timeout));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, to_millis(options.keepalive_time));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, to_millis(options.keepalive_timeout));
  // Keep pinging a connection that carries no data: that is the one that
  // may be half-open.
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             to_millis(options.max_connection_idle));
  if (options.max_connection_age != absl::InfiniteDuration()) {
    builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS,
                               to_millis(options.max_connection_age));
  }
}

// ServerOptions::max_buffered_bytes, its default resolved.
int64_t buffered_bytes_bound(const ServerOptions& options) {
  if (options.max_buffered_bytes > 0) return options.max_buffered_bytes;
  return 2 * static_cast<int64_t>(options.max_message_bytes) + (int64_t{256} << 20);
}

void enable_health_service_once() {
  static std::once_flag once;
  std::call_once(once, [] { grpc::EnableDefaultHealthCheckService(true); });
}

// Thread-safety: stop() and join() may run concurrently with each other and
// with the const accessors; start() is not concurrent with itself.
class TaskServer final : public Server {
 public:
  TaskServer(const ClusterSpec& spec, std::string job, int index, HostPort address,
             ListenAddress listen, ServerOptions options, internal::TaskTransport transport)
      : job_(std::move(job)),
        index_(index),
        name_(psflow::task_name(job_, index_)),
        address_(std::move(address)),
        bind_address_(std::move(listen.address)),
        bind_origin_(std::move(listen.origin)),
        options_(std::move(options)),
        transport_(std::move(transport)),
        status_(job_, index_, transport_.insecure_exposed) {
    if (job_ == kPsJob) {
      VariableServiceOptions service_options;
      service_options.max_message_bytes = static_cast<size_t>(options_.max_message_bytes);
      service_ = std::make_unique<VariableServiceImpl>(
          &status_, std::make_shared<VariableStore>(options_.non_finite_updates), service_options);
    } else {
      service_ =
          std::make_unique<ExecutorServiceImpl>(&status_, executor_options(spec, index_, options_));
    }
  }

  ~TaskServer() override { stop(); }

  absl::Status start() override {
    absl::MutexLock lock(&mu_);
    if (state_ != State::kNew) {
      return absl::FailedPreconditionError(
          absl::StrCat("server for ", name_, " was already started or stopped"));
    }
    enable_health_service_once();
    internal::route_library_logs();
    tune_allocator_for_transfers();
    // Tried first with a throw-away socket: a port in use then gives one
    // line naming the address and the fix, not gRPC's log of the failed
    // bind. (gRPC's own failure below still covers a port taken between
    // the two.) Not with reuse_port: the launcher reserved that port for
    // this task, and a second listener on it could take (and drop) a
    // client's connection.
    if (std::string reason =
            options_.reuse_port ? "" : diagnose_bind_failure(bind_address_, /*reuse_port=*/false);
        !reason.empty()) {
      return listen_error(reason);
    }
    grpc::ServerBuilder builder;
    int selected_port = 0;
    builder.AddListeningPort(bind_address_, internal::server_credentials(transport_.tls.get()),
                             &selected_port);
    builder.RegisterService(service_.get());
    builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
    builder.SetMaxSendMessageSize(options_.max_message_bytes);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, options_.reuse_port ? 1 : 0);
    // Accept the clients' keepalive pings (see rpc/channel.h).
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                               static_cast<int>(absl::ToInt64Milliseconds(kMinPingInterval)));
    add_connection_bounds(builder, options_);
    grpc::ResourceQuota quota(absl::StrCat(name_, " buffers"));
    quota.Resize(static_cast<size_t>(buffered_bytes_bound(options_)));
    builder.SetResourceQuota(quota);
    std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
    if (server == nullptr || selected_port == 0) {
      if (server != nullptr) server->Shutdown();
      std::string reason = diagnose_bind_failure(bind_address_, options_.reuse_port);
      if (reason.empty()) reason = "see the gRPC error logged above";
      return listen_error(reason);
    }
    // Clients may ask for the task's service by name as well as for "".
    if (grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService()) {
      health->SetServingStatus(
          job_ == kPsJob ? "psflow.v1.VariableService" : "psflow.v1.ExecutorService", true);
    }
    absl::StatusOr<HostPort> bound = parse_host_port(bind_address_);
    PSFLOW_LOG(Info, name_, " listening on ",
               bound.ok() ? join_host_port(bound->host, selected_port) : bind_address_, " (",
               bind_origin_, ")");
    if (transport_.insecure_exposed) {
      PSFLOW_LOG(Warning, name_, ": ", transport_.description);
    } else {
      PSFLOW_LOG(Info, name_, ": ", transport_.description);
    }
    target_ = join_host_port(address_.host, address_.port == 0 ? selected_port : address_.port);
    server_ = std::move(server);
    state_ = State::kRunning;
    return absl::OkStatus();
  }

  void join() override {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](State* state) { return *state == State::kStopped; }, &state_));
  }

  void stop() override {
    grpc::Server* server = nullptr;
    {
      absl::MutexLock lock(&mu_);
      switch (state_) {
        case State::kNew: state_ = State::kStopped; return;
        case State::kStopping:
          // Another thread is stopping it: return only once it is down.
          mu_.Await(absl::Condition(
              +[](State* state) { return *state == State::kStopped; }, &state_));
          return;
        case State::kStopped: return;
        case State::kRunning:
          state_ = State::kStopping;
          server = server_.get();
          break;
      }
    }
    // Outside the lock: Shutdown waits for running calls, which may call
    // target() or task_name().
    server->Shutdown(absl::ToChronoTime(absl::Now() + options_.shutdown_grace));
    server->Wait();
    absl::MutexLock lock(&mu_);
    state_ = State::kStopped;
  }

  std::string task_name() const override { return name_; }

  std::string target() const override {
    absl::MutexLock lock(&mu_);
    return target_;
  }

 private:
  enum class State { kNew, kRunning, kStopping, kStopped };

  // Why start() could not listen, with the fix.
  absl::Status listen_error(std::string_view reason) const {
    return absl::UnavailableError(absl::StrCat(
        name_, " cannot listen on ", bind_address_, ": ", internal::av(reason),
        ". Another process may hold the port: stop it, or give this task a free port in "
        "TF_CONFIG (or --bind HOST:PORT)."));
  }

  const std::string job_;
  const int index_;
  const std::string name_;
  const HostPort address_;
  const std::string bind_address_;
  const std::string bind_origin_;
  const ServerOptions options_;
  const internal::TaskTransport transport_;
  const TaskStatus status_;
  std::unique_ptr<grpc::Service> service_;

  mutable absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kNew;
  std::string target_ ABSL_GUARDED_BY(mu_);
  // Set by start(); kept until destruction so that stop() can run on it
  // without holding mu_.
  std::unique_ptr<grpc::Server> server_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::create(const ClusterSpec& spec,
                                                       std::string job_name, int task_index,
                                                       ServerOptions options) {
  PSFLOW_ASSIGN_OR_RETURN(TaskPlan plan, plan_task(spec, job_name, task_index, options));
  PSFLOW_ASSIGN_OR_RETURN(HostPort listen, parse_host_port(plan.listen.address));
  PSFLOW_ASSIGN_OR_RETURN(internal::TaskTransport transport,
                          internal::plan_transport(options.tls, plan.job, task_index, listen.host));
  return std::unique_ptr<Server>(new TaskServer(spec, std::move(plan.job), task_index,
                                                std::move(plan.address), std::move(plan.listen),
                                                std::move(options), std::move(transport)));
}

}  // namespace psflow
