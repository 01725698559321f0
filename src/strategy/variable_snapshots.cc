#include "strategy/variable_snapshots.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "ps/request/snapshot_results.h"
#include "psflow/status_macros.h"
#include "strategy/variable_state.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

// One ExecuteBatch per client, remembering which (variable, part) each op
// is for.
struct TaskBatches {
  std::vector<VariableClient*> clients;
  std::vector<std::shared_ptr<VariableClient>> owners;
  std::vector<ExecuteBatch> batches;
  std::vector<std::vector<std::pair<size_t, size_t>>> targets;
  absl::flat_hash_map<const VariableClient*, size_t> by_client;
  absl::Duration timeout = absl::ZeroDuration();

  void add(const VariableState& part, VariableOpArgs op, size_t variable, size_t index) {
    auto [it, inserted] = by_client.try_emplace(part.client.get(), clients.size());
    if (inserted) {
      clients.push_back(part.client.get());
      owners.push_back(part.client);
      batches.emplace_back();
      targets.emplace_back();
    }
    timeout = std::max(timeout, part.timeout);
    batches[it->second].ops.push_back(std::move(op));
    targets[it->second].emplace_back(variable, index);
  }

  std::vector<absl::StatusOr<std::vector<Tensor>>> run() {
    return execute_batches_parallel(clients, std::move(batches), absl::Now() + timeout);
  }
};

// The first failure among `responses`, noting how many tasks failed.
absl::Status first_failure(const std::vector<absl::StatusOr<std::vector<Tensor>>>& responses) {
  absl::Status first;
  int failed = 0;
  for (const auto& r : responses) {
    if (r.ok()) continue;
    if (failed++ == 0) first = r.status();
  }
  if (failed <= 1) return first;
  return absl::Status(first.code(),
                      absl::StrCat(first.message(), " (and ", failed - 1, " more task(s) failed)"));
}

}  // namespace

absl::StatusOr<std::vector<std::vector<ShardSnapshot>>> snapshot_variables(
    absl::Span<const ShardedVariable> variables) {
  std::vector<std::vector<ShardSnapshot>> out(variables.size());
  TaskBatches tasks;
  for (size_t i = 0; i < variables.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(check_valid(variables[i]));
    const std::vector<Variable>& parts = variables[i].variables();
    out[i].resize(parts.size());
    for (size_t j = 0; j < parts.size(); ++j) {
      const VariableState& part = VariableAccess::state(parts[j]);
      VariableOpArgs op;
      op.kind = Op::SNAPSHOT;
      op.variable = part.name;
      tasks.add(part, std::move(op), i, j);
    }
  }
  std::vector<absl::StatusOr<std::vector<Tensor>>> responses = tasks.run();
  PSFLOW_RETURN_IF_ERROR(first_failure(responses));
  for (size_t t = 0; t < responses.size(); ++t) {
    std::vector<Tensor>& results = *responses[t];
    size_t pos = 0;
    for (const auto& [i, j] : tasks.targets[t]) {
      const VariableState& part = VariableAccess::state(variables[i].variables()[j]);
      absl::StatusOr<ShardSnapshot> s = take_snapshot_results(results, &pos, part.name);
      if (!s.ok()) {
        return absl::Status(s.status().code(), absl::StrCat(tasks.clients[t]->task_name(), ": ",
                                                            s.status().message()));
      }
      if (s->value.dtype() != part.dtype || s->value.shape() != part.shape) {
        return absl::FailedPreconditionError(
            absl::StrCat("variable '", part.name, "' on ", tasks.clients[t]->task_name(), " is ",
                         av(dtype_name(s->value.dtype())), " ", shape_string(s->value.shape()),
                         " but this handle expects ", av(dtype_name(part.dtype)), " ",
                         shape_string(part.shape), "; it was replaced after the handle was made"));
      }
      out[i][j] = *std::move(s);
    }
    if (pos != results.size()) {
      return absl::InternalError(absl::StrCat(tasks.clients[t]->task_name(), " answered ",
                                              results.size(), " results; the snapshots used ", pos,
                                              "; client and task disagree on the protocol"));
    }
  }
  return out;
}

absl::Status restore_variables(absl::Span<const ShardedVariable> variables,
                               const std::vector<std::vector<ShardSnapshot>>& states) {
  if (states.size() != variables.size()) {
    return absl::InvalidArgumentError(absl::StrCat("restore_variables got ", states.size(),
                                                   " states for ", variables.size(), " variables"));
  }
  TaskBatches tasks;
  for (size_t i = 0; i < variables.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(check_valid(variables[i]));
    const std::vector<Variable>& parts = variables[i].variables();
    if (states[i].size() != parts.size()) {
      return absl::InvalidArgumentError(absl::StrCat("variable '", variables[i].name(), "' has ",
                                                     parts.size(), " parts but ", states[i].size(),
                                                     " states were given"));
    }
    for (size_t j = 0; j < parts.size(); ++j) {
      const VariableState& part = VariableAccess::state(parts[j]);
      VariableOpArgs op;
      op.kind = Op::RESTORE;
      op.variable = part.name;
      set_restore_state(states[i][j], &op);
      tasks.add(part, std::move(op), i, j);
    }
  }
  return first_failure(tasks.run());
}

}  // namespace psflow::internal
