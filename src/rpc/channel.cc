#include "rpc/channel.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "psflow/cluster_spec.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/grpc_status.h"
#include "rpc/health_check.h"
#include "rpc/transport_credentials.h"

namespace psflow::internal {
namespace {

int to_millis(absl::Duration d) { return static_cast<int>(absl::ToInt64Milliseconds(d)); }

}  // namespace

std::shared_ptr<grpc::Channel> create_channel(std::string_view target,
                                              const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, to_millis(options.initial_reconnect_backoff));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, to_millis(options.max_reconnect_backoff));
  // gRPC uses the "minimum reconnect backoff" as the connect timeout.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, to_millis(options.connect_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, to_millis(options.keepalive_time));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, to_millis(options.keepalive_timeout));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  args.SetMaxSendMessageSize(options.max_message_bytes);
  std::shared_ptr<const TlsCredentials> tls =
      options.plaintext ? nullptr : (options.tls != nullptr ? options.tls : default_tls());
  return grpc::CreateCustomChannel(std::string(target), channel_credentials(tls.get()), args);
}

void configure_context(grpc::ClientContext& context, absl::Time deadline, bool wait_for_ready) {
  context.set_deadline(absl::ToChronoTime(deadline));
  context.set_wait_for_ready(wait_for_ready);
}

absl::Status wait_for_healthy(std::string_view target, std::string_view task_name,
                              absl::Time deadline, const ChannelOptions& options) {
  auto stub = grpc::health::v1::Health::NewStub(create_channel(target, options));
  grpc::ClientContext context;
  configure_context(context, deadline, /*wait_for_ready=*/true);
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  return health_check_result(status, response, target, task_name);
}

absl::StatusOr<v1::GetStatusResponse> get_status(const std::shared_ptr<grpc::Channel>& channel,
                                                 std::string_view target, std::string_view job,
                                                 int task_index, absl::Time deadline) {
  const std::string name = task_name(job, task_index);
  grpc::ClientContext context;
  configure_context(context, deadline);
  v1::GetStatusRequest request;
  v1::GetStatusResponse response;
  grpc::Status status;
  if (job == kPsJob) {
    status = v1::VariableService::NewStub(channel)->GetStatus(&context, request, &response);
  } else if (job == kWorkerJob) {
    status = v1::ExecutorService::NewStub(channel)->GetStatus(&context, request, &response);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("GetStatus is served by 'ps' and 'worker' tasks only, not by ", name));
  }
  if (!status.ok()) return annotate_with_task(from_grpc_status(status), name, target);
  return response;
}

absl::StatusOr<v1::GetStatusResponse> get_status(std::string_view target, std::string_view job,
                                                 int task_index, absl::Time deadline) {
  return get_status(create_channel(target), target, job, task_index, deadline);
}

}  // namespace psflow::internal
