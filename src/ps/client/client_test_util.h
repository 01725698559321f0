// For tests and benchmarks that build VariableService requests in their wire
// form: runs one through a client's batch path (the only request path) and
// answers in the wire form.
#ifndef PSFLOW_PS_CLIENT_CLIENT_TEST_UTIL_H_
#define PSFLOW_PS_CLIENT_CLIENT_TEST_UTIL_H_

#include <functional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "psflow/v1/variable.pb.h"
#include "tensor/codec.h"

namespace psflow::internal::testing {

using ProtoCallback = std::function<void(absl::StatusOr<v1::ExecuteResponse>)>;

// `done` gets the READ/GATHER results as a response, or the error
// (INVALID_ARGUMENT when `request` does not convert).
inline void execute_proto_async(VariableClient& client, v1::ExecuteRequest request,
                                absl::Time deadline, ProtoCallback done) {
  absl::StatusOr<ExecuteBatch> batch = batch_from_proto(request);
  if (!batch.ok()) {
    done(batch.status());
    return;
  }
  client.execute_batch_async(*std::move(batch), deadline,
                             [done = std::move(done)](absl::StatusOr<std::vector<Tensor>> results) {
                               if (!results.ok()) {
                                 done(results.status());
                                 return;
                               }
                               v1::ExecuteResponse response;
                               for (const Tensor& t : *results)
                                 tensor_to_proto(t, response.add_results());
                               done(std::move(response));
                             });
}

inline absl::StatusOr<v1::ExecuteResponse> execute_proto(VariableClient& client,
                                                         v1::ExecuteRequest request,
                                                         absl::Time deadline) {
  absl::Notification done;
  absl::StatusOr<v1::ExecuteResponse> out;
  execute_proto_async(client, std::move(request), deadline,
                      [&](absl::StatusOr<v1::ExecuteResponse> r) {
                        out = std::move(r);
                        done.Notify();
                      });
  done.WaitForNotification();
  return out;
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_PS_CLIENT_CLIENT_TEST_UTIL_H_
