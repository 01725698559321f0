// Which ps task each part of a new variable goes to (internal): TF's
// round-robin counter, or the task holding the fewest bytes.
#ifndef PSFLOW_STRATEGY_PLACEMENT_H_
#define PSFLOW_STRATEGY_PLACEMENT_H_

#include <cstdint>
#include <vector>

#include "psflow/strategy.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// What a strategy has placed so far.
// Thread-safety: a value type; the strategy guards its own with its lock.
struct PsLoad {
  // TF's extended._variable_count: variables and shards placed so far
  // (both rules advance it; only kRoundRobin reads it).
  int64_t variable_count = 0;
  // Bytes of the variables placed on (or colocated onto) each ps task.
  std::vector<int64_t> bytes;
};

// Bytes one part of `rows` rows of a variable of `shape` and `dtype` holds:
// elements times the dtype's size, 16 per string (MinSizePartitioner's
// bytes_per_string). Counts what is created, not what strings grow to.
[[nodiscard]] int64_t part_bytes(DType dtype, const Shape& shape, int64_t rows);

// The tasks of a variable's parts (bytes of each, in part order), adding
// them to `load`:
//  * kRoundRobin: part i on (variable_count + i) % n, TF's rule;
//  * kFewestBytes: each part on the task holding the fewest bytes, ties to
//    the lowest index, among the tasks that no earlier part of this
//    variable took in the current round of n parts; so the parts of one
//    variable land on distinct tasks when there are at most n of them, and
//    any n consecutive parts on n distinct tasks otherwise.
// Deterministic: the same sequence of calls gives the same tasks.
// `load.bytes` has one entry per task (n >= 1).
[[nodiscard]] std::vector<int> place_parts(VariablePlacement placement,
                                           const std::vector<int64_t>& bytes, PsLoad& load);

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_PLACEMENT_H_
