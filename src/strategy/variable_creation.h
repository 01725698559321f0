// The steps of creating a variable that do not depend on where it goes:
// reading the initial value, the partition decision, per-part values and
// the CREATE requests.
#ifndef PSFLOW_STRATEGY_VARIABLE_CREATION_H_
#define PSFLOW_STRATEGY_VARIABLE_CREATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "ps/client/variable_client.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/variable_state.h"

namespace psflow::internal {

// An initial value: a tensor or a partition-aware initializer.
// Thread-safety: a view; the pointees must outlive it.
struct InitialValue {
  const Tensor* value = nullptr;
  const Initializer* init = nullptr;
  DType dtype = DType::kInvalid;
  Shape shape;
};

// Checks the value / initializer and reads its dtype and shape.
// INVALID_ARGUMENT for an invalid tensor or an initializer without a
// function, a valid dtype or a non-negative shape.
[[nodiscard]] absl::StatusOr<InitialValue> describe_initial_value(const Tensor* value,
                                                                  const Initializer* init);

// How a variable is split: rows per part, and whether it counts as
// partitioned (named "<name>/part_<i>"; TF also names a single part that
// way when the partitioner asked for several parts of a one-row variable).
struct PartitionPlan {
  std::vector<int64_t> sizes;
  bool partitioned = false;
};

// TF's partition decision (see ParameterServerStrategy::create_variable).
[[nodiscard]] absl::StatusOr<PartitionPlan> plan_partitions(const Partitioner& partitioner,
                                                            const Shape& shape, DType dtype,
                                                            const std::string& name);

// The policy VariableOptions ask for: INVALID_ARGUMENT, with TF's
// "Invalid variable aggregation mode: ... for variable: ..." (or
// synchronization), for a value outside the enums. trainable defaults to
// synchronization != kOnRead (TF's rule).
[[nodiscard]] absl::StatusOr<VariablePolicy> policy_of(const VariableOptions& options,
                                                       const std::string& name);

// Where one part goes.
struct PartTarget {
  std::string job;
  int task = 0;
  std::shared_ptr<VariableClient> client;
};

// Computes each part's initial value, sends one CREATE per part (one
// request per task, in parallel) and returns the variable. `targets` has
// one entry per part.
[[nodiscard]] absl::StatusOr<ShardedVariable> create_parts(const InitialValue& initial,
                                                           const std::string& name,
                                                           const PartitionPlan& plan,
                                                           const std::vector<PartTarget>& targets,
                                                           absl::Duration timeout,
                                                           const VariablePolicy& policy = {});

// The target of a colocated variable: `with`'s only part.
// INVALID_ARGUMENT for an empty or sharded `with`.
[[nodiscard]] absl::StatusOr<PartTarget> colocation_target(const ShardedVariable& with);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_VARIABLE_CREATION_H_
