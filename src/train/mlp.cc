#include "train/mlp.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/closure_args.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr size_t kMaxLayers = 64;
constexpr ClosureArgs kSpecArgs{"model spec"};

absl::Status check_params(const MlpSpec& spec, const std::vector<Tensor>& params) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  if (params.size() != shapes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the model has ", shapes.size(), " parameters; got ", params.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (params[i].dtype() != DType::kFloat32 || params[i].shape() != shapes[i]) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameter ", i, " should be float32 ", shape_string(shapes[i]), "; got ",
                       av(dtype_name(params[i].dtype())), " ", shape_string(params[i].shape())));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> MlpSpec::parameter_names() const {
  std::vector<std::string> names;
  for (size_t i = 0; i < parameter_shapes().size(); ++i) {
    names.push_back(absl::StrCat("dense_", i / 2, i % 2 == 0 ? "/kernel" : "/bias"));
  }
  return names;
}

std::vector<Shape> MlpSpec::parameter_shapes() const {
  std::vector<Shape> shapes;
  int64_t in = input_dim;
  for (int64_t out : hidden) {
    shapes.push_back({in, out});
    shapes.push_back({out});
    in = out;
  }
  shapes.push_back({in, num_classes});
  shapes.push_back({num_classes});
  return shapes;
}

Structure MlpSpec::to_structure() const {
  Structure::Items layers;
  for (int64_t h : hidden) layers.push_back(Structure(h));
  return Structure::dict({{"input_dim", input_dim},
                          {"hidden", Structure::list(std::move(layers))},
                          {"num_classes", num_classes}});
}

absl::StatusOr<MlpSpec> MlpSpec::from_structure(const Structure& s) {
  MlpSpec spec;
  PSFLOW_ASSIGN_OR_RETURN(spec.input_dim, kSpecArgs.int_in_range(s, "input_dim", 1, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.num_classes, kSpecArgs.int_in_range(s, "num_classes", 1, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.hidden, kSpecArgs.int_list(s, "hidden", kMaxLayers, 1, kMaxDim));
  return spec;
}

absl::StatusOr<std::vector<Tensor>> initial_mlp_parameters(const MlpSpec& spec, uint64_t seed) {
  std::vector<Tensor> params;
  const std::vector<Shape> shapes = spec.parameter_shapes();
  for (size_t i = 0; i < shapes.size(); i += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor kernel, nn::glorot_uniform(shapes[i], seed + i / 2));
    PSFLOW_ASSIGN_OR_RETURN(Tensor bias, nn::zeros(shapes[i + 1]));
    params.push_back(std::move(kernel));
    params.push_back(std::move(bias));
  }
  return params;
}

absl::StatusOr<std::vector<ShardedVariable>> create_mlp_variables(const MlpSpec& spec,
                                                                  uint64_t seed) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> initial, initial_mlp_parameters(spec, seed));
  const std::vector<std::string> names = spec.parameter_names();
  std::vector<ShardedVariable> vars;
  for (size_t i = 0; i < initial.size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v,
                            create_variable(std::move(initial[i]), {.name = names[i]}));
    vars.push_back(std::move(v));
  }
  return vars;
}

absl::StatusOr<Tensor> mlp_logits(const MlpSpec& spec, const std::vector<Tensor>& params,
                                  const Tensor& x) {
  PSFLOW_RETURN_IF_ERROR(check_params(spec, params));
  Tensor h = x;
  for (size_t i = 0; i + 2 < params.size(); i += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor z, nn::dense_forward(h, params[i], params[i + 1]));
    PSFLOW_ASSIGN_OR_RETURN(h, nn::relu(z));
  }
  return nn::dense_forward(h, params[params.size() - 2], params.back());
}

absl::StatusOr<MlpStep> mlp_forward_backward(const MlpSpec& spec, const std::vector<Tensor>& params,
                                             const Tensor& x, const Tensor& labels) {
  PSFLOW_RETURN_IF_ERROR(check_params(spec, params));
  // activations[l] is the input of layer l (after ReLU for l > 0).
  std::vector<Tensor> activations = {x};
  const size_t num_layers = params.size() / 2;
  for (size_t l = 0; l + 1 < num_layers; ++l) {
    PSFLOW_ASSIGN_OR_RETURN(
        Tensor z, nn::dense_forward(activations.back(), params[2 * l], params[2 * l + 1]));
    PSFLOW_ASSIGN_OR_RETURN(Tensor h, nn::relu(z));
    activations.push_back(std::move(h));
  }
  PSFLOW_ASSIGN_OR_RETURN(
      Tensor logits,
      nn::dense_forward(activations.back(), params[params.size() - 2], params.back()));
  PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sparse_softmax_cross_entropy(logits, labels));

  MlpStep step;
  step.loss = loss.loss;
  step.probabilities = std::move(loss.probabilities);
  step.gradients.resize(params.size());
  Tensor dy = std::move(loss.d_logits);
  for (size_t l = num_layers; l-- > 0;) {
    PSFLOW_ASSIGN_OR_RETURN(nn::DenseGradients g,
                            nn::dense_backward(activations[l], params[2 * l], dy, l > 0));
    step.gradients[2 * l] = std::move(g.dw);
    step.gradients[2 * l + 1] = std::move(g.db);
    if (l > 0) {
      PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(activations[l], g.dx));
    }
  }
  return step;
}

Tensor flatten_images(const Tensor& images) {
  const int64_t n = images.rank() == 0 ? 1 : images.dim(0);
  const int64_t features = n == 0 ? 0 : images.num_elements() / n;
  Tensor out(DType::kFloat32, {n, features});
  auto src = images.flat<uint8_t>();
  auto dst = out.mutable_flat<float>();
  for (size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(src[i]) * (1.0f / 255.0f);
  return out;
}

}  // namespace psflow::internal
