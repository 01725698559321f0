#include "strategy/request_batch.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/logging.h"

namespace psflow::internal {

VariableOpArgs make_op(v1::VariableOp::Kind kind, const VariableState& part) {
  VariableOpArgs op;
  op.kind = kind;
  op.variable = part.name;
  return op;
}

RequestBatch::Group& RequestBatch::group(const VariableState& part) {
  PSFLOW_CHECK(part.client != nullptr, "variable '", part.name, "' has no client");
  timeout_ = std::max(timeout_, part.timeout);
  if (update_keys_ == nullptr) update_keys_ = part.update_keys;
  auto [it, inserted] = by_client_.try_emplace(part.client.get(), groups_.size());
  if (inserted) {
    groups_.emplace_back();
    groups_.back().client = part.client;
  }
  return groups_[it->second];
}

int RequestBatch::add(const VariableState& part, VariableOpArgs op) {
  Group& g = group(part);
  int slot = -1;
  if (op.kind == v1::VariableOp::READ || op.kind == v1::VariableOp::GATHER) {
    slot = num_results_++;
    g.result_slots.push_back(slot);
  }
  g.batch.ops.push_back(std::move(op));
  return slot;
}

int RequestBatch::optimizer_index(const VariableState& part, const OptimizerConfig& config) {
  Group& g = group(part);
  if (g.optimizer < 0) {
    g.optimizer = static_cast<int>(g.batch.optimizers.size());
    g.batch.optimizers.push_back(config);
  }
  return g.optimizer;
}

absl::StatusOr<std::vector<Tensor>> RequestBatch::run() {
  std::vector<VariableClient*> clients;
  std::vector<ExecuteBatch> batches;
  clients.reserve(groups_.size());
  batches.reserve(groups_.size());
  for (Group& g : groups_) {
    clients.push_back(g.client.get());
    batches.push_back(std::move(g.batch));
  }
  std::vector<absl::StatusOr<std::vector<Tensor>>> responses = execute_batches_parallel(
      clients, std::move(batches), absl::Now() + timeout_, update_keys_.get());

  absl::Status first_error;
  int failed = 0;
  for (const auto& r : responses) {
    if (r.ok()) continue;
    if (failed++ == 0) first_error = r.status();
  }
  if (failed > 0) {
    if (failed == 1) return first_error;
    return absl::Status(first_error.code(),
                        absl::StrCat(first_error.message(), " (and ", failed - 1,
                                     " more task(s) failed in the same batch)"));
  }

  std::vector<Tensor> results(static_cast<size_t>(num_results_));
  for (size_t i = 0; i < groups_.size(); ++i) {
    std::vector<Tensor>& got = *responses[i];
    const std::vector<int>& slots = groups_[i].result_slots;
    if (got.size() != slots.size()) {
      return absl::InternalError(absl::StrCat(groups_[i].client->task_name(), " answered ",
                                              got.size(), " results for ", slots.size(),
                                              " reads; client and task disagree on the protocol"));
    }
    for (size_t j = 0; j < slots.size(); ++j) {
      results[static_cast<size_t>(slots[j])] = std::move(got[j]);
    }
  }
  return results;
}

}  // namespace psflow::internal
