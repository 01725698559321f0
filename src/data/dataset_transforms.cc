// Element-wise and positional transforms: repeat, map, filter, shard, take,
// skip.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "data/dataset_internal.h"

namespace psflow::internal {
namespace {

// A node over one input with one count (repeat, take, skip).
// Thread-safety: immutable.
class CountedNode : public DatasetNode {
 public:
  CountedNode(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

 protected:
  const NodePtr input_;
  const int64_t count_;
};

// A node that applies a user function to its input's elements (map,
// filter): every iterator gets the input's iterator and shares the function.
// Thread-safety: immutable.
template <typename Iterator, typename Fn>
class FunctionNode : public DatasetNode {
 public:
  FunctionNode(NodePtr input, Fn fn)
      : input_(std::move(input)), fn_(std::make_shared<const Fn>(std::move(fn))) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<Iterator>(input_->make_iterator(), fn_);
  }

 protected:
  const NodePtr input_;
  const std::shared_ptr<const Fn> fn_;
};

// ---- repeat ----

class RepeatIterator final : public IteratorBase {
 public:
  RepeatIterator(NodePtr input, int64_t count) : input_(std::move(input)), count_(count) {}

  NextResult get_next() override {
    // Each turn either returns or finishes an epoch; an epoch without any
    // element ends the pass, so this cannot spin.
    while (count_ < 0 || epoch_ < count_) {
      if (current_ == nullptr) {
        current_ = input_->make_iterator();
        epoch_had_element_ = false;
      }
      NextResult next = current_->get_next();
      if (!next.ok()) return next;
      if (next->has_value()) {
        epoch_had_element_ = true;
        return next;
      }
      current_.reset();
      ++epoch_;
      // Another pass over an input that just produced nothing would produce
      // nothing again (tf.data stops here too, instead of looping forever).
      if (!epoch_had_element_) break;
    }
    count_ = epoch_;  // stay at the end
    return std::nullopt;
  }

 private:
  NodePtr input_;
  int64_t count_;
  int64_t epoch_ = 0;
  bool epoch_had_element_ = false;
  std::unique_ptr<IteratorBase> current_;
};

class RepeatNode final : public CountedNode {
 public:
  using CountedNode::CountedNode;
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<RepeatIterator>(input_, count_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (n == kInfiniteCardinality || count_ < 0) {
      return n == kUnknownCardinality ? kUnknownCardinality : kInfiniteCardinality;
    }
    if (n == kUnknownCardinality) return kUnknownCardinality;
    int64_t total = 0;
    if (__builtin_mul_overflow(n, count_, &total)) return kUnknownCardinality;
    return total;
  }
};

// ---- map ----

class MapIterator final : public IteratorBase {
 public:
  MapIterator(std::unique_ptr<IteratorBase> input, std::shared_ptr<const Dataset::MapFn> fn)
      : input_(std::move(input)), fn_(std::move(fn)) {}
  NextResult get_next() override {
    NextResult next = input_->get_next();
    if (!next.ok() || !next->has_value()) return next;
    absl::StatusOr<Structure> mapped = (*fn_)(*std::move(*next));
    if (!mapped.ok()) return mapped.status();
    return std::optional<Structure>(*std::move(mapped));
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<const Dataset::MapFn> fn_;
};

class MapNode final : public FunctionNode<MapIterator, Dataset::MapFn> {
 public:
  using FunctionNode::FunctionNode;
  int64_t cardinality() const override { return input_->cardinality(); }
};

// ---- filter ----

class FilterIterator final : public IteratorBase {
 public:
  FilterIterator(std::unique_ptr<IteratorBase> input,
                 std::shared_ptr<const Dataset::Predicate> predicate)
      : input_(std::move(input)), predicate_(std::move(predicate)) {}
  NextResult get_next() override {
    // Bounded by the input: every turn consumes one input element.
    while (true) {
      NextResult next = input_->get_next();
      if (!next.ok() || !next->has_value()) return next;
      absl::StatusOr<bool> keep = (*predicate_)(**next);
      if (!keep.ok()) return keep.status();
      if (*keep) return next;
    }
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  std::shared_ptr<const Dataset::Predicate> predicate_;
};

class FilterNode final : public FunctionNode<FilterIterator, Dataset::Predicate> {
 public:
  using FunctionNode::FunctionNode;
  int64_t cardinality() const override { return kUnknownCardinality; }
};

// ---- shard ----

// Every input call is one position, errors included, so the partition of
// elements stays exact; errors are returned by every shard that meets them
// so that no worker misses a broken input.
class ShardIterator final : public IteratorBase {
 public:
  ShardIterator(std::unique_ptr<IteratorBase> input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  NextResult get_next() override {
    if (input_ == nullptr) return std::nullopt;
    // Bounded by the input: every turn consumes one input position.
    while (true) {
      const bool mine = position_ % num_shards_ == index_;
      NextResult next = input_->get_next();
      if (next.ok() && !next->has_value()) {
        input_.reset();
        return next;
      }
      ++position_;
      if (!next.ok() || mine) return next;
    }
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  int64_t num_shards_;
  int64_t index_;
  int64_t position_ = 0;
};

class ShardNode final : public DatasetNode {
 public:
  ShardNode(NodePtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<ShardIterator>(input_->make_iterator(), num_shards_, index_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n > index_ ? (n - index_ - 1) / num_shards_ + 1 : 0;
  }

 private:
  NodePtr input_;
  int64_t num_shards_;
  int64_t index_;
};

// ---- take ----

class TakeIterator final : public IteratorBase {
 public:
  TakeIterator(std::unique_ptr<IteratorBase> input, int64_t count)
      : input_(std::move(input)), remaining_(count) {}
  NextResult get_next() override {
    if (remaining_ == 0 || input_ == nullptr) {
      input_.reset();  // release the input (and any prefetch thread) early
      return std::nullopt;
    }
    NextResult next = input_->get_next();
    if (next.ok()) {
      if (next->has_value()) {
        if (remaining_ > 0) --remaining_;
      } else {
        input_.reset();
      }
    }
    return next;
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  int64_t remaining_;  // -1: unlimited
};

class TakeNode final : public CountedNode {
 public:
  using CountedNode::CountedNode;
  std::unique_ptr<IteratorBase> make_iterator() const override {
    // take(0) never starts its input.
    return std::make_unique<TakeIterator>(count_ == 0 ? nullptr : input_->make_iterator(), count_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n;
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return kUnknownCardinality;
    return std::min(n, count_);
  }
};

// ---- skip ----

class SkipIterator final : public IteratorBase {
 public:
  SkipIterator(std::unique_ptr<IteratorBase> input, int64_t count)
      : input_(std::move(input)), to_skip_(count) {}
  NextResult get_next() override {
    // Bounded by the input (or by to_skip_): each turn consumes one element.
    while (to_skip_ != 0) {
      NextResult next = input_->get_next();
      if (!next.ok() || !next->has_value()) return next;
      if (to_skip_ > 0) --to_skip_;
    }
    return input_->get_next();
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  int64_t to_skip_;  // -1: skip everything
};

class SkipNode final : public CountedNode {
 public:
  using CountedNode::CountedNode;
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<SkipIterator>(input_->make_iterator(), count_);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return count_ < 0 ? 0 : std::max<int64_t>(0, n - count_);
  }
};

}  // namespace

NodePtr make_repeat_node(NodePtr input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}
NodePtr make_map_node(NodePtr input, Dataset::MapFn fn) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn));
}
NodePtr make_filter_node(NodePtr input, Dataset::Predicate predicate) {
  return std::make_shared<FilterNode>(std::move(input), std::move(predicate));
}
NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardNode>(std::move(input), num_shards, index);
}
NodePtr make_take_node(NodePtr input, int64_t count) {
  return std::make_shared<TakeNode>(std::move(input), count);
}
NodePtr make_skip_node(NodePtr input, int64_t count) {
  return std::make_shared<SkipNode>(std::move(input), count);
}

}  // namespace psflow::internal
