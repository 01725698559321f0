#include "train/dlrm_model.h"

#include <utility>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "train/closure_args.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxDim = 4096;
constexpr size_t kMaxLayers = 16;
constexpr int64_t kVectors = kDlrmSparseFeatures + 1;  // z and the 26 embeddings
constexpr int64_t kPairs = kVectors * (kVectors - 1) / 2;
constexpr ClosureArgs kSpecArgs{"dlrm model spec"};

using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MapMat = Eigen::Map<RowMajor>;
using ConstMapMat = Eigen::Map<const RowMajor>;

absl::Status bad_input(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("dlrm model: ", av(what)));
}

absl::Status check(const DlrmSpec& spec, const std::vector<Tensor>& params,
                   const DlrmBatch& batch) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  if (params.size() != shapes.size()) {
    return bad_input(
        absl::StrCat("the model has ", shapes.size(), " parameters; got ", params.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    if (params[i].dtype() != DType::kFloat32 || params[i].shape() != shapes[i]) {
      return bad_input(absl::StrCat("parameter ", i, " should be float32 ", shape_string(shapes[i]),
                                    "; got ", av(dtype_name(params[i].dtype())), " ",
                                    shape_string(params[i].shape())));
    }
  }
  const int64_t d = spec.embedding_dim;
  if (batch.dense.dtype() != DType::kFloat32 || batch.dense.rank() != 2 ||
      batch.dense.dim(1) != kDlrmDenseFeatures) {
    return bad_input("dense features must be float32 [B, 13]");
  }
  const int64_t b = batch.dense.dim(0);
  if (batch.index.dtype() != DType::kInt64 ||
      batch.index.shape() != Shape{b, kDlrmSparseFeatures}) {
    return bad_input("the index must be int64 [B, 26]");
  }
  if (batch.rows.dtype() != DType::kFloat32 || batch.rows.rank() != 2 || batch.rows.dim(1) != d) {
    return bad_input(absl::StrCat("the rows must be float32 [U, ", d, "]"));
  }
  const int64_t u = batch.rows.dim(0);
  for (int64_t i : batch.index.flat<int64_t>()) {
    if (i < 0 || i >= u) return bad_input(absl::StrCat("index ", i, " is not a row of ", u));
  }
  if (batch.labels.dtype() != DType::kFloat32 || batch.labels.shape() != Shape{b}) {
    return bad_input("labels must be float32 [B]");
  }
  return absl::OkStatus();
}

// Forward activations kept for the backward pass. Thread-safety: a value
// type.
struct Forward {
  std::vector<Tensor> bottom_inputs;  // input of each bottom layer
  Tensor z;                           // bottom output [B, d] (after ReLU)
  std::vector<Tensor> top_inputs;     // input of each top layer; [0] = [z, dots]
  Tensor logits;                      // [B, 1]
};

// The vectors of example b: row 0 is z_b, row 1 + f the embedding of
// feature f.
void gather_vectors(const DlrmBatch& batch, const Tensor& z, int64_t b, int64_t d, RowMajor& v) {
  const ConstMapMat rows(batch.rows.flat<float>().data(), batch.rows.dim(0), d);
  const ConstMapMat zm(z.flat<float>().data(), z.dim(0), d);
  const auto index = batch.index.flat<int64_t>();
  v.row(0) = zm.row(b);
  for (int64_t f = 0; f < kDlrmSparseFeatures; ++f) {
    v.row(1 + f) = rows.row(index[b * kDlrmSparseFeatures + f]);
  }
}

absl::StatusOr<Forward> forward(const DlrmSpec& spec, const std::vector<Tensor>& params,
                                const DlrmBatch& batch) {
  PSFLOW_RETURN_IF_ERROR(check(spec, params, batch));
  const int64_t d = spec.embedding_dim;
  const int64_t b = batch.dense.dim(0);
  Forward f;
  f.bottom_inputs.push_back(batch.dense);
  size_t p = 0;
  Tensor h = batch.dense;
  for (size_t l = 0; l < spec.bottom.size(); ++l, p += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor y, nn::dense_forward(h, params[p], params[p + 1]));
    PSFLOW_ASSIGN_OR_RETURN(h, nn::relu(y));
    if (l + 1 < spec.bottom.size()) f.bottom_inputs.push_back(h);
  }
  f.z = h;
  // Interactions: [z, the strictly lower triangle of V V^T].
  Tensor inter(DType::kFloat32, {b, spec.interaction_width()});
  MapMat out(inter.mutable_flat<float>().data(), b, spec.interaction_width());
  RowMajor v(kVectors, d);
  RowMajor gram(kVectors, kVectors);
  for (int64_t e = 0; e < b; ++e) {
    gather_vectors(batch, f.z, e, d, v);
    gram.noalias() = v * v.transpose();
    out.row(e).head(d) = v.row(0);
    int64_t k = d;
    for (int64_t i = 1; i < kVectors; ++i) {
      for (int64_t j = 0; j < i; ++j) out(e, k++) = gram(i, j);
    }
  }
  f.top_inputs.push_back(std::move(inter));
  for (size_t l = 0; l <= spec.top.size(); ++l, p += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor y,
                            nn::dense_forward(f.top_inputs.back(), params[p], params[p + 1]));
    if (l == spec.top.size()) {
      f.logits = std::move(y);
    } else {
      PSFLOW_ASSIGN_OR_RETURN(Tensor r, nn::relu(y));
      f.top_inputs.push_back(std::move(r));
    }
  }
  return f;
}

}  // namespace

std::vector<Shape> DlrmSpec::parameter_shapes() const {
  std::vector<Shape> shapes;
  int64_t in = kDlrmDenseFeatures;
  for (int64_t out : bottom) {
    shapes.push_back({in, out});
    shapes.push_back({out});
    in = out;
  }
  in = interaction_width();
  for (int64_t out : top) {
    shapes.push_back({in, out});
    shapes.push_back({out});
    in = out;
  }
  shapes.push_back({in, 1});
  shapes.push_back({1});
  return shapes;
}

std::vector<std::string> DlrmSpec::parameter_names() const {
  std::vector<std::string> names;
  for (size_t l = 0; l < bottom.size(); ++l) {
    names.push_back(absl::StrCat("bottom/dense_", l, "/kernel"));
    names.push_back(absl::StrCat("bottom/dense_", l, "/bias"));
  }
  for (size_t l = 0; l <= top.size(); ++l) {
    names.push_back(absl::StrCat("top/dense_", l, "/kernel"));
    names.push_back(absl::StrCat("top/dense_", l, "/bias"));
  }
  return names;
}

int64_t DlrmSpec::interaction_width() const { return embedding_dim + kPairs; }

Structure DlrmSpec::to_structure() const {
  Structure::Items b;
  for (int64_t h : bottom) b.push_back(Structure(h));
  Structure::Items t;
  for (int64_t h : top) t.push_back(Structure(h));
  return Structure::dict({{"embedding_dim", embedding_dim},
                          {"bottom", Structure::list(std::move(b))},
                          {"top", Structure::list(std::move(t))},
                          {"table", table}});
}

absl::StatusOr<DlrmSpec> DlrmSpec::from_structure(const Structure& s) {
  DlrmSpec spec;
  PSFLOW_ASSIGN_OR_RETURN(spec.embedding_dim,
                          kSpecArgs.int_in_range(s, "embedding_dim", 1, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.bottom, kSpecArgs.int_list(s, "bottom", kMaxLayers, 1, kMaxDim));
  PSFLOW_ASSIGN_OR_RETURN(spec.top, kSpecArgs.int_list(s, "top", kMaxLayers, 1, kMaxDim));
  if (spec.bottom.empty() || spec.bottom.back() != spec.embedding_dim) {
    return kSpecArgs.malformed(absl::StrCat("the bottom MLP must end in embedding_dim (",
                                            spec.embedding_dim,
                                            ") units, to interact with the embeddings"));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* table,
                          kSpecArgs.field(s, "table", Structure::Kind::kNone));
  spec.table = *table;
  return spec;
}

absl::StatusOr<std::vector<Tensor>> initial_dlrm_parameters(const DlrmSpec& spec, uint64_t seed) {
  const std::vector<Shape> shapes = spec.parameter_shapes();
  std::vector<Tensor> params;
  for (size_t i = 0; i < shapes.size(); i += 2) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor kernel, nn::glorot_uniform(shapes[i], seed + 1 + i / 2));
    PSFLOW_ASSIGN_OR_RETURN(Tensor bias, nn::zeros(shapes[i + 1]));
    params.push_back(std::move(kernel));
    params.push_back(std::move(bias));
  }
  return params;
}

absl::StatusOr<Tensor> dlrm_logits(const DlrmSpec& spec, const std::vector<Tensor>& params,
                                   const DlrmBatch& batch) {
  PSFLOW_ASSIGN_OR_RETURN(Forward f, forward(spec, params, batch));
  return std::move(f.logits);
}

absl::StatusOr<DlrmGradients> dlrm_forward_backward(const DlrmSpec& spec,
                                                    const std::vector<Tensor>& params,
                                                    const DlrmBatch& batch) {
  PSFLOW_ASSIGN_OR_RETURN(Forward f, forward(spec, params, batch));
  const int64_t d = spec.embedding_dim;
  const int64_t b = batch.dense.dim(0);
  PSFLOW_ASSIGN_OR_RETURN(Tensor labels, batch.labels.reshape({b, 1}));
  PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sigmoid_binary_cross_entropy(f.logits, labels));
  DlrmGradients g;
  g.loss = loss.loss;
  g.probabilities = std::move(loss.probabilities);
  g.dense.resize(params.size());

  // Top MLP, last layer first.
  const size_t first_top = 2 * spec.bottom.size();
  Tensor dy = std::move(loss.d_logits);
  for (size_t l = spec.top.size() + 1; l-- > 0;) {
    const size_t p = first_top + 2 * l;
    PSFLOW_ASSIGN_OR_RETURN(nn::DenseGradients dg,
                            nn::dense_backward(f.top_inputs[l], params[p], dy));
    g.dense[p] = std::move(dg.dw);
    g.dense[p + 1] = std::move(dg.db);
    if (l > 0) {
      PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(f.top_inputs[l], dg.dx));
    } else {
      dy = std::move(dg.dx);
    }
  }
  // Interactions: d(v_i . v_j) reaches v_i as g_ij v_j and v_j as g_ij v_i,
  // so dV = S V with S symmetric, S_ij = S_ji = g_ij, zero diagonal.
  const ConstMapMat d_inter(dy.flat<float>().data(), b, spec.interaction_width());
  Tensor dz(DType::kFloat32, {b, d});
  MapMat dzm(dz.mutable_flat<float>().data(), b, d);
  g.rows = Tensor(DType::kFloat32, batch.rows.shape());
  MapMat drows(g.rows.mutable_flat<float>().data(), batch.rows.dim(0), d);
  drows.setZero();
  const auto index = batch.index.flat<int64_t>();
  RowMajor v(kVectors, d);
  RowMajor s = RowMajor::Zero(kVectors, kVectors);
  RowMajor dv(kVectors, d);
  for (int64_t e = 0; e < b; ++e) {
    gather_vectors(batch, f.z, e, d, v);
    int64_t k = d;
    for (int64_t i = 1; i < kVectors; ++i) {
      for (int64_t j = 0; j < i; ++j) {
        s(i, j) = d_inter(e, k);
        s(j, i) = d_inter(e, k);
        ++k;
      }
    }
    dv.noalias() = s * v;
    dzm.row(e) = dv.row(0) + d_inter.row(e).head(d);
    for (int64_t f2 = 0; f2 < kDlrmSparseFeatures; ++f2) {
      drows.row(index[e * kDlrmSparseFeatures + f2]) += dv.row(1 + f2);
    }
  }
  // Bottom MLP (ReLU after every layer), last layer first.
  PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(f.z, dz));
  for (size_t l = spec.bottom.size(); l-- > 0;) {
    const size_t p = 2 * l;
    PSFLOW_ASSIGN_OR_RETURN(nn::DenseGradients dg,
                            nn::dense_backward(f.bottom_inputs[l], params[p], dy, l > 0));
    g.dense[p] = std::move(dg.dw);
    g.dense[p + 1] = std::move(dg.db);
    if (l > 0) {
      PSFLOW_ASSIGN_OR_RETURN(dy, nn::relu_backward(f.bottom_inputs[l], dg.dx));
    }
  }
  return g;
}

}  // namespace psflow::internal
