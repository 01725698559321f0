// Dataset and DatasetIterator: argument checks, deferred errors, and the
// hand-off to the nodes in the other dataset_*.cc files.
#include "psflow/dataset.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "data/dataset_internal.h"

namespace psflow {

using internal::av;

namespace internal {
namespace {

class ErrorIterator final : public IteratorBase {
 public:
  explicit ErrorIterator(absl::Status status) : status_(std::move(status)) {}
  NextResult get_next() override { return status_; }

 private:
  absl::Status status_;
};

class ErrorNode final : public DatasetNode {
 public:
  explicit ErrorNode(absl::Status status) : status_(std::move(status)) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<ErrorIterator>(status_);
  }
  int64_t cardinality() const override { return kUnknownCardinality; }
  absl::Status status() const override { return status_; }

 private:
  absl::Status status_;
};

}  // namespace

absl::Status argument_error(std::string_view op, std::string_view arg, int64_t value,
                            std::string_view allowed) {
  return absl::InvalidArgumentError(
      absl::StrCat("Dataset.", av(op), ": ", av(arg), " must be ", av(allowed), ", got ", value));
}

absl::Status fill_buffer(std::unique_ptr<IteratorBase>* input, size_t size,
                         std::vector<Structure>* buffer) {
  while (*input != nullptr && buffer->size() < size) {
    NextResult next = (*input)->get_next();
    if (!next.ok()) return next.status();
    if (!next->has_value()) {
      input->reset();
      break;
    }
    buffer->push_back(*std::move(*next));
  }
  return absl::OkStatus();
}

NodePtr make_error_node(absl::Status status) {
  return std::make_shared<ErrorNode>(std::move(status));
}

}  // namespace internal

namespace {

// The node of take(count) or skip(count) (`op`): `make(input, count)`, or an
// error node unless count >= -1 (-1: all).
internal::NodePtr counted_node(std::string_view op, int64_t count, internal::NodePtr input,
                               internal::NodePtr (*make)(internal::NodePtr, int64_t)) {
  if (count < -1) {
    return internal::make_error_node(internal::argument_error(
        op, "count", count, absl::StrCat(">= 0, or -1 to ", av(op), " all")));
  }
  return make(std::move(input), count);
}

}  // namespace

// ---- DatasetIterator ----

DatasetIterator::DatasetIterator() = default;
DatasetIterator::DatasetIterator(std::unique_ptr<internal::IteratorBase> impl)
    : impl_(std::move(impl)) {}
DatasetIterator::DatasetIterator(DatasetIterator&&) noexcept = default;
DatasetIterator& DatasetIterator::operator=(DatasetIterator&&) noexcept = default;
DatasetIterator::~DatasetIterator() = default;

absl::StatusOr<std::optional<Structure>> DatasetIterator::get_next() {
  if (impl_ == nullptr) {
    return absl::FailedPreconditionError(
        "get_next() on an empty DatasetIterator (default-constructed or moved "
        "from); get one from Dataset::make_iterator()");
  }
  return impl_->get_next();
}

// ---- Dataset ----

Dataset::Dataset()
    : node_(internal::make_error_node(absl::FailedPreconditionError(
          "default-constructed Dataset has no source; create it with "
          "Dataset::from_tensor_slices, range, from_generator, ..."))) {}

Dataset::Dataset(std::shared_ptr<const internal::DatasetNode> node) : node_(std::move(node)) {}

Dataset Dataset::from_tensor_slices(Structure components) {
  return Dataset(internal::make_tensor_slices_node(components));
}

Dataset Dataset::from_tensors(Structure components) {
  return Dataset(internal::make_tensors_node(std::move(components)));
}

Dataset Dataset::range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) {
    return Dataset(
        internal::make_error_node(internal::argument_error("range", "step", step, "non-zero")));
  }
  return Dataset(internal::make_range_node(start, stop, step));
}

Dataset Dataset::from_generator(std::function<Generator()> make_generator) {
  if (!make_generator) {
    return Dataset(internal::make_error_node(absl::InvalidArgumentError(
        "Dataset.from_generator: make_generator is empty; pass a function "
        "returning a Generator")));
  }
  return Dataset(internal::make_generator_node(std::move(make_generator)));
}

Dataset Dataset::shuffle(int64_t buffer_size, std::optional<uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  if (!status().ok()) return *this;
  if (buffer_size < 1) {
    return Dataset(internal::make_error_node(
        internal::argument_error("shuffle", "buffer_size", buffer_size, ">= 1")));
  }
  return Dataset(internal::make_shuffle_node(node_, buffer_size, seed, reshuffle_each_iteration));
}

Dataset Dataset::repeat(int64_t count) const {
  if (!status().ok()) return *this;
  if (count < -1) {
    return Dataset(internal::make_error_node(
        internal::argument_error("repeat", "count", count, ">= 0, or -1 to repeat forever")));
  }
  return Dataset(internal::make_repeat_node(node_, count));
}

Dataset Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  if (!status().ok()) return *this;
  if (batch_size < 1) {
    return Dataset(internal::make_error_node(
        internal::argument_error("batch", "batch_size", batch_size, ">= 1")));
  }
  return Dataset(internal::make_batch_node(node_, batch_size, drop_remainder));
}

Dataset Dataset::map(MapFn fn) const {
  if (!status().ok()) return *this;
  if (!fn) {
    return Dataset(internal::make_error_node(
        absl::InvalidArgumentError("Dataset.map: fn is empty; pass a function Structure -> "
                                   "StatusOr<Structure>")));
  }
  return Dataset(internal::make_map_node(node_, std::move(fn)));
}

Dataset Dataset::filter(Predicate predicate) const {
  if (!status().ok()) return *this;
  if (!predicate) {
    return Dataset(internal::make_error_node(absl::InvalidArgumentError(
        "Dataset.filter: predicate is empty; pass a function const Structure& "
        "-> StatusOr<bool>")));
  }
  return Dataset(internal::make_filter_node(node_, std::move(predicate)));
}

Dataset Dataset::shard(int64_t num_shards, int64_t index) const {
  if (!status().ok()) return *this;
  if (num_shards < 1) {
    return Dataset(internal::make_error_node(
        internal::argument_error("shard", "num_shards", num_shards, ">= 1")));
  }
  if (index < 0 || index >= num_shards) {
    return Dataset(internal::make_error_node(internal::argument_error(
        "shard", "index", index, absl::StrCat("in [0, ", num_shards, ")"))));
  }
  return Dataset(internal::make_shard_node(node_, num_shards, index));
}

Dataset Dataset::take(int64_t count) const {
  if (!status().ok()) return *this;
  return Dataset(counted_node("take", count, node_, internal::make_take_node));
}

Dataset Dataset::skip(int64_t count) const {
  if (!status().ok()) return *this;
  return Dataset(counted_node("skip", count, node_, internal::make_skip_node));
}

Dataset Dataset::prefetch(int64_t buffer_size) const {
  if (!status().ok()) return *this;
  if (buffer_size < 0) {
    return Dataset(internal::make_error_node(internal::argument_error(
        "prefetch", "buffer_size", buffer_size, ">= 0 (0: no prefetching)")));
  }
  if (buffer_size == 0) return *this;
  return Dataset(internal::make_prefetch_node(node_, buffer_size));
}

int64_t Dataset::cardinality() const { return node_->cardinality(); }

absl::Status Dataset::status() const { return node_->status(); }

DatasetIterator Dataset::make_iterator() const { return DatasetIterator(node_->make_iterator()); }

}  // namespace psflow
