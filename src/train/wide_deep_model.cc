#include "train/wide_deep_model.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/closure_args.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxVocab = 50'000'000;
constexpr int64_t kMaxDim = 65536;
constexpr size_t kMaxLayers = 16;
constexpr ClosureArgs kSpecArgs{"wide_deep model spec"};

absl::Status bad_input(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("wide_deep model: ", av(what)));
}

// Calls f(T{}) with T the C++ type of a float dtype.
template <typename F>
decltype(auto) with_float(DType dtype, F&& f) {
  if (dtype == DType::kFloat64) return f(double{});
  return f(float{});
}

// [B, a] and [B, b] side by side -> [B, a + b].
template <typename T>
Tensor concat_columns(const Tensor& left, const Tensor& right) {
  const int64_t rows = left.dim(0);
  const int64_t a = left.dim(1);
  const int64_t b = right.dim(1);
  Tensor out(left.dtype(), {rows, a + b});
  if (rows == 0 || a + b == 0) return out;
  auto o = out.mutable_matrix<T>();
  if (a > 0) o.leftCols(a) = left.matrix<T>();
  if (b > 0) o.rightCols(b) = right.matrix<T>();
  return out;
}

// The first `cols` columns of x [B, C].
template <typename T>
Tensor left_columns(const Tensor& x, int64_t cols) {
  Tensor out(x.dtype(), {x.dim(0), cols});
  if (x.dim(0) > 0 && cols > 0) out.mutable_matrix<T>() = x.matrix<T>().leftCols(cols);
  return out;
}

// a + b + bias for a, b [B, 1] and bias [1].
template <typename T>
Tensor add_logits(const Tensor& a, const Tensor& b, const Tensor& bias) {
  Tensor out(a.dtype(), a.shape());
  out.mutable_vec<T>() = a.vec<T>() + b.vec<T>() + bias.flat<T>()[0];
  return out;
}

template <typename T>
Tensor column_sum(const Tensor& d) {
  Tensor out(d.dtype(), {1});
  out.mutable_flat<T>()[0] = d.vec<T>().sum();
  return out;
}

absl::Status check(const WideDeepSpec& spec, const std::vector<Tensor>& params,
                   const WideDeepBatch& batch) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  if (params.size() != shapes.size()) {
    return bad_input(
        absl::StrCat("the model has ", shapes.size(), " parameters; got ", params.size()));
  }
  const DType dtype = params[0].dtype();
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64) {
    return bad_input("parameters must be float32 or float64");
  }
  const int64_t rows = params[kWideTable].rank() == 2 ? params[kWideTable].dim(0) : -1;
  for (size_t i = 0; i < shapes.size(); ++i) {
    Shape want = shapes[i];
    if (i == kWideTable || i == kDeepTable) want[0] = rows;  // the pulled rows
    if (params[i].dtype() != dtype || params[i].shape() != want) {
      return bad_input(absl::StrCat("parameter ", i, " should be ", av(dtype_name(dtype)), " ",
                                    shape_string(want), "; got ", av(dtype_name(params[i].dtype())),
                                    " ", shape_string(params[i].shape())));
    }
  }
  if (batch.index.dtype() != DType::kInt64 || batch.index.rank() != 2) {
    return bad_input("the batch's index must be int64 [B, L]");
  }
  const int64_t b = batch.index.dim(0);
  const int64_t l = batch.index.dim(1);
  const auto float_check = [&](const Tensor& t, const Shape& shape, std::string_view name) {
    if (t.dtype() != dtype || t.shape() != shape) {
      return bad_input(absl::StrCat("the batch's ", av(name), " should be ", av(dtype_name(dtype)),
                                    " ", shape_string(shape), "; got ", av(dtype_name(t.dtype())),
                                    " ", shape_string(t.shape())));
    }
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(float_check(batch.dense, {b, spec.dense_features}, "dense features"));
  PSFLOW_RETURN_IF_ERROR(float_check(batch.weights, {b, l}, "weights"));
  return float_check(batch.labels, {b}, "labels");
}

// Forward activations kept for the backward pass.
struct Forward {
  Tensor logits;                    // [B, 1]
  std::vector<Tensor> activations;  // input of each deep layer
};

absl::StatusOr<Forward> forward(const WideDeepSpec& spec, const std::vector<Tensor>& params,
                                const WideDeepBatch& batch) {
  PSFLOW_RETURN_IF_ERROR(check(spec, params, batch));
  const DType dtype = params[0].dtype();
  PSFLOW_ASSIGN_OR_RETURN(Tensor wide_rows, nn::embedding_lookup(params[kWideTable], batch.index));
  PSFLOW_ASSIGN_OR_RETURN(Tensor wide,
                          nn::embedding_combine(wide_rows, nn::Combiner::kSum, batch.weights));
  PSFLOW_ASSIGN_OR_RETURN(Tensor deep_rows, nn::embedding_lookup(params[kDeepTable], batch.index));
  PSFLOW_ASSIGN_OR_RETURN(Tensor deep,
                          nn::embedding_combine(deep_rows, nn::Combiner::kMean, batch.weights));
  Forward f;
  f.activations.push_back(with_float(
      dtype, [&](auto zero) { return concat_columns<decltype(zero)>(deep, batch.dense); }));
  const size_t layers = (params.size() - kFirstDense) / 2;
  Tensor z;
  for (size_t l = 0; l < layers; ++l) {
    PSFLOW_ASSIGN_OR_RETURN(z, nn::dense_forward(f.activations.back(), params[kFirstDense + 2 * l],
                                                 params[kFirstDense + 2 * l + 1]));
    if (l + 1 < layers) {
      PSFLOW_ASSIGN_OR_RETURN(Tensor h, nn::relu(z));
      f.activations.push_back(std::move(h));
    }
  }
  f.logits = with_float(
      dtype, [&](auto zero) { return add_logits<decltype(zero)>(wide, z, params[kWideBias]); });
  return f;
}

}  // namespace

std::vector<Shape> WideDeepSpec::parameter_shapes() const {
  std::vector<Shape> shapes = {{vocab_size, 1}, {1}, {vocab_size, embedding_dim}};
  int64_t in = embedding_dim + dense_features;
  for (int64_t out : hidden) {
    shapes.push_back({in, out});
    shapes.push_back({out});
    in = out;
  }
  shapes.push_back({in, 1});
  shapes.push_back({1});
  return shapes;
}

std::vector<std::string> WideDeepSpec::parameter_names() const {
  std::vector<std::string> names = {"wide/embedding", "wide/bias", "deep/embedding"};
  for (size_t l = 0; l <= hidden.size(); ++l) {
    names.push_back(absl::StrCat("deep/dense_", l, "/kernel"));
    names.push_back(absl::StrCat("deep/dense_", l, "/bias"));
  }
  return names;
}

Structure WideDeepSpec::to_structure() const {
  Structure::Items layers;
  for (int64_t h : hidden) layers.push_back(Structure(h));
  return Structure::dict({{"vocab_size", vocab_size},
                          {"dense_features", dense_features},
                          {"embedding_dim", embedding_dim},
                          {"hidden", Structure::list(std::move(layers))}});
}

absl::StatusOr<WideDeepSpec> WideDeepSpec::from_structure(const Structure& s) {
  WideDeepSpec spec;
  PSFLOW_ASSIGN_OR_RETURN(spec.vocab_size, kSpecArgs.int_in_range(s, "vocab_size", 1, kMaxVocab));
  PSFLOW_ASSIGN_OR_RETURN(spec.dense_features,
                          kSpecArgs.int_in_range(s, "dense_features", 0, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.embedding_dim,
                          kSpecArgs.int_in_range(s, "embedding_dim", 1, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.hidden, kSpecArgs.int_list(s, "hidden", kMaxLayers, 1, kMaxDim));
  return spec;
}

absl::StatusOr<std::vector<Tensor>> initial_wide_deep_parameters(const WideDeepSpec& spec,
                                                                 uint64_t seed) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  std::vector<Tensor> params;
  PSFLOW_ASSIGN_OR_RETURN(Tensor wide, nn::zeros(shapes[kWideTable]));
  PSFLOW_ASSIGN_OR_RETURN(Tensor wide_bias, nn::zeros(shapes[kWideBias]));
  PSFLOW_ASSIGN_OR_RETURN(Tensor deep, nn::random_uniform(shapes[kDeepTable], -0.05, 0.05, seed));
  params.push_back(std::move(wide));
  params.push_back(std::move(wide_bias));
  params.push_back(std::move(deep));
  for (size_t i = kFirstDense; i < shapes.size(); i += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor kernel,
                            nn::glorot_uniform(shapes[i], seed + 1 + (i - kFirstDense) / 2));
    PSFLOW_ASSIGN_OR_RETURN(Tensor bias, nn::zeros(shapes[i + 1]));
    params.push_back(std::move(kernel));
    params.push_back(std::move(bias));
  }
  return params;
}

absl::StatusOr<std::vector<ShardedVariable>> create_wide_deep_variables(const WideDeepSpec& spec,
                                                                        uint64_t seed) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> initial, initial_wide_deep_parameters(spec, seed));
  const std::vector<std::string> names = spec.parameter_names();
  std::vector<ShardedVariable> vars;
  for (size_t i = 0; i < initial.size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v,
                            create_variable(std::move(initial[i]), {.name = names[i]}));
    vars.push_back(std::move(v));
  }
  return vars;
}

absl::StatusOr<std::vector<Tensor>> pull_wide_deep_parameters(
    const std::vector<ShardedVariable>& variables, const Tensor& unique_ids) {
  if (variables.size() < kFirstDense + 2) {
    return bad_input(absl::StrCat("expected the model's variables; got ", variables.size()));
  }
  std::future<absl::StatusOr<Tensor>> wide = std::async(
      std::launch::async, [&] { return embedding_lookup(variables[kWideTable], unique_ids); });
  std::future<absl::StatusOr<Tensor>> deep = std::async(
      std::launch::async, [&] { return embedding_lookup(variables[kDeepTable], unique_ids); });
  std::vector<ShardedVariable> dense = {variables[kWideBias]};
  dense.insert(dense.end(), variables.begin() + kFirstDense, variables.end());
  absl::StatusOr<std::vector<Tensor>> dense_values = read_values(dense);
  absl::StatusOr<Tensor> wide_rows = wide.get();
  absl::StatusOr<Tensor> deep_rows = deep.get();
  PSFLOW_RETURN_IF_ERROR(wide_rows.status());
  PSFLOW_RETURN_IF_ERROR(deep_rows.status());
  PSFLOW_RETURN_IF_ERROR(dense_values.status());
  std::vector<Tensor> params = {*std::move(wide_rows), (*dense_values)[0], *std::move(deep_rows)};
  params.insert(params.end(), dense_values->begin() + 1, dense_values->end());
  return params;
}

absl::StatusOr<Tensor> wide_deep_logits(const WideDeepSpec& spec, const std::vector<Tensor>& params,
                                        const WideDeepBatch& batch) {
  PSFLOW_ASSIGN_OR_RETURN(Forward f, forward(spec, params, batch));
  return std::move(f.logits);
}

absl::StatusOr<WideDeepStep> wide_deep_forward_backward(const WideDeepSpec& spec,
                                                        const std::vector<Tensor>& params,
                                                        const WideDeepBatch& batch) {
  PSFLOW_ASSIGN_OR_RETURN(Forward f, forward(spec, params, batch));
  const DType dtype = params[0].dtype();
  const int64_t b = batch.index.dim(0);
  const int64_t bag = batch.index.dim(1);
  PSFLOW_ASSIGN_OR_RETURN(Tensor labels, batch.labels.reshape({b, 1}));
  PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sigmoid_binary_cross_entropy(f.logits, labels));
  WideDeepStep step;
  step.loss = loss.loss;
  step.probabilities = std::move(loss.probabilities);
  const Tensor& d_logits = loss.d_logits;

  // Wide part: d wide = d logits.
  Tensor d_wide_bias =
      with_float(dtype, [&](auto zero) { return column_sum<decltype(zero)>(d_logits); });
  PSFLOW_ASSIGN_OR_RETURN(
      Tensor d_wide_rows,
      nn::embedding_combine_backward(d_logits, bag, nn::Combiner::kSum, batch.weights));
  PSFLOW_ASSIGN_OR_RETURN(step.wide_rows, nn::embedding_backward(batch.index, d_wide_rows));

  // Deep tower, last layer first.
  const size_t layers = (params.size() - kFirstDense) / 2;
  std::vector<Tensor> layer_grads(2 * layers);
  Tensor dy = d_logits;
  Tensor d_input;
  for (size_t l = layers; l-- > 0;) {
    PSFLOW_ASSIGN_OR_RETURN(nn::DenseGradients g,
                            nn::dense_backward(f.activations[l], params[kFirstDense + 2 * l], dy));
    layer_grads[2 * l] = std::move(g.dw);
    layer_grads[2 * l + 1] = std::move(g.db);
    if (l > 0) {
      PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(f.activations[l], g.dx));
    } else {
      d_input = std::move(g.dx);
    }
  }
  Tensor d_deep = with_float(
      dtype, [&](auto zero) { return left_columns<decltype(zero)>(d_input, spec.embedding_dim); });
  PSFLOW_ASSIGN_OR_RETURN(Tensor d_deep_rows, nn::embedding_combine_backward(
                                                  d_deep, bag, nn::Combiner::kMean, batch.weights));
  PSFLOW_ASSIGN_OR_RETURN(step.deep_rows, nn::embedding_backward(batch.index, d_deep_rows));
  step.dense.push_back(std::move(d_wide_bias));
  for (Tensor& g : layer_grads) step.dense.push_back(std::move(g));
  return step;
}

}  // namespace psflow::internal
