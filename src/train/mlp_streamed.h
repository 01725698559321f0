// The classifier's forward and backward pass layer by layer (internal):
// each layer's parameters are waited for only when the forward pass
// reaches it, and each layer's gradients are handed on as soon as the
// backward pass produces them, so that reading and pushing them overlap
// with the computation of the other layers.
#ifndef PSFLOW_TRAIN_MLP_STREAMED_H_
#define PSFLOW_TRAIN_MLP_STREAMED_H_

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"
#include "train/mlp.h"

namespace psflow::internal {

// Where a streamed pass gets each layer's parameters and sends its
// gradients. Layer l's parameters are {kernel, bias}, parameters 2l and
// 2l + 1 of MlpSpec::parameter_shapes(). Thread-safety: a value type.
struct LayerStream {
  // Layer l's parameters; called once per layer, layer 0 first.
  std::function<absl::StatusOr<std::vector<Tensor>>(size_t layer)> parameters;
  // Layer l's gradients {d kernel, d bias}; called once per layer, the
  // last layer first. An error stops the pass and is its result.
  std::function<absl::Status(size_t layer, std::vector<Tensor> gradients)> gradients;
};

// The loss and predictions of a streamed pass. Thread-safety: a value type.
struct StreamedStep {
  double loss = 0.0;     // mean over the batch
  Tensor probabilities;  // [N, num_classes]
};

// mlp_forward_backward, the same arithmetic, through `stream`.
// INVALID_ARGUMENT when a layer's parameters are not the spec's shapes.
[[nodiscard]] absl::StatusOr<StreamedStep> mlp_forward_backward_streamed(const MlpSpec& spec,
                                                                         const Tensor& x,
                                                                         const Tensor& labels,
                                                                         const LayerStream& stream);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_MLP_STREAMED_H_
