#include "rpc/health_check.h"

#include <grpcpp/client_context.h>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "base/tsan_annotations.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rpc/grpc_status.h"

namespace psflow::internal {

using grpc::health::v1::HealthCheckResponse;

absl::Status health_check_result(const grpc::Status& status, const HealthCheckResponse& response,
                                 std::string_view target, std::string_view task_name) {
  if (!status.ok()) {
    absl::Status error = from_grpc_status(status);
    if (error.code() == absl::StatusCode::kDeadlineExceeded) {
      error = absl::DeadlineExceededError(
          absl::StrCat("did not answer a health check before the deadline (is the task "
                       "running and listening on this address?): ",
                       error.message()));
    }
    return annotate_with_task(error, task_name, target);
  }
  if (response.status() == HealthCheckResponse::SERVING) return absl::OkStatus();
  return annotate_with_task(absl::UnavailableError(absl::StrCat(
                                "task is not serving (health status ",
                                HealthCheckResponse::ServingStatus_Name(response.status()),
                                "); it is probably shutting down")),
                            task_name, target);
}

struct HealthCheck::State {
  std::string target;
  std::string task_name;
  std::function<void(absl::Status)> done;
  std::unique_ptr<grpc::health::v1::Health::Stub> stub;
  grpc::ClientContext context;
  grpc::health::v1::HealthCheckRequest request;
  HealthCheckResponse response;
  absl::Mutex mu;
  bool finished ABSL_GUARDED_BY(mu) = false;
};

HealthCheck::HealthCheck(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<HealthCheck> HealthCheck::start(std::string_view target, std::string_view task_name,
                                                absl::Time deadline,
                                                std::function<void(absl::Status)> done,
                                                const ChannelOptions& options) {
  auto state = std::make_unique<State>();
  state->target = std::string(target);
  state->task_name = std::string(task_name);
  state->done = std::move(done);
  state->stub = grpc::health::v1::Health::NewStub(create_channel(target, options));
  configure_context(state->context, deadline, /*wait_for_ready=*/true);
  State* raw = state.get();
  // The callback only borrows the state: the handle's destructor waits for
  // `finished` (the callback's last access) and then frees it on its own
  // thread. gRPC requires the buffers to live until the callback runs.
  // gRPC runs the callback after the call completed, possibly on another
  // thread, ordered by its own synchronization (invisible to TSan).
  tsan_release(raw);
  raw->stub->async()->Check(
      &raw->context, &raw->request, &raw->response, [raw](grpc::Status status) {
        tsan_acquire(raw);
        raw->done(health_check_result(status, raw->response, raw->target, raw->task_name));
        absl::MutexLock lock(&raw->mu);
        raw->finished = true;
      });
  return std::unique_ptr<HealthCheck>(new HealthCheck(std::move(state)));
}

void HealthCheck::cancel() { state_->context.TryCancel(); }

HealthCheck::~HealthCheck() {
  cancel();
  absl::MutexLock lock(&state_->mu);
  state_->mu.Await(absl::Condition(&state_->finished));
}

}  // namespace psflow::internal
