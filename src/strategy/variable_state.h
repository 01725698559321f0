// What a Variable / ShardedVariable handle refers to, for the strategy
// layer's own code (the public headers only forward-declare these).
#ifndef PSFLOW_STRATEGY_VARIABLE_STATE_H_
#define PSFLOW_STRATEGY_VARIABLE_STATE_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "ps/client/variable_client.h"
#include "psflow/variable.h"
#include "psflow/variable_policy.h"
#include "strategy/shard_layout.h"
#include "tensor/buffer_pool.h"

namespace psflow::internal {

// What VariableOptions said about replica updates (see variable_policy.h);
// every part of a variable carries its container's.
struct VariablePolicy {
  VariableAggregation aggregation = VariableAggregation::kNone;
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  bool trainable = true;
  // VariableOptions::wire_dtype as resolved at creation.
  WireDType wire_dtype = WireDType::kFloat32;
};

// One stored variable: where it is and how to reach it.
// Thread-safety: immutable after construction.
struct VariableState {
  std::string name;  // stored name
  DType dtype = DType::kInvalid;
  Shape shape;
  std::string job;  // "ps" or "chief"
  int task = 0;
  std::string device;  // "/job:ps/replica:0/task:1/device:CPU:0"
  std::shared_ptr<VariableClient> client;
  absl::Duration timeout = kDefaultVariableTimeout;
  VariablePolicy policy;
  // The keys of the scheduled closure this handle was bound to
  // (WorkerContext::variable / bind); null elsewhere. Updates made through
  // the handle carry them, so that a retried closure's updates apply once.
  std::shared_ptr<UpdateKeys> update_keys;
  // The ShardedVariable of two or more parts this handle is a part of (its
  // name), as its variables() give it; empty for a variable on its own.
  // TF's SaveSliceInfo: such a part cannot go into another ShardedVariable.
  std::string sharded_container;
};

// A ShardedVariable's parts and their row layout.
// Thread-safety: immutable after construction.
struct ShardedState {
  std::string name;
  DType dtype = DType::kInvalid;
  Shape shape;
  std::vector<Variable> parts;
  ShardLayout layout;
  VariablePolicy policy;
  // Where read_values lands this variable's pulls, reused across steps
  // (tensor/buffer_pool.h); shared by the copies of the handle.
  std::shared_ptr<BufferPool> receive = std::make_shared<BufferPool>();
};

// The handles' private parts, for this layer's implementation.
// Thread-safety: stateless.
struct VariableAccess {
  static const VariableState& state(const Variable& v) { return *v.state_; }
  static const ShardedState& state(const ShardedVariable& v) { return *v.state_; }
  static Variable make(std::shared_ptr<const VariableState> state) {
    return Variable(std::move(state));
  }
  static ShardedVariable make(std::shared_ptr<const ShardedState> state) {
    return ShardedVariable(std::move(state));
  }
};

// "/job:ps/replica:0/task:1/device:CPU:0".
[[nodiscard]] std::string device_string(std::string_view job, int task);

// FAILED_PRECONDITION for a default-constructed handle, naming the type.
[[nodiscard]] absl::Status check_valid(const Variable& v);
[[nodiscard]] absl::Status check_valid(const ShardedVariable& v);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_VARIABLE_STATE_H_
