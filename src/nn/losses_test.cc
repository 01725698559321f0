#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nn/test_util.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

using ::psflow::nn::testing::expect_gradient_matches;
using ::psflow::nn::testing::random_tensor;
using ::testing::HasSubstr;

TEST(SoftmaxCrossEntropyTest, UniformLogitsGiveLogC) {
  const Tensor logits(DType::kFloat32, {2, 4});  // all zeros
  const Tensor labels = Tensor::from_vector<int32_t>({1, 3}, {2});
  absl::StatusOr<LossResult> r = sparse_softmax_cross_entropy(logits, labels);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->loss, std::log(4.0), 1e-6);
  EXPECT_EQ(r->probabilities, Tensor::from_vector<float>(std::vector<float>(8, 0.25f), {2, 4}));
  // (p - onehot) / N.
  EXPECT_TRUE(all_close(r->d_logits, Tensor::from_vector<float>({0.125f, -0.375f, 0.125f, 0.125f,
                                                                 0.125f, 0.125f, 0.125f, -0.375f},
                                                                {2, 4}))
                  .ok());
}

TEST(SoftmaxCrossEntropyTest, KnownValue) {
  // p = [1/4, 3/4]; label 1 -> -log(3/4).
  const Tensor logits = Tensor::from_vector<double>({0, std::log(3.0)}, {1, 2});
  absl::StatusOr<LossResult> r =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<int64_t>({1}, {1}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->loss, std::log(4.0 / 3.0), 1e-15);
  EXPECT_NEAR(r->d_logits.at<double>({0, 0}), 0.25, 1e-15);
  EXPECT_NEAR(r->d_logits.at<double>({0, 1}), -0.25, 1e-15);
}

TEST(SoftmaxCrossEntropyTest, StableForHugeLogits) {
  const Tensor logits = Tensor::from_vector<float>({1000, 0, -1000, 0}, {2, 2});
  absl::StatusOr<LossResult> r =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<uint8_t>({0, 0}, {2}));
  ASSERT_TRUE(r.ok()) << r.status();
  // Row 0 is certain and right (0), row 1 is certain and wrong (1000).
  EXPECT_NEAR(r->loss, 500.0, 1e-3);
  for (const float g : r->d_logits.flat<float>()) EXPECT_TRUE(std::isfinite(g));
}

TEST(SoftmaxCrossEntropyTest, GradientMatchesFiniteDifferences) {
  const Tensor logits = random_tensor({4, 5}, 21, 2.0);
  const Tensor labels = Tensor::from_vector<int32_t>({0, 4, 2, 2}, {4});
  absl::StatusOr<LossResult> r = sparse_softmax_cross_entropy(logits, labels);
  ASSERT_TRUE(r.ok()) << r.status();
  expect_gradient_matches(
      [&](const Tensor& p) { return sparse_softmax_cross_entropy(p, labels)->loss; }, logits,
      r->d_logits, "softmax cross-entropy d_logits");
}

TEST(SoftmaxCrossEntropyTest, LabelDtypesAgree) {
  const Tensor logits = random_tensor({3, 4}, 22);
  absl::StatusOr<LossResult> a =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<int32_t>({3, 0, 1}, {3}));
  absl::StatusOr<LossResult> b =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<int64_t>({3, 0, 1}, {3}));
  absl::StatusOr<LossResult> c =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<uint8_t>({3, 0, 1}, {3}));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->loss, b->loss);
  EXPECT_EQ(a->loss, c->loss);
  EXPECT_EQ(a->d_logits, c->d_logits);
}

TEST(SoftmaxCrossEntropyTest, EmptyBatch) {
  absl::StatusOr<LossResult> r =
      sparse_softmax_cross_entropy(Tensor(DType::kFloat32, {0, 3}), Tensor(DType::kInt32, {0}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->loss, 0.0);
  EXPECT_EQ(r->d_logits.shape(), (Shape{0, 3}));
}

TEST(SoftmaxCrossEntropyTest, RejectsBadInput) {
  const Tensor logits(DType::kFloat32, {2, 3});
  absl::StatusOr<LossResult> r =
      sparse_softmax_cross_entropy(logits, Tensor::from_vector<int32_t>({0, 3}, {2}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("'labels' has value 3 at index 1, expected a class id in [0, 3)"));

  r = sparse_softmax_cross_entropy(logits, Tensor::from_vector<int64_t>({-1, 0}, {2}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("has value -1 at index 0"));

  r = sparse_softmax_cross_entropy(logits, Tensor::from_vector<int32_t>({0, 1, 2}, {3}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'labels' has shape [3], expected [2]"));

  r = sparse_softmax_cross_entropy(logits, Tensor::from_vector<float>({0, 1}, {2}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'labels' is float32"));

  r = sparse_softmax_cross_entropy(Tensor(DType::kFloat32, {3}),
                                   Tensor::from_vector<int32_t>({0, 1, 2}, {3}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("'logits' has shape [3] (rank 1)"));

  r = sparse_softmax_cross_entropy(Tensor(DType::kFloat32, {1, 0}),
                                   Tensor::from_vector<int32_t>({0}, {1}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("at least one class"));
}

TEST(SigmoidCrossEntropyTest, KnownValues) {
  const Tensor logits = Tensor::from_vector<double>({0, 2, -3}, {3});
  const Tensor labels = Tensor::from_vector<double>({1, 1, 0.25}, {3});
  absl::StatusOr<LossResult> r = sigmoid_binary_cross_entropy(logits, labels);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto s = [](double x) { return 1 / (1 + std::exp(-x)); };
  const auto ce = [&](double x, double z) {
    return -(z * std::log(s(x)) + (1 - z) * std::log(1 - s(x)));
  };
  EXPECT_NEAR(r->loss, (std::log(2.0) + ce(2, 1) + ce(-3, 0.25)) / 3, 1e-14);
  EXPECT_NEAR(r->probabilities.flat<double>()[1], s(2), 1e-15);
  EXPECT_NEAR(r->d_logits.flat<double>()[2], (s(-3) - 0.25) / 3, 1e-15);
}

TEST(SigmoidCrossEntropyTest, StableForHugeLogits) {
  const Tensor logits = Tensor::from_vector<float>({1000, -1000, 1000, -1000}, {4, 1});
  const Tensor labels = Tensor::from_vector<float>({0, 1, 1, 0}, {4, 1});
  absl::StatusOr<LossResult> r = sigmoid_binary_cross_entropy(logits, labels);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NEAR(r->loss, 500.0, 1e-3);
  EXPECT_EQ(r->d_logits.shape(), (Shape{4, 1}));
  for (const float g : r->d_logits.flat<float>()) EXPECT_TRUE(std::isfinite(g));
}

TEST(SigmoidCrossEntropyTest, GradientMatchesFiniteDifferences) {
  const Tensor logits = random_tensor({6}, 23, 3.0);
  const Tensor labels = Tensor::from_vector<double>({0, 1, 0.5, 1, 0, 0.9}, {6});
  absl::StatusOr<LossResult> r = sigmoid_binary_cross_entropy(logits, labels);
  ASSERT_TRUE(r.ok()) << r.status();
  expect_gradient_matches(
      [&](const Tensor& p) { return sigmoid_binary_cross_entropy(p, labels)->loss; }, logits,
      r->d_logits, "sigmoid cross-entropy d_logits");
}

TEST(SigmoidCrossEntropyTest, RejectsBadInput) {
  const Tensor logits(DType::kFloat32, {3});
  absl::StatusOr<LossResult> r =
      sigmoid_binary_cross_entropy(logits, Tensor::from_vector<float>({0, 1.5f, 1}, {3}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("'labels' has value 1.5 at index 1, expected a value in [0, 1]"));

  r = sigmoid_binary_cross_entropy(logits, Tensor::from_vector<float>({0, NAN, 1}, {3}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);

  r = sigmoid_binary_cross_entropy(logits, Tensor::from_vector<float>({0, 1, 1}, {3, 1}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("'labels' has shape [3, 1], expected [3]"));

  r = sigmoid_binary_cross_entropy(Tensor(DType::kFloat32, {3, 2}),
                                   Tensor(DType::kFloat32, {3, 2}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("expected [N] or [N, 1]"));

  r = sigmoid_binary_cross_entropy(logits, Tensor::from_vector<int32_t>({0, 1, 1}, {3}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SoftmaxTest, RowsSumToOneAndArgmaxPicksFirstMax) {
  const Tensor x = Tensor::from_vector<float>({1, 3, 3, 0, -1, -2, 5, 5, 5}, {3, 3});
  absl::StatusOr<Tensor> p = softmax(x);
  ASSERT_TRUE(p.ok()) << p.status();
  for (int64_t i = 0; i < 3; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < 3; ++j) sum += p->at<float>({i, j});
    EXPECT_NEAR(sum, 1.0f, 1e-6f);
  }
  EXPECT_NEAR(p->at<float>({2, 0}), 1.0f / 3, 1e-6f);
  absl::StatusOr<Tensor> idx = argmax_rows(x);
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_EQ(*idx, Tensor::from_vector<int64_t>({1, 0, 0}, {3}));

  EXPECT_EQ(argmax_rows(Tensor(DType::kFloat32, {2, 0})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(softmax(Tensor(DType::kInt32, {2, 2})).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psflow::nn
