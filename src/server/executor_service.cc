#include "server/executor_service.h"

namespace psflow {

grpc::ServerUnaryReactor* ExecutorServiceImpl::GetStatus(grpc::CallbackServerContext* context,
                                                         const v1::GetStatusRequest* request,
                                                         v1::GetStatusResponse* response) {
  status_->fill(*response);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace psflow
