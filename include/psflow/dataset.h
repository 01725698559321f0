// psflow::Dataset: tf.data-style input pipelines whose elements are
// Structures (nests of tensors and scalars).
//
//   Dataset ds = Dataset::from_tensor_slices(Structure::tuple({images, labels}))
//                    .shard(num_workers, worker_index)
//                    .shuffle(10000, /*seed=*/42)
//                    .repeat()
//                    .batch(128, /*drop_remainder=*/true)
//                    .prefetch(2);
//   PSFLOW_RETURN_IF_ERROR(ds.status());
//   DatasetIterator it = ds.make_iterator();
//   PSFLOW_ASSIGN_OR_RETURN(std::optional<Structure> batch, it.get_next());
#ifndef PSFLOW_DATASET_H_
#define PSFLOW_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/structure.h"

namespace psflow {

// cardinality() values that are not element counts, as tf.data's.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

namespace internal {
class DatasetNode;
class IteratorBase;
}  // namespace internal

// One pass over a Dataset. Move-only: a pass owns its position, its shuffle
// buffer and any prefetch thread, none of which can be shared.
//
// Thread-safety: not thread-safe; one consumer thread at a time (a prefetch
// thread inside is the iterator's own business).
class DatasetIterator {
 public:
  // An empty iterator: get_next() returns FAILED_PRECONDITION.
  DatasetIterator();
  // For Dataset::make_iterator.
  explicit DatasetIterator(std::unique_ptr<internal::IteratorBase> impl);
  DatasetIterator(DatasetIterator&&) noexcept;
  DatasetIterator& operator=(DatasetIterator&&) noexcept;
  DatasetIterator(const DatasetIterator&) = delete;
  DatasetIterator& operator=(const DatasetIterator&) = delete;
  // Stops and joins any prefetch thread, also when the pass is unfinished;
  // it waits at most for the one input element being produced.
  ~DatasetIterator();

  // The next element; std::nullopt once the pass is over (and on every call
  // after that). Errors of the pipeline come back in element order. After
  // an error the pass may be continued: map and filter move on to the next
  // input element, as in tf.data; argument errors (see Dataset) repeat.
  [[nodiscard]] absl::StatusOr<std::optional<Structure>> get_next();

 private:
  std::unique_ptr<internal::IteratorBase> impl_;
};

// An immutable description of a sequence of Structures; copies are cheap
// and share it, as tf.data.Dataset objects. Nothing runs until an iterator
// is made, and every make_iterator() starts a fresh, independent pass.
//
// Argument errors (batch_size <= 0, a shard index out of range, a negative
// buffer size, leaves of from_tensor_slices with different lengths, ...) are
// INVALID_ARGUMENT naming the argument, the bad value and the allowed range.
// They are deferred so that transforms chain: the Dataset records the first
// error, every later transform carries it along, status() reports it at
// once, and get_next() of any iterator returns it. Check status() after
// building a pipeline to fail before any data moves.
//
// Thread-safety: thread-safe; a Dataset may be copied, transformed and
// iterated from any number of threads at once.
class Dataset {
 public:
  // Returns the next value of a generator: nullopt ends the pass.
  using Generator = std::function<absl::StatusOr<std::optional<Structure>>()>;
  using MapFn = std::function<absl::StatusOr<Structure>(Structure)>;
  using Predicate = std::function<absl::StatusOr<bool>(const Structure&)>;

  // A Dataset whose status() is FAILED_PRECONDITION (it has no source);
  // exists so that Datasets can be declared before they are assigned.
  Dataset();

  // ---- Sources ----

  // Element i holds row i of every tensor leaf (leaf.slice(i, i + 1) without
  // its first axis: a view sharing the buffer, no copy), nested as
  // `components`. Every leaf must be a tensor of rank >= 1 and all leaves
  // must have the same first dimension, else INVALID_ARGUMENT naming the
  // leaf's path and both sizes.
  [[nodiscard]] static Dataset from_tensor_slices(Structure components);
  // A single element: `components` itself.
  [[nodiscard]] static Dataset from_tensors(Structure components);
  // Rank-0 int64 tensors start, start + step, ... up to but excluding stop,
  // as Python's range. step == 0 is INVALID_ARGUMENT.
  [[nodiscard]] static Dataset range(int64_t start, int64_t stop, int64_t step = 1);
  [[nodiscard]] static Dataset range(int64_t stop) { return range(0, stop); }
  // Elements produced by a generator. `make_generator` is called once per
  // pass, so that every pass (and every epoch under repeat) starts afresh;
  // it runs on the thread calling get_next() (or a prefetch thread).
  [[nodiscard]] static Dataset from_generator(std::function<Generator()> make_generator);

  // ---- Transforms ----

  // tf.data's buffered shuffle: fills a buffer of `buffer_size` elements and
  // emits a uniformly chosen one, replacing it with the next input element.
  // A full random permutation needs buffer_size >= the dataset size.
  // With a seed the order depends only on (seed, how many passes this
  // Dataset has started), so it is the same in every process; without one a
  // random seed is drawn per process so that workers differ. With
  // reshuffle_each_iteration every pass (every epoch under repeat) uses a new
  // order, else every pass repeats the first order. buffer_size >= 1.
  [[nodiscard]] Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                                bool reshuffle_each_iteration = true) const;
  // The input `count` times (-1: forever). Repeating forever over an empty
  // input ends at once rather than spinning. count >= -1.
  [[nodiscard]] Dataset repeat(int64_t count = -1) const;
  // Stacks `batch_size` consecutive elements leaf by leaf along a new first
  // axis into one contiguous tensor; Python-like scalars become 1-D tensors
  // (int -> int64, float -> float64, bool, string). All elements of a batch
  // must have the same nesting and leaf dtypes and shapes (else
  // INVALID_ARGUMENT naming the leaf). The last, smaller batch is emitted
  // unless drop_remainder. An input error is returned before the batch it
  // interrupts, which the next call completes. batch_size >= 1.
  [[nodiscard]] Dataset batch(int64_t batch_size, bool drop_remainder = false) const;
  // fn(element) for each element; an error from fn is returned for that
  // element and the pass goes on with the next.
  [[nodiscard]] Dataset map(MapFn fn) const;
  // Only the elements for which `predicate` is true.
  [[nodiscard]] Dataset filter(Predicate predicate) const;
  // Elements i with i % num_shards == index: the shards of all indices
  // partition the input exactly. Shard before shuffling so that each worker
  // reads a disjoint part. Input errors reach every shard, so that no
  // worker misses a broken input. num_shards >= 1, 0 <= index < num_shards.
  [[nodiscard]] Dataset shard(int64_t num_shards, int64_t index) const;
  // The first `count` elements (-1: all). count >= -1.
  [[nodiscard]] Dataset take(int64_t count) const;
  // All but the first `count` elements (-1: skip all). count >= -1.
  [[nodiscard]] Dataset skip(int64_t count) const;
  // Produces up to `buffer_size` elements ahead on a background thread, so
  // that input work overlaps the consumer's. 0 means no prefetching.
  // buffer_size >= 0.
  [[nodiscard]] Dataset prefetch(int64_t buffer_size) const;

  // ---- Inspection ----

  // Element count when known without iterating; kInfiniteCardinality or
  // kUnknownCardinality (e.g. after filter or from_generator) otherwise.
  [[nodiscard]] int64_t cardinality() const;
  // The first argument error of this pipeline, or OK.
  [[nodiscard]] absl::Status status() const;
  // A fresh pass from the first element.
  [[nodiscard]] DatasetIterator make_iterator() const;

 private:
  explicit Dataset(std::shared_ptr<const internal::DatasetNode> node);

  std::shared_ptr<const internal::DatasetNode> node_;
};

}  // namespace psflow

#endif  // PSFLOW_DATASET_H_
