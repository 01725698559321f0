#include "train/mlp_streamed.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

absl::Status check_layer(const std::vector<Shape>& shapes, size_t layer,
                         const std::vector<Tensor>& params) {
  if (params.size() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("layer ", layer, " needs 2 parameters (kernel, bias); got ", params.size()));
  }
  for (size_t j = 0; j < 2; ++j) {
    const Shape& want = shapes[2 * layer + j];
    if (params[j].dtype() != DType::kFloat32 || params[j].shape() != want) {
      return absl::InvalidArgumentError(absl::StrCat(
          "parameter ", 2 * layer + j, " should be float32 ", shape_string(want), "; got ",
          av(dtype_name(params[j].dtype())), " ", shape_string(params[j].shape())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<StreamedStep> mlp_forward_backward_streamed(const MlpSpec& spec, const Tensor& x,
                                                           const Tensor& labels,
                                                           const LayerStream& stream) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  const size_t num_layers = shapes.size() / 2;
  // kernels[l] is layer l's kernel (backward needs it for dx);
  // activations[l] the input of layer l (after ReLU for l > 0).
  std::vector<Tensor> kernels;
  std::vector<Tensor> activations = {x};
  Tensor logits;
  for (size_t l = 0; l < num_layers; ++l) {
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> p, stream.parameters(l));
    PSFLOW_RETURN_IF_ERROR(check_layer(shapes, l, p));
    PSFLOW_ASSIGN_OR_RETURN(Tensor z, nn::dense_forward(activations.back(), p[0], p[1]));
    kernels.push_back(std::move(p[0]));
    if (l + 1 == num_layers) {
      logits = std::move(z);
    } else {
      PSFLOW_ASSIGN_OR_RETURN(Tensor h, nn::relu(z));
      activations.push_back(std::move(h));
    }
  }
  PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sparse_softmax_cross_entropy(logits, labels));

  StreamedStep step;
  step.loss = loss.loss;
  step.probabilities = std::move(loss.probabilities);
  Tensor dy = std::move(loss.d_logits);
  for (size_t l = num_layers; l-- > 0;) {
    PSFLOW_ASSIGN_OR_RETURN(nn::DenseGradients g,
                            nn::dense_backward(activations[l], kernels[l], dy, l > 0));
    std::vector<Tensor> grads;
    grads.push_back(std::move(g.dw));
    grads.push_back(std::move(g.db));
    PSFLOW_RETURN_IF_ERROR(stream.gradients(l, std::move(grads)));
    if (l > 0) {
      PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(activations[l], g.dx));
    }
  }
  return step;
}

}  // namespace psflow::internal
