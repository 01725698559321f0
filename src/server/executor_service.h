// The ExecutorService a worker task serves (GetStatus so far; the
// coordinator work adds function execution here).
#ifndef PSFLOW_SERVER_EXECUTOR_SERVICE_H_
#define PSFLOW_SERVER_EXECUTOR_SERVICE_H_

#include "psflow/v1/task.grpc.pb.h"
#include "server/task_status.h"

namespace psflow {

// Callback-API service: handlers run on gRPC's threads and must not block;
// long work belongs on an executor that finishes the reactor later.
// Thread-safety: handlers run concurrently; `status` is immutable.
class ExecutorServiceImpl final : public v1::ExecutorService::CallbackService {
 public:
  // `status` must outlive the service.
  explicit ExecutorServiceImpl(const TaskStatus* status) : status_(status) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const v1::GetStatusRequest* request,
                                      v1::GetStatusResponse* response) override;

 private:
  const TaskStatus* status_;
};

}  // namespace psflow

#endif  // PSFLOW_SERVER_EXECUTOR_SERVICE_H_
