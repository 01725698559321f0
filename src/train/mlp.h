// The feed-forward classifiers of `psflow train` (models `mlp` and
// `logreg`): Dense + ReLU layers, then a Dense layer to the class logits,
// trained with softmax cross-entropy (internal).
#ifndef PSFLOW_TRAIN_MLP_H_
#define PSFLOW_TRAIN_MLP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"

namespace psflow::internal {

// The shape of a classifier; `hidden` empty is logistic regression.
// Thread-safety: a value type.
struct MlpSpec {
  int64_t input_dim = 784;
  std::vector<int64_t> hidden = {256};
  int64_t num_classes = 10;

  // Kernel [in, out] then bias [out] for each layer, input to output.
  [[nodiscard]] std::vector<Shape> parameter_shapes() const;
  // "dense_<i>/kernel", "dense_<i>/bias" for each layer, in the same order.
  [[nodiscard]] std::vector<std::string> parameter_names() const;
  [[nodiscard]] Structure to_structure() const;
  // Validates (it arrives over the network): positive sizes, bounded.
  [[nodiscard]] static absl::StatusOr<MlpSpec> from_structure(const Structure& s);
};

// The initial parameters: kernels Glorot-uniform from `seed` (layer i uses
// seed + i), biases zero, in parameter_shapes() order.
[[nodiscard]] absl::StatusOr<std::vector<Tensor>> initial_mlp_parameters(const MlpSpec& spec,
                                                                         uint64_t seed);

// Creates the parameters with create_variable(), so the caller's strategy
// scope decides where they live: kernels Glorot-uniform from `seed`, biases
// zero; names "dense_<i>/kernel" and "dense_<i>/bias".
[[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_mlp_variables(const MlpSpec& spec,
                                                                                uint64_t seed);

// The logits [N, num_classes] for x [N, input_dim] (float32).
[[nodiscard]] absl::StatusOr<Tensor> mlp_logits(const MlpSpec& spec,
                                                const std::vector<Tensor>& params, const Tensor& x);

// One forward and backward pass. Thread-safety: a value type.
struct MlpStep {
  double loss = 0.0;              // mean over the batch
  std::vector<Tensor> gradients;  // one per parameter, in parameter order
  Tensor probabilities;           // [N, num_classes]
};
[[nodiscard]] absl::StatusOr<MlpStep> mlp_forward_backward(const MlpSpec& spec,
                                                           const std::vector<Tensor>& params,
                                                           const Tensor& x, const Tensor& labels);

// uint8 images [N, ...] -> float32 [N, prod(...)] scaled to [0, 1].
[[nodiscard]] Tensor flatten_images(const Tensor& images);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MLP_H_
