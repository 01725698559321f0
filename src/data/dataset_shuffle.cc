// shuffle: tf.data's buffered shuffle with reproducible seeding.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "data/dataset_internal.h"

namespace psflow::internal {
namespace {

// SplitMix64's finaliser: spreads (seed, pass) into well-mixed engine seeds.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// A uniform index in [0, n). std::mt19937_64's output is fixed by the
// standard but std::uniform_int_distribution's is not, so this unbiased
// rejection step keeps seeded orders identical across standard libraries.
uint64_t uniform_index(std::mt19937_64& engine, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
  // Accepts with probability > 1/2 per draw, so the loop ends quickly.
  while (true) {
    const uint64_t r = engine();
    if (r >= threshold) return r % n;
  }
}

class ShuffleIterator final : public IteratorBase {
 public:
  ShuffleIterator(std::unique_ptr<IteratorBase> input, int64_t buffer_size, uint64_t engine_seed,
                  int64_t reserve)
      : input_(std::move(input)),
        buffer_size_(static_cast<size_t>(buffer_size)),
        engine_(engine_seed) {
    buffer_.reserve(static_cast<size_t>(reserve));
  }

  NextResult get_next() override {
    if (absl::Status s = fill_buffer(&input_, buffer_size_, &buffer_); !s.ok()) return s;
    if (buffer_.empty()) return std::nullopt;
    const size_t pick = static_cast<size_t>(uniform_index(engine_, buffer_.size()));
    std::optional<Structure> out(std::move(buffer_[pick]));
    // The freed slot takes the last element: with the refill at the next call
    // this is tf.data's "replace the emitted element" step.
    if (pick != buffer_.size() - 1) buffer_[pick] = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

 private:
  std::unique_ptr<IteratorBase> input_;  // null once exhausted
  size_t buffer_size_;
  std::mt19937_64 engine_;
  std::vector<Structure> buffer_;
};

class ShuffleNode final : public DatasetNode {
 public:
  ShuffleNode(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed,
              bool reshuffle_each_iteration)
      : input_(std::move(input)),
        buffer_size_(buffer_size),
        reshuffle_each_iteration_(reshuffle_each_iteration) {
    if (seed.has_value()) {
      seed_ = *seed;
    } else {
      // Drawn from the OS entropy source: differs per process and per
      // Dataset, so that unseeded workers read different orders.
      absl::BitGen entropy;
      seed_ = absl::Uniform<uint64_t>(entropy);
    }
  }

  std::unique_ptr<IteratorBase> make_iterator() const override {
    const uint64_t pass =
        reshuffle_each_iteration_ ? passes_.fetch_add(1, std::memory_order_relaxed) : 0;
    // Reserve what the buffer will hold, but never trust a huge buffer_size
    // (or an unknown input size) with an up-front allocation.
    const int64_t n = input_->cardinality();
    int64_t reserve = std::min<int64_t>(buffer_size_, 1 << 16);
    if (n >= 0) reserve = std::min(reserve, n);
    return std::make_unique<ShuffleIterator>(input_->make_iterator(), buffer_size_,
                                             mix(seed_ ^ mix(pass)), reserve);
  }
  int64_t cardinality() const override { return input_->cardinality(); }

 private:
  NodePtr input_;
  int64_t buffer_size_;
  bool reshuffle_each_iteration_;
  uint64_t seed_ = 0;
  // Passes started so far: pass k of a seeded Dataset always gets the same
  // order, in every process.
  mutable std::atomic<uint64_t> passes_{0};
};

}  // namespace

NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size, std::optional<uint64_t> seed,
                          bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed,
                                       reshuffle_each_iteration);
}

}  // namespace psflow::internal
