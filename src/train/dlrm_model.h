// The `dlrm` model of `psflow train` (internal): a DLRM-style click-through
// model (Naumov et al. 2019) over the 13 integer and 26 categorical
// features of Criteo data.
//
//   dense [B, 13] (log1p of the counts) -> bottom MLP (ReLU) -> z [B, d]
//   keys [B, 26] -> one dynamic embedding table on the ps -> e [B, 26, d]
//   dot interactions: the 351 pairwise dot products of {z, e_1 .. e_26}
//   [z, dots] [B, d + 351] -> top MLP (ReLU, last layer linear) -> logit
//   sigmoid + binary cross-entropy
//
// The categorical features share one table: the reader hashes each key
// with its feature's index (data/criteo_reader.h), so equal values in
// different columns have rows of their own. The dense layers are ordinary
// variables; the table is a DynamicEmbedding whose handle travels in the
// spec.
#ifndef PSFLOW_TRAIN_DLRM_MODEL_H_
#define PSFLOW_TRAIN_DLRM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"

namespace psflow::internal {

inline constexpr int64_t kDlrmDenseFeatures = 13;
inline constexpr int64_t kDlrmSparseFeatures = 26;

// The shape of a dlrm model, and its table. Thread-safety: a value type.
struct DlrmSpec {
  int64_t embedding_dim = 16;
  std::vector<int64_t> bottom = {64, 16};  // the last is embedding_dim
  std::vector<int64_t> top = {128, 64};    // then a 1-unit output layer
  // DynamicEmbedding::handle() of the table; empty in a spec made before
  // the table exists.
  Structure table;

  // Dense parameters: bottom (kernel, bias) pairs, then top pairs ending
  // in the [*, 1] output layer.
  [[nodiscard]] std::vector<Shape> parameter_shapes() const;
  [[nodiscard]] std::vector<std::string> parameter_names() const;
  // Width of the top MLP's input: d + 27 * 26 / 2.
  [[nodiscard]] int64_t interaction_width() const;
  [[nodiscard]] Structure to_structure() const;
  // Validates (it crossed the network): sizes in range, the bottom MLP
  // ending in embedding_dim.
  [[nodiscard]] static absl::StatusOr<DlrmSpec> from_structure(const Structure& s);
};

// Initial dense parameters: Glorot-uniform kernels, zero biases.
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> initial_dlrm_parameters(const DlrmSpec& spec,
                                                                          uint64_t seed);

// One batch, with the rows of its distinct keys already pulled.
// Thread-safety: a value type.
struct DlrmBatch {
  Tensor dense;   // float32 [B, 13]
  Tensor index;   // int64 [B, 26]: positions into rows
  Tensor rows;    // float32 [U, d]: the table's rows of the distinct keys
  Tensor labels;  // float32 [B]
};

// Results of one forward/backward pass. Thread-safety: a value type.
struct DlrmGradients {
  double loss = 0.0;          // batch mean
  Tensor probabilities;       // [B, 1]
  std::vector<Tensor> dense;  // one per dense parameter
  Tensor rows;                // float32 [U, d]: d loss / d rows
};

[[nodiscard]] absl::StatusOr<Tensor> dlrm_logits(const DlrmSpec& spec,
                                                 const std::vector<Tensor>& params,
                                                 const DlrmBatch& batch);
[[nodiscard]] absl::StatusOr<DlrmGradients> dlrm_forward_backward(const DlrmSpec& spec,
                                                                  const std::vector<Tensor>& params,
                                                                  const DlrmBatch& batch);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DLRM_MODEL_H_
