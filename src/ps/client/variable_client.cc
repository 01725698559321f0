#include "ps/client/variable_client.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/notification.h"
#include "ps/request/execute_batch.h"
#include "ps/request/snapshot_results.h"
#include "ps/request/update_key.h"
#include "tensor/codec.h"

namespace psflow::internal {

absl::StatusOr<std::vector<Tensor>> VariableClient::execute_batch(ExecuteBatch batch,
                                                                  absl::Time deadline) {
  absl::Notification done;
  absl::StatusOr<std::vector<Tensor>> out;
  execute_batch_async(std::move(batch), deadline, [&](absl::StatusOr<std::vector<Tensor>> r) {
    out = std::move(r);
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

std::vector<absl::StatusOr<std::vector<Tensor>>> execute_batches_parallel(
    const std::vector<VariableClient*>& clients, std::vector<ExecuteBatch> batches,
    absl::Time deadline, internal::UpdateKeys* update_keys) {
  // An update of a scheduled closure gets one key for all its tasks (each
  // ps dedups its own share), so a retried closure's updates apply once.
  // Reads consume no key.
  const bool updates =
      update_keys != nullptr &&
      std::any_of(batches.begin(), batches.end(), [](const ExecuteBatch& b) {
        return std::any_of(b.ops.begin(), b.ops.end(),
                           [](const VariableOpArgs& op) { return is_mutating(op.kind); });
      });
  if (updates) {
    const UpdateKey key = update_keys->next();
    for (ExecuteBatch& b : batches) {
      if (!b.update_key.has_value()) b.update_key = key;
    }
  }
  std::vector<absl::StatusOr<std::vector<Tensor>>> results(batches.size(), std::vector<Tensor>());
  std::vector<size_t> todo;
  for (size_t i = 0; i < batches.size() && i < clients.size(); ++i) {
    if (clients[i] != nullptr && !batches[i].ops.empty()) todo.push_back(i);
  }
  absl::BlockingCounter pending(static_cast<int>(todo.size()));
  for (size_t i : todo) {
    clients[i]->execute_batch_async(std::move(batches[i]), deadline,
                                    [&results, &pending, i](absl::StatusOr<std::vector<Tensor>> r) {
                                      results[i] = std::move(r);
                                      pending.DecrementCount();
                                    });
  }
  pending.Wait();
  return results;
}

}  // namespace psflow::internal
