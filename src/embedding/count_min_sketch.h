// Counts of keys that have no row yet, in bounded memory.
#ifndef PSFLOW_EMBEDDING_COUNT_MIN_SKETCH_H_
#define PSFLOW_EMBEDDING_COUNT_MIN_SKETCH_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace psflow::internal {

// A count-min sketch of kDepth rows of `width` saturating 16-bit counters
// (2 * kDepth * width bytes), with conservative update: add() raises only
// the counters at the key's current minimum. count() is never below the
// true number of add()s of the key (up to 65535, where counters saturate);
// it is above only when every one of the key's kDepth counters is shared
// with other keys, which for n distinct keys happens with probability
// about (n / width)^kDepth per key.
// Thread-safety: not thread-safe; the owning table's lock guards it.
class CountMinSketch {
 public:
  static constexpr int kDepth = 4;
  static constexpr uint32_t kMaxCount = 0xFFFF;

  // `width` is rounded up to a power of two (at least 64).
  explicit CountMinSketch(int64_t width);

  // Counts one more sighting of `key`; returns its count after it.
  uint32_t add(int64_t key);
  [[nodiscard]] uint32_t count(int64_t key) const;
  [[nodiscard]] size_t bytes() const { return counters_.size() * sizeof(uint16_t); }

 private:
  [[nodiscard]] size_t index(int row, int64_t key) const;

  uint64_t mask_;
  std::vector<uint16_t> counters_;  // kDepth rows of mask_ + 1
};

}  // namespace psflow::internal

#endif  // PSFLOW_EMBEDDING_COUNT_MIN_SKETCH_H_
