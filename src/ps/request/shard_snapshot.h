// One variable shard's whole state, as SNAPSHOT reads it and RESTORE
// installs it: what a checkpoint holds of the shard.
#ifndef PSFLOW_PS_REQUEST_SHARD_SNAPSHOT_H_
#define PSFLOW_PS_REQUEST_SHARD_SNAPSHOT_H_

#include "optimizer/optimizer.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Thread-safety: a value type.
struct ShardSnapshot {
  Tensor value;
  OptimizerSlots slots;
};

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_SHARD_SNAPSHOT_H_
