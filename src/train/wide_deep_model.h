// The `wide_deep` model of `psflow train` (internal): Wide & Deep over a
// bag of sparse ids plus dense features, for a binary task.
//
//   wide  = sum_l w_l * wide_table[id_l]            (embedding of dim 1:
//           + wide_bias                              one linear weight per id)
//   e     = sum_l w_l * deep_table[id_l] / sum_l w_l (embedding of dim D,
//                                                     weighted mean)
//   deep  = Dense(1)(ReLU(Dense(h_k)(... ReLU(Dense(h_1)([e, dense])))))
//   logit = wide + deep;   loss = sigmoid binary cross-entropy
//
// (w_l are the bag weights; 0 marks padding.) The two tables are the large
// parameters: a worker pulls only the rows of the ids its batch uses and
// pushes row-sparse gradients for them, so the model math below works on
// the *pulled rows* of the tables, with each id replaced by its position
// among them (nn::unique_ids gives both).
#ifndef PSFLOW_TRAIN_WIDE_DEEP_MODEL_H_
#define PSFLOW_TRAIN_WIDE_DEEP_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/nn.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"

namespace psflow::internal {

// Indices of the parameters in parameter order.
inline constexpr size_t kWideTable = 0;   // [V, 1]
inline constexpr size_t kWideBias = 1;    // [1]
inline constexpr size_t kDeepTable = 2;   // [V, D]
inline constexpr size_t kFirstDense = 3;  // then kernel, bias per deep layer

// Thread-safety: a value type.
struct WideDeepSpec {
  int64_t vocab_size = 100000;         // V: rows of both tables
  int64_t dense_features = 8;          // F
  int64_t embedding_dim = 16;          // D
  std::vector<int64_t> hidden = {64};  // the deep tower's ReLU layers

  // Wide table [V, 1], wide bias [1], deep table [V, D], then kernel
  // [in, out] and bias [out] per deep layer, the last one to 1 logit
  // (in of the first is D + F).
  [[nodiscard]] std::vector<Shape> parameter_shapes() const;
  // "wide/embedding", "wide/bias", "deep/embedding",
  // "deep/dense_<i>/kernel", "deep/dense_<i>/bias".
  [[nodiscard]] std::vector<std::string> parameter_names() const;
  [[nodiscard]] Structure to_structure() const;
  // Validates (it arrives over the network): bounded positive sizes.
  [[nodiscard]] static absl::StatusOr<WideDeepSpec> from_structure(const Structure& s);
};

// Initial values in parameter order: wide table and biases zero, deep
// table uniform in [-0.05, 0.05) (Keras's Embedding default) from `seed`,
// kernels Glorot-uniform from seed + 1 + layer.
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> initial_wide_deep_parameters(
    const WideDeepSpec& spec, uint64_t seed);

// Creates the parameters with create_variable() under the caller's
// strategy scope, whose partitioner shards them (the tables over the ps
// tasks), named as parameter_names().
[[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_wide_deep_variables(
    const WideDeepSpec& spec, uint64_t seed);

// What one step needs from the ps, in parameter order: the rows of
// `unique_ids` (int64 [U]) of both tables (embedding_lookup: one gather per
// shard) and every other parameter whole (read_values). The three reads
// run concurrently, so the step costs about one round trip to each ps.
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> pull_wide_deep_parameters(
    const std::vector<ShardedVariable>& variables, const Tensor& unique_ids);

// A batch with its ids replaced by positions into the pulled table rows.
// float tensors are float32 (training) or float64 (gradient checks), the
// dtype of the parameters. Thread-safety: a value type.
struct WideDeepBatch {
  Tensor dense;    // [B, F]
  Tensor index;    // int64 [B, L], positions into the pulled rows
  Tensor weights;  // [B, L], >= 0
  Tensor labels;   // [B], 0 or 1
};

// `params` in parameter order, except that params[kWideTable] [U, 1] and
// params[kDeepTable] [U, D] hold only the U pulled rows batch.index refers
// to. Returns the logits [B, 1].
[[nodiscard]] absl::StatusOr<Tensor> wide_deep_logits(const WideDeepSpec& spec,
                                                      const std::vector<Tensor>& params,
                                                      const WideDeepBatch& batch);

// One forward and backward pass. Thread-safety: a value type.
struct WideDeepStep {
  double loss = 0.0;     // mean over the batch
  Tensor probabilities;  // [B, 1]
  // Gradients of the pulled rows: indices are positions into them (distinct),
  // values [n, 1] and [n, D].
  nn::SparseGradient wide_rows;
  nn::SparseGradient deep_rows;
  // Dense gradients of every other parameter, in parameter order:
  // [kWideBias, kFirstDense, kFirstDense + 1, ...].
  std::vector<Tensor> dense;
};
[[nodiscard]] absl::StatusOr<WideDeepStep> wide_deep_forward_backward(
    const WideDeepSpec& spec, const std::vector<Tensor>& params, const WideDeepBatch& batch);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_WIDE_DEEP_MODEL_H_
