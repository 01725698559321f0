#include "coordinator/status_server.h"

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "psflow/v1/coordinator.grpc.pb.h"
#include "rpc/address.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"
#include "rpc/task_status.h"

namespace psflow::internal {
namespace {

// The longest task name a request may carry ("/job:worker/replica:0/task:N"
// is under 40 characters).
constexpr size_t kMaxTaskNameBytes = 256;

// The states `all` holds for `requested` (all of them when empty), or
// INVALID_ARGUMENT naming what is wrong with the request.
absl::StatusOr<std::vector<TaskState>> select_states(
    std::vector<TaskState> all, const google::protobuf::RepeatedPtrField<std::string>& requested) {
  if (requested.empty()) return all;
  if (requested.size() > kMaxRequestedTasks) {
    return absl::InvalidArgumentError(absl::StrCat("a GetTaskStates request names ",
                                                   requested.size(), " tasks; at most ",
                                                   kMaxRequestedTasks, " are allowed"));
  }
  absl::flat_hash_map<std::string, size_t> index;
  std::vector<std::string> known;
  for (size_t i = 0; i < all.size(); ++i) {
    index.emplace(all[i].task, i);
    known.push_back(all[i].task);
  }
  absl::flat_hash_set<std::string> seen;
  std::vector<TaskState> out;
  for (const std::string& name : requested) {
    if (name.size() > kMaxTaskNameBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a requested task name is ", name.size(),
                                                     " bytes long; task names are at most ",
                                                     kMaxTaskNameBytes));
    }
    const auto it = index.find(name);
    if (it == index.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown task '", name, "'; this cluster's tasks are ", absl::StrJoin(known, ", ")));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("task '", name, "' is requested twice"));
    }
    out.push_back(all[it->second]);
  }
  return out;
}

class StatusService final : public v1::CoordinatorStatusService::CallbackService {
 public:
  explicit StatusService(std::function<std::vector<TaskState>()> states)
      : states_(std::move(states)), identity_("chief", 0) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::GetStatusRequest* /*request*/,
                                      v1::GetStatusResponse* response) override {
    return identity_.answer(context, response);
  }

  grpc::ServerUnaryReactor* GetTaskStates(grpc::CallbackServerContext* context,
                                          const v1::GetTaskStatesRequest* request,
                                          v1::GetTaskStatesResponse* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    absl::StatusOr<std::vector<TaskState>> states = select_states(states_(), request->tasks());
    if (!states.ok()) {
      reactor->Finish(to_grpc_status(states.status()));
      return reactor;
    }
    for (const TaskState& state : *states) {
      v1::TaskStateProto* out = response->add_states();
      out->set_task(state.task);
      out->set_code(static_cast<int32_t>(state.error.code()));
      out->set_message(std::string(state.error.message()));
      out->set_restarts(state.restarts);
      out->set_incarnation(state.incarnation);
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  const std::function<std::vector<TaskState>()> states_;
  const TaskStatus identity_;
};

}  // namespace

struct CoordinatorStatusServer::Impl {
  std::unique_ptr<StatusService> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

CoordinatorStatusServer::CoordinatorStatusServer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

CoordinatorStatusServer::~CoordinatorStatusServer() {
  impl_->server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
  impl_->server->Wait();
}

const std::string& CoordinatorStatusServer::address() const { return impl_->address; }

absl::StatusOr<std::unique_ptr<CoordinatorStatusServer>> CoordinatorStatusServer::start(
    std::function<std::vector<TaskState>()> states, std::string_view listen) {
  PSFLOW_ASSIGN_OR_RETURN(HostPort bind, parse_host_port(listen));
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<StatusService>(std::move(states));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(std::string(listen), grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(impl->service.get());
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || port == 0) {
    if (impl->server != nullptr) impl->server->Shutdown();
    return absl::UnavailableError(absl::StrCat("the coordinator's status service cannot listen on ",
                                               av(listen),
                                               " (address in use, or not this machine's)"));
  }
  impl->address = join_host_port(bind.host, port);
  return std::unique_ptr<CoordinatorStatusServer>(new CoordinatorStatusServer(std::move(impl)));
}

absl::StatusOr<std::vector<TaskState>> fetch_task_states(std::string_view address,
                                                         absl::Time deadline,
                                                         const std::vector<std::string>& tasks) {
  PSFLOW_RETURN_IF_ERROR(parse_host_port(address).status());
  // The status service is plaintext on loopback (see the header), whatever
  // credentials this process's task channels use.
  ChannelOptions options;
  options.plaintext = true;
  auto stub = v1::CoordinatorStatusService::NewStub(create_channel(address, options));
  grpc::ClientContext context;
  configure_context(context, deadline);
  v1::GetTaskStatesRequest request;
  for (const std::string& task : tasks) request.add_tasks(task);
  v1::GetTaskStatesResponse response;
  const grpc::Status status = stub->GetTaskStates(&context, request, &response);
  if (!status.ok()) {
    const absl::Status error = from_grpc_status(status);
    return absl::Status(error.code(), absl::StrCat("the coordinator's status service at ",
                                                   av(address), ": ", error.message()));
  }
  std::vector<TaskState> out;
  for (const v1::TaskStateProto& state : response.states()) {
    const int code = state.code();
    const bool known = code >= 0 && code <= static_cast<int>(absl::StatusCode::kUnauthenticated);
    out.push_back(TaskState{state.task(),
                            code == 0 ? absl::OkStatus()
                                      : absl::Status(known ? static_cast<absl::StatusCode>(code)
                                                           : absl::StatusCode::kUnknown,
                                                     state.message()),
                            state.restarts(), state.incarnation()});
  }
  return out;
}

}  // namespace psflow::internal
