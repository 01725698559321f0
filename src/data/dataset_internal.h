// The node/iterator pair behind psflow::Dataset, shared by the dataset_*.cc
// files. A DatasetNode is the immutable description (one per source or
// transform, pointing at its input); make_iterator() builds the matching
// chain of IteratorBase objects for one pass.
#ifndef PSFLOW_DATA_DATASET_INTERNAL_H_
#define PSFLOW_DATA_DATASET_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/dataset.h"
#include "psflow/structure.h"

namespace psflow::internal {

using NextResult = absl::StatusOr<std::optional<Structure>>;

// One pass. Thread-safety: not thread-safe (one consumer, as DatasetIterator).
class IteratorBase {
 public:
  virtual ~IteratorBase() = default;
  [[nodiscard]] virtual NextResult get_next() = 0;
};

// Thread-safety: immutable after construction (mutable counters are
// atomic), so make_iterator may run concurrently. Always held by a
// shared_ptr, so that iterators can keep their node alive.
class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  virtual ~DatasetNode() = default;
  [[nodiscard]] virtual std::unique_ptr<IteratorBase> make_iterator() const = 0;
  [[nodiscard]] virtual int64_t cardinality() const = 0;
  // Non-OK only for the error node that carries a deferred argument error.
  [[nodiscard]] virtual absl::Status status() const { return absl::OkStatus(); }
};

using NodePtr = std::shared_ptr<const DatasetNode>;

// INVALID_ARGUMENT "Dataset.<op>: <arg> must be <allowed>, got <value>".
[[nodiscard]] absl::Status argument_error(std::string_view op, std::string_view arg, int64_t value,
                                          std::string_view allowed);

// Moves elements of *input into *buffer until it holds `size` of them or
// the input ends (then *input is reset, releasing it and any prefetch
// thread early). An input error is returned at once; the elements gathered
// so far stay in *buffer, so that the next call resumes the fill.
[[nodiscard]] absl::Status fill_buffer(std::unique_ptr<IteratorBase>* input, size_t size,
                                       std::vector<Structure>* buffer);

// Every iterator returns `status` on every call; cardinality is unknown.
[[nodiscard]] NodePtr make_error_node(absl::Status status);

// Sources (dataset_sources.cc). from_tensor_slices validates and returns an
// error node on bad components.
[[nodiscard]] NodePtr make_tensor_slices_node(const Structure& components);
[[nodiscard]] NodePtr make_tensors_node(Structure components);
[[nodiscard]] NodePtr make_range_node(int64_t start, int64_t stop, int64_t step);
[[nodiscard]] NodePtr make_generator_node(std::function<Dataset::Generator()> make_generator);

// Transforms; arguments are already validated by Dataset.
[[nodiscard]] NodePtr make_shuffle_node(NodePtr input, int64_t buffer_size,
                                        std::optional<uint64_t> seed,
                                        bool reshuffle_each_iteration);
[[nodiscard]] NodePtr make_repeat_node(NodePtr input, int64_t count);
[[nodiscard]] NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder);
[[nodiscard]] NodePtr make_map_node(NodePtr input, Dataset::MapFn fn);
[[nodiscard]] NodePtr make_filter_node(NodePtr input, Dataset::Predicate predicate);
[[nodiscard]] NodePtr make_shard_node(NodePtr input, int64_t num_shards, int64_t index);
[[nodiscard]] NodePtr make_take_node(NodePtr input, int64_t count);
[[nodiscard]] NodePtr make_skip_node(NodePtr input, int64_t count);
[[nodiscard]] NodePtr make_prefetch_node(NodePtr input, int64_t buffer_size);

// Stacks `elements` (same nesting, leaf dtypes and shapes) along a new first
// axis (dataset_batch.cc); exposed for tests.
[[nodiscard]] absl::StatusOr<Structure> stack_elements(const std::vector<Structure>& elements);

}  // namespace psflow::internal

#endif  // PSFLOW_DATA_DATASET_INTERNAL_H_
