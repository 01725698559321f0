// The data of the `wide_deep` model of `psflow train` (internal): a
// deterministic synthetic click-through task, or the user's LIBSVM file.
//
// Every example is
//   dense    float32 [F]  dense features (F may be 0, as for LIBSVM data)
//   ids      int64   [L]  a bag of categorical ids in [0, V)
//   weights  float32 [L]  one weight per id, >= 0; 0 marks padding
//   label    float32      0 or 1
// and a split holds them stacked along a first axis of N examples.
//
// The synthetic generator ("generator", what an empty --data-dir trains on)
// is fully defined by its options, so every process regenerates the same
// examples bit for bit from a few integers (workers never receive data):
//
//   rng: std::mt19937_64 seeded with seed * 0x9E3779B97F4A7C15 + 0x5EED;
//     uniform(): the top 53 bits of one draw over 2^53, in [0, 1);
//     normal(): Box-Muller from two uniform() draws (cos branch only).
//   Hidden parameters, drawn first, in this order:
//     w[j]  = 0.5 * normal()                     j < F   (dense weights)
//     v[k]  = 0.4 * normal()                     k < V   (per-id weights)
//     bias  = -0.3;  c = 0.8                     (fixed)
//   Then train_examples + test_examples examples, one after another:
//     x[j]  = normal()                           j < F
//     for each of the L bag slots:
//       r   = floor((V + 1)^uniform()) - 1, clamped to [0, V)
//             (log-uniform rank: P(r) ~ 1 / (r + 1), Zipf-like with s = 1)
//       id  = (r * 2654435761) mod V             (spreads popular ids over
//                                                 all of [0, V), so every
//                                                 shard gets hot rows)
//       weight = 1
//     logit = bias + sum_j w[j] x[j] + c * x[0] * x[1] (when F >= 2)
//             + sum_l v[id_l]
//     label = uniform() < sigmoid(logit) ? 1 : 0
//   The first train_examples examples are the training split, the rest the
//   test split.
// With the defaults (V = 100,000, F = 8, L = 8, 200,000 train / 20,000
// test) about 47% of the labels are 1; the true logits rank the test set
// with an AUC of about 0.82 (the best any model can do; rare ids are seen
// too seldom to learn, so a trained model gets 0.76 to 0.78), a constant
// predictor has AUC 0.5, a model that only learns the dense features about
// 0.70, and a purely linear model misses the x[0] x[1] interaction that
// the deep part can learn.
//
// LIBSVM ("libsvm"): "label index:value ..." lines read with read_libsvm
// (1-based indices, as LIBSVM's tools write). Each feature index is an id
// into the embeddings (V = largest index + 1) and its value the id's weight
// (must be >= 0; 1 for binary features); L is the longest row, shorter rows
// are padded with weight 0. Labels must be 0/1 or -1/+1 (-1 becomes 0).
// There are no dense features. The test split is a second file when the
// path reads "train.svm,test.svm"; otherwise a fixed 10% of the rows chosen
// with the seed.
#ifndef PSFLOW_TRAIN_WIDE_DEEP_DATA_H_
#define PSFLOW_TRAIN_WIDE_DEEP_DATA_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// One split: N examples. Thread-safety: a value type (tensors share
// buffers as Tensors do).
struct WideDeepExamples {
  Tensor dense;    // float32 [N, F]
  Tensor ids;      // int64 [N, L]
  Tensor weights;  // float32 [N, L]
  Tensor labels;   // float32 [N]

  [[nodiscard]] int64_t size() const { return labels.valid() ? labels.dim(0) : 0; }
  // Rows [begin, end), sharing the buffers.
  [[nodiscard]] WideDeepExamples slice(int64_t begin, int64_t end) const;
  // (dense, ids, weights, labels), for Dataset::from_tensor_slices.
  [[nodiscard]] Structure to_structure() const;
};

// Thread-safety: a value type.
struct WideDeepData {
  WideDeepExamples train;
  WideDeepExamples test;
  int64_t vocab_size = 0;      // V
  int64_t dense_features = 0;  // F
  int64_t bag_size = 0;        // L
  std::string description;     // one line for the log
};

// The generator's options (see the top of this file). Thread-safety: a
// value type.
struct WideDeepGeneratorOptions {
  int64_t train_examples = 200000;
  int64_t test_examples = 20000;
  int64_t vocab_size = 100000;
  int64_t dense_features = 8;
  int64_t bag_size = 8;
  uint64_t seed = 0;

  // INVALID_ARGUMENT naming the option: sizes must be positive (F >= 0)
  // and bounded so the data fits in memory.
  [[nodiscard]] absl::Status validate() const;
};

[[nodiscard]] absl::StatusOr<WideDeepData> generate_wide_deep_data(
    const WideDeepGeneratorOptions& options);

// The true logit of each example of a generated split under the hidden
// parameters (for tests and the header's figures: the best possible AUC).
[[nodiscard]] absl::StatusOr<Tensor> wide_deep_oracle_logits(
    const WideDeepGeneratorOptions& options, const WideDeepExamples& examples);

// Reads LIBSVM data as described at the top of this file. `path` is one
// file, or "train,test"; `split_seed` picks the 10% test rows of one file.
[[nodiscard]] absl::StatusOr<WideDeepData> load_wide_deep_libsvm(const std::string& path,
                                                                 uint64_t split_seed);

// Where a run's data comes from, as it travels to workers (they rebuild the
// same data): {"source": "generator", "train_examples", "test_examples",
// "vocab_size", "dense_features", "bag_size", "seed"} or {"source":
// "libsvm", "path", "seed"}. Thread-safety: a value type.
struct WideDeepDataSource {
  bool generator = true;
  WideDeepGeneratorOptions generator_options;
  std::string path;   // libsvm only
  uint64_t seed = 0;  // libsvm only: the split's seed

  [[nodiscard]] Structure to_structure() const;
  // Validates: it crossed the network.
  [[nodiscard]] static absl::StatusOr<WideDeepDataSource> from_structure(const Structure& s);
};

// The data of `source`, built once per process and source and shared.
// Thread-safety: thread-safe.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const WideDeepData>> load_wide_deep_data(
    const WideDeepDataSource& source);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_WIDE_DEEP_DATA_H_
