#include "ps/variable_client.h"

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "ps/execute.h"

namespace psflow {

absl::StatusOr<v1::ExecuteResponse> VariableClient::execute(v1::ExecuteRequest request,
                                                            absl::Time deadline) {
  absl::Notification done;
  absl::StatusOr<v1::ExecuteResponse> out;
  execute_async(std::move(request), deadline, [&](absl::StatusOr<v1::ExecuteResponse> r) {
    out = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

std::vector<absl::StatusOr<v1::ExecuteResponse>> execute_parallel(
    const std::vector<VariableClient*>& clients, std::vector<v1::ExecuteRequest> requests,
    absl::Time deadline) {
  std::vector<absl::StatusOr<v1::ExecuteResponse>> results(requests.size(),
                                                            v1::ExecuteResponse());
  std::vector<size_t> todo;
  for (size_t i = 0; i < requests.size() && i < clients.size(); ++i) {
    if (clients[i] != nullptr && requests[i].ops_size() > 0) todo.push_back(i);
  }
  absl::BlockingCounter pending(static_cast<int>(todo.size()));
  for (size_t i : todo) {
    clients[i]->execute_async(std::move(requests[i]), deadline,
                              [&results, &pending, i](absl::StatusOr<v1::ExecuteResponse> r) {
                                results[i] = std::move(r);
                                pending.DecrementCount();
                              });
  }
  pending.Wait();
  return results;
}

namespace {

// Thread-safety: the store is thread-safe; the client holds no other state.
class LocalVariableClient final : public VariableClient {
 public:
  LocalVariableClient(std::shared_ptr<VariableStore> store, std::string task_name)
      : store_(std::move(store)), task_name_(std::move(task_name)) {}

  const std::string& task_name() const override { return task_name_; }

  void execute_async(v1::ExecuteRequest request, absl::Time /*deadline*/,
                     Callback done) override {
    v1::ExecuteResponse response;
    absl::Status s = execute_variable_ops(*store_, request, &response);
    if (s.ok()) {
      done(std::move(response));
    } else {
      done(s);
    }
  }

 private:
  std::shared_ptr<VariableStore> store_;
  std::string task_name_;
};

}  // namespace

std::unique_ptr<VariableClient> make_local_variable_client(std::shared_ptr<VariableStore> store,
                                                           std::string task_name) {
  return std::make_unique<LocalVariableClient>(std::move(store), std::move(task_name));
}

}  // namespace psflow
