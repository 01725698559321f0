#include "strategy/placement.h"

#include "base/logging.h"

namespace psflow::internal {
namespace {

// TF's MinSizePartitioner default for strings, whose size is unknown
// until they are written.
constexpr int64_t kBytesPerString = 16;

}  // namespace

int64_t part_bytes(DType dtype, const Shape& shape, int64_t rows) {
  const int64_t element =
      dtype == DType::kString ? kBytesPerString : static_cast<int64_t>(dtype_size(dtype));
  if (shape.empty()) return element;
  int64_t per_row = element;
  for (size_t i = 1; i < shape.size(); ++i) per_row *= shape[i];
  return per_row * rows;
}

std::vector<int> place_parts(VariablePlacement placement, const std::vector<int64_t>& bytes,
                             PsLoad& load) {
  const auto n = static_cast<int>(load.bytes.size());
  PSFLOW_CHECK(n >= 1, "placement needs at least one ps task");
  std::vector<int> tasks;
  tasks.reserve(bytes.size());
  // Tasks taken by this variable in the current round of n parts.
  std::vector<bool> taken(static_cast<size_t>(n), false);
  for (size_t i = 0; i < bytes.size(); ++i) {
    int task = 0;
    if (placement == VariablePlacement::kRoundRobin) {
      task = static_cast<int>(load.variable_count % n);
    } else {
      if (i % static_cast<size_t>(n) == 0) taken.assign(static_cast<size_t>(n), false);
      task = -1;
      for (int t = 0; t < n; ++t) {
        if (taken[static_cast<size_t>(t)]) continue;
        if (task < 0 ||
            load.bytes[static_cast<size_t>(t)] < load.bytes[static_cast<size_t>(task)]) {
          task = t;
        }
      }
      taken[static_cast<size_t>(task)] = true;
    }
    ++load.variable_count;
    load.bytes[static_cast<size_t>(task)] += bytes[i];
    tasks.push_back(task);
  }
  return tasks;
}

}  // namespace psflow::internal
