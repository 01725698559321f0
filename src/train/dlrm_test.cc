#include <cmath>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/nn.h"
#include "train/dlrm_model.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

DlrmSpec small_spec() {
  DlrmSpec spec;
  spec.embedding_dim = 4;
  spec.bottom = {8, 4};
  spec.top = {8};
  return spec;
}

Tensor random_tensor(DType dtype, Shape shape, std::mt19937& gen, double scale) {
  Tensor t(dtype, std::move(shape));
  std::normal_distribution<float> n(0.0F, static_cast<float>(scale));
  for (float& v : t.mutable_flat<float>()) v = n(gen);
  return t;
}

DlrmBatch small_batch(std::mt19937& gen, int64_t b, int64_t rows, int64_t d) {
  DlrmBatch batch;
  batch.dense = random_tensor(DType::kFloat32, {b, 13}, gen, 1.0);
  batch.rows = random_tensor(DType::kFloat32, {rows, d}, gen, 0.5);
  batch.index = Tensor(DType::kInt64, {b, 26});
  for (int64_t& i : batch.index.mutable_flat<int64_t>()) i = static_cast<int64_t>(gen() % rows);
  batch.labels = Tensor(DType::kFloat32, {b});
  for (int64_t i = 0; i < b; ++i) batch.labels.mutable_flat<float>()[i] = static_cast<float>(i % 2);
  return batch;
}

double loss_of(const DlrmSpec& spec, const std::vector<Tensor>& params, const DlrmBatch& batch) {
  const Tensor logits = dlrm_logits(spec, params, batch).value();
  const Tensor labels = batch.labels.reshape({batch.labels.dim(0), 1}).value();
  return nn::sigmoid_binary_cross_entropy(logits, labels).value().loss;
}

// Copies of every tensor, so that a perturbation changes one copy only.
std::vector<Tensor> deep_copy(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) {
    Tensor c(t.dtype(), t.shape());
    std::copy(t.flat<float>().begin(), t.flat<float>().end(), c.mutable_flat<float>().begin());
    out.push_back(std::move(c));
  }
  return out;
}

TEST(DlrmModelTest, ShapesAndNames) {
  const DlrmSpec spec = small_spec();
  EXPECT_EQ(spec.interaction_width(), 4 + 351);
  const std::vector<Shape> shapes = spec.parameter_shapes();
  ASSERT_EQ(shapes.size(), 8u);
  EXPECT_EQ(shapes[0], (Shape{13, 8}));
  EXPECT_EQ(shapes[2], (Shape{8, 4}));
  EXPECT_EQ(shapes[4], (Shape{355, 8}));
  EXPECT_EQ(shapes[6], (Shape{8, 1}));
  EXPECT_EQ(spec.parameter_names()[4], "top/dense_0/kernel");
  const DlrmSpec back = DlrmSpec::from_structure(spec.to_structure()).value();
  EXPECT_EQ(back.parameter_shapes(), shapes);
  DlrmSpec bad = spec;
  bad.bottom = {8, 5};
  EXPECT_THAT(DlrmSpec::from_structure(bad.to_structure()).status().message(),
              HasSubstr("embedding_dim"));
}

// Gradients against central differences of the loss, for every dense
// parameter's first elements and for every embedding row.
TEST(DlrmModelTest, GradientsMatchFiniteDifferences) {
  std::mt19937 gen(3);
  const DlrmSpec spec = small_spec();
  std::vector<Tensor> params = initial_dlrm_parameters(spec, 5).value();
  // Non-zero biases, so that no ReLU sits at its kink by construction.
  for (size_t i = 1; i < params.size(); i += 2) {
    params[i] = random_tensor(DType::kFloat32, params[i].shape(), gen, 0.1);
  }
  const DlrmBatch batch = small_batch(gen, 5, 7, 4);
  const DlrmGradients g = dlrm_forward_backward(spec, params, batch).value();
  EXPECT_NEAR(g.loss, loss_of(spec, params, batch), 1e-6);
  const double eps = 1e-2;
  int checked = 0;
  for (size_t p = 0; p < params.size(); ++p) {
    const int64_t n = std::min<int64_t>(params[p].num_elements(), 6);
    for (int64_t k = 0; k < n; ++k) {
      std::vector<Tensor> plus = deep_copy(params);
      std::vector<Tensor> minus = deep_copy(params);
      plus[p].mutable_flat<float>()[k] += static_cast<float>(eps);
      minus[p].mutable_flat<float>()[k] -= static_cast<float>(eps);
      const double numeric = (loss_of(spec, plus, batch) - loss_of(spec, minus, batch)) / (2 * eps);
      EXPECT_NEAR(g.dense[p].flat<float>()[k], numeric, 2e-3 + 0.03 * std::abs(numeric))
          << "parameter " << p << " element " << k;
      ++checked;
    }
  }
  for (int64_t k = 0; k < batch.rows.num_elements(); ++k) {
    DlrmBatch plus = batch;
    DlrmBatch minus = batch;
    plus.rows = deep_copy({batch.rows})[0];
    minus.rows = deep_copy({batch.rows})[0];
    plus.rows.mutable_flat<float>()[k] += static_cast<float>(eps);
    minus.rows.mutable_flat<float>()[k] -= static_cast<float>(eps);
    const double numeric = (loss_of(spec, params, plus) - loss_of(spec, params, minus)) / (2 * eps);
    EXPECT_NEAR(g.rows.flat<float>()[k], numeric, 2e-3 + 0.03 * std::abs(numeric)) << "row " << k;
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

TEST(DlrmModelTest, RejectsMalformedBatches) {
  std::mt19937 gen(1);
  const DlrmSpec spec = small_spec();
  const std::vector<Tensor> params = initial_dlrm_parameters(spec, 1).value();
  DlrmBatch batch = small_batch(gen, 3, 4, 4);
  batch.index.mutable_flat<int64_t>()[5] = 4;
  EXPECT_THAT(dlrm_logits(spec, params, batch).status().message(), HasSubstr("index 4"));
  batch = small_batch(gen, 3, 4, 5);
  EXPECT_THAT(dlrm_logits(spec, params, batch).status().message(), HasSubstr("[U, 4]"));
  batch = small_batch(gen, 3, 4, 4);
  std::vector<Tensor> fewer(params.begin(), params.end() - 1);
  EXPECT_THAT(dlrm_logits(spec, fewer, batch).status().message(), HasSubstr("8 parameters"));
}

}  // namespace
}  // namespace psflow::internal
