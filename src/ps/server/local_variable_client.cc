#include "ps/server/local_variable_client.h"

#include <utility>
#include <vector>

#include "ps/request/snapshot_results.h"
#include "ps/server/execute.h"

namespace psflow::internal {

namespace {

// Thread-safety: the store is thread-safe; the client holds no other state.
class LocalVariableClient final : public VariableClient {
 public:
  LocalVariableClient(std::shared_ptr<VariableStore> store, std::string task_name)
      : store_(std::move(store)), task_name_(std::move(task_name)) {}

  const std::string& task_name() const override { return task_name_; }

  void execute_batch_async(ExecuteBatch batch, absl::Time /*deadline*/,
                           BatchCallback done) override {
    std::vector<Tensor> results;
    absl::Status s = execute_variable_ops(*store_, batch, &results);
    if (!s.ok()) {
      done(s);
      return;
    }
    // READ results share the variables' buffers; the caller may write to
    // what it gets, so hand out copies of those.
    // (SNAPSHOT results are copies already.)
    size_t next = 0;
    for (const VariableOpArgs& op : batch.ops) {
      if (op.kind == v1::VariableOp::READ) results[next] = results[next].clone();
      next += op_result_count(op, results, next);
    }
    done(std::move(results));
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

}  // namespace psflow::internal
