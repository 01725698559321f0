// The ExecutorService's per-worker objects: their release (DisposePerWorker)
// and their counts (GetExecutorStats). See executor_service.h.
#include <string>
#include <vector>

#include "rpc/grpc_status.h"
#include "rpc/parsed_call.h"
#include "worker/executor_service.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {

grpc::ServerUnaryReactor* ExecutorServiceImpl::DisposePerWorker(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* raw_request,
    grpc::ByteBuffer* raw_response) {
  if (absl::StatusOr<PeerIdentity> caller =
          authorize_call(*context, Method::kWorkerDisposePerWorker);
      !caller.ok()) {
    return status_->refuse(context, "DisposePerWorker", caller.status());
  }
  grpc::ServerUnaryReactor* reactor = nullptr;
  auto* call = parse_call<v1::DisposePerWorkerRequest, v1::DisposePerWorkerResponse>(
      *raw_request, raw_response, &reactor);
  if (call == nullptr) return reactor;
  const v1::DisposePerWorkerRequest* request = &call->request();
  v1::DisposePerWorkerResponse* response = &call->response();
  const std::vector<std::string> ids(request->ids().begin(), request->ids().end());
  // Validated whole before anything is released.
  if (absl::Status valid = validate_per_worker_ids(ids); !valid.ok()) {
    call->finish(to_grpc_status(valid));
    return reactor;
  }
  response->set_released(release_per_worker_objects(resources_, ids));
  call->finish(grpc::Status::OK);
  return reactor;
}

void ExecutorServiceImpl::fill_per_worker_stats(v1::GetExecutorStatsResponse& response) const {
  const PerWorkerObjectCounts counts = count_per_worker_objects(resources_);
  response.set_per_worker_iterators(counts.iterators);
  response.set_per_worker_resources(counts.resources);
}

}  // namespace psflow::internal
