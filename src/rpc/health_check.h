// Asynchronous grpc.health.v1 checks, for waiting on many tasks at once.
#ifndef PSFLOW_RPC_HEALTH_CHECK_H_
#define PSFLOW_RPC_HEALTH_CHECK_H_

#include <grpcpp/support/status.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.pb.h"
#include "rpc/channel.h"

namespace psflow::internal {

// Turns the outcome of a Check call into the status wait_for_healthy
// reports: OK only for SERVING; errors name the task and target.
[[nodiscard]] absl::Status health_check_result(
    const grpc::Status& status, const grpc::health::v1::HealthCheckResponse& response,
    std::string_view target, std::string_view task_name);

// One in-flight health check that waits (wait_for_ready) until the task at
// `target` answers SERVING or `deadline` passes; the asynchronous form of
// wait_for_healthy. `done` runs exactly once, on a gRPC thread, with the
// result (CANCELLED after cancel()).
// Thread-safety: cancel() may be called from any thread; the destructor
// cancels and blocks until `done` has returned, so it must not run inside
// `done` itself.
// The channel and call buffers belong to this handle, never to the gRPC
// callback: were the callback to drop the last channel reference, the
// channel would be torn down on gRPC's own callback thread, which gRPC
// 1.51 does not support (it aborts in grpc_cq_internal_unref).
class HealthCheck {
 public:
  [[nodiscard]] static std::unique_ptr<HealthCheck> start(std::string_view target,
                                                          std::string_view task_name,
                                                          absl::Time deadline,
                                                          std::function<void(absl::Status)> done,
                                                          const ChannelOptions& options = {});
  ~HealthCheck();
  HealthCheck(const HealthCheck&) = delete;
  HealthCheck& operator=(const HealthCheck&) = delete;

  void cancel();

 private:
  struct State;
  explicit HealthCheck(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_HEALTH_CHECK_H_
