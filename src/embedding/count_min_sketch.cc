#include "embedding/count_min_sketch.h"

#include <algorithm>
#include <bit>

#include "embedding/key_hash.h"

namespace psflow::internal {

CountMinSketch::CountMinSketch(int64_t width)
    : mask_(std::bit_ceil(static_cast<uint64_t>(std::max<int64_t>(width, 64))) - 1),
      counters_(static_cast<size_t>(kDepth) * (mask_ + 1), 0) {}

size_t CountMinSketch::index(int row, int64_t key) const {
  // One independent hash per row: the key mixed with a per-row salt.
  const uint64_t h =
      splitmix64(static_cast<uint64_t>(key) ^ (0xC0FFEE0000000000ULL + static_cast<uint64_t>(row)));
  return static_cast<size_t>(row) * (mask_ + 1) + static_cast<size_t>(h & mask_);
}

uint32_t CountMinSketch::count(int64_t key) const {
  uint32_t least = kMaxCount;
  for (int r = 0; r < kDepth; ++r) least = std::min<uint32_t>(least, counters_[index(r, key)]);
  return least;
}

uint32_t CountMinSketch::add(int64_t key) {
  const uint32_t least = count(key);
  if (least == kMaxCount) return least;
  for (int r = 0; r < kDepth; ++r) {
    uint16_t& c = counters_[index(r, key)];
    if (c == least) c = static_cast<uint16_t>(least + 1);
  }
  return least + 1;
}

}  // namespace psflow::internal
