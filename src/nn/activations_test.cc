#include <cmath>
#include <limits>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nn/test_util.h"
#include "psflow/nn.h"

namespace psflow::nn {
namespace {

using ::psflow::nn::testing::dot;
using ::psflow::nn::testing::expect_gradient_matches;
using ::psflow::nn::testing::random_tensor;
using ::testing::HasSubstr;

// Normal values pushed at least 0.1 away from relu's kink at 0, so the
// finite differences never straddle it.
Tensor away_from_zero(const Shape& shape, uint64_t seed) {
  Tensor t = random_tensor(shape, seed);
  for (double& v : t.mutable_flat<double>()) v += v >= 0 ? 0.1 : -0.1;
  return t;
}

TEST(ActivationsTest, ReluKnownValues) {
  const Tensor x = Tensor::from_vector<float>({-2, -0.0f, 0, 1.5f, 3}, {5});
  absl::StatusOr<Tensor> y = relu(x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, Tensor::from_vector<float>({0, 0, 0, 1.5f, 3}, {5}));

  const Tensor dy = Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5});
  const Tensor expected = Tensor::from_vector<float>({0, 0, 0, 4, 5}, {5});
  absl::StatusOr<Tensor> from_x = relu_backward(x, dy);
  absl::StatusOr<Tensor> from_y = relu_backward(*y, dy);
  ASSERT_TRUE(from_x.ok()) << from_x.status();
  ASSERT_TRUE(from_y.ok()) << from_y.status();
  EXPECT_EQ(*from_x, expected);
  EXPECT_EQ(*from_y, expected);
}

TEST(ActivationsTest, ReluGradientMatchesFiniteDifferences) {
  const Tensor x = away_from_zero({4, 3}, 11);
  const Tensor r = random_tensor({4, 3}, 12);
  absl::StatusOr<Tensor> dx = relu_backward(x, r);
  ASSERT_TRUE(dx.ok()) << dx.status();
  expect_gradient_matches([&](const Tensor& p) { return dot(*relu(p), r); }, x, *dx, "relu dx");
}

TEST(ActivationsTest, SigmoidKnownValuesAndExtremes) {
  const Tensor x = Tensor::from_vector<double>({0, 2, -2, -50, 1000, -1000}, {6});
  absl::StatusOr<Tensor> y = sigmoid(x);
  ASSERT_TRUE(y.ok()) << y.status();
  const auto v = y->flat<double>();
  EXPECT_DOUBLE_EQ(v[0], 0.5);
  EXPECT_DOUBLE_EQ(v[1], 1 / (1 + std::exp(-2.0)));
  EXPECT_DOUBLE_EQ(v[1] + v[2], 1.0);
  // Relative accuracy far in the negative tail, where 1 - sigmoid(50)
  // would have cancelled to 0.
  EXPECT_NEAR(v[3] / std::exp(-50.0), 1.0, 1e-12);
  EXPECT_EQ(v[4], 1.0);
  // Eigen's vectorised exp clamps its input, so the far tail is a tiny
  // denormal rather than exactly 0: either is fine, NaN is not.
  EXPECT_GE(v[5], 0.0);
  EXPECT_LT(v[5], 1e-300);

  absl::StatusOr<Tensor> y32 = sigmoid(Tensor::from_vector<float>({-100, 0, 100}, {3}));
  ASSERT_TRUE(y32.ok()) << y32.status();
  for (const float f : y32->flat<float>()) EXPECT_TRUE(std::isfinite(f));
  EXPECT_EQ(y32->flat<float>()[1], 0.5f);
  EXPECT_EQ(y32->flat<float>()[2], 1.0f);
}

TEST(ActivationsTest, SigmoidGradientMatchesFiniteDifferences) {
  const Tensor x = random_tensor({3, 5}, 13, 3.0);
  const Tensor r = random_tensor({3, 5}, 14);
  absl::StatusOr<Tensor> dx = sigmoid_backward(*sigmoid(x), r);
  ASSERT_TRUE(dx.ok()) << dx.status();
  expect_gradient_matches([&](const Tensor& p) { return dot(*sigmoid(p), r); }, x, *dx,
                          "sigmoid dx");
}

TEST(ActivationsTest, RejectsBadInput) {
  absl::StatusOr<Tensor> y = relu(Tensor::from_vector<int64_t>({1, 2}, {2}));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("nn::relu: 'x' is int64"));

  y = relu_backward(Tensor::from_vector<float>({1, 2}, {2}),
                    Tensor::from_vector<float>({1, 2}, {1, 2}));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("'dy' has shape [1, 2], expected [2]"));

  y = sigmoid_backward(Tensor::from_vector<float>({0.5f}, {1}),
                       Tensor::from_vector<double>({1}, {1}));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("expected dtype float32 (that of 'y')"));
}

}  // namespace
}  // namespace psflow::nn
