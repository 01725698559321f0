#include <string>
#include <vector>

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

Tensor f32(std::vector<float> v, Shape s) { return Tensor::from_vector(v, s); }

TEST(DenseTest, ForwardKnownValues) {
  const Tensor x = f32({1, 2, 3, 4}, {2, 2});
  const Tensor w = f32({1, 0, 1, 0, 1, 1}, {2, 3});
  const Tensor b = f32({0.5f, -1, 0}, {3});
  absl::StatusOr<Tensor> y = dense_forward(x, w, b);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, f32({1.5f, 1, 3, 3.5f, 3, 7}, {2, 3}));
}

TEST(DenseTest, BackwardKnownValues) {
  const Tensor x = f32({1, 2, 3, 4}, {2, 2});
  const Tensor w = f32({1, 0, 1, 0, 1, 1}, {2, 3});
  const Tensor dy = f32({1, 0, 0, 0, 1, 2}, {2, 3});
  absl::StatusOr<DenseGradients> g = dense_backward(x, w, dy);
  ASSERT_TRUE(g.ok()) << g.status();
  // dw = x^T dy, db = column sums of dy, dx = dy w^T.
  EXPECT_EQ(g->dw, f32({1, 3, 6, 2, 4, 8}, {2, 3}));
  EXPECT_EQ(g->db, f32({1, 1, 2}, {3}));
  EXPECT_EQ(g->dx, f32({1, 0, 2, 3}, {2, 2}));
}

TEST(DenseTest, GradientsMatchFiniteDifferences) {
  const Tensor x = random_tensor({3, 4}, 1);
  const Tensor w = random_tensor({4, 5}, 2);
  const Tensor b = random_tensor({5}, 3);
  const Tensor r = random_tensor({3, 5}, 4);  // L = <y, r>, so dL/dy = r
  absl::StatusOr<DenseGradients> g = dense_backward(x, w, r);
  ASSERT_TRUE(g.ok()) << g.status();
  expect_gradient_matches([&](const Tensor& p) { return dot(*dense_forward(p, w, b), r); }, x,
                          g->dx, "dx");
  expect_gradient_matches([&](const Tensor& p) { return dot(*dense_forward(x, p, b), r); }, w,
                          g->dw, "dw");
  expect_gradient_matches([&](const Tensor& p) { return dot(*dense_forward(x, w, p), r); }, b,
                          g->db, "db");
}

TEST(DenseTest, SkipsDxWhenNotNeeded) {
  const Tensor x = random_tensor({2, 3}, 5);
  const Tensor w = random_tensor({3, 4}, 6);
  const Tensor dy = random_tensor({2, 4}, 7);
  absl::StatusOr<DenseGradients> g = dense_backward(x, w, dy, /*need_dx=*/false);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_FALSE(g->dx.valid());
  EXPECT_EQ(g->dw.shape(), (Shape{3, 4}));
  EXPECT_EQ(g->db.shape(), (Shape{4}));
}

TEST(DenseTest, EmptyDimensions) {
  // Empty batch: y is [0, out]; dw and db are zero.
  absl::StatusOr<Tensor> y =
      dense_forward(f32({}, {0, 2}), f32({1, 2, 3, 4}, {2, 2}), f32({1, 1}, {2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), (Shape{0, 2}));
  absl::StatusOr<DenseGradients> g =
      dense_backward(f32({}, {0, 2}), f32({1, 2, 3, 4}, {2, 2}), f32({}, {0, 2}));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->dw, f32({0, 0, 0, 0}, {2, 2}));
  EXPECT_EQ(g->db, f32({0, 0}, {2}));
  // No inputs: y is just the bias.
  y = dense_forward(f32({}, {2, 0}), f32({}, {0, 2}), f32({1, 2}, {2}));
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(*y, f32({1, 2, 1, 2}, {2, 2}));
}

TEST(DenseTest, RejectsBadShapesAndDtypes) {
  const Tensor x = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  const Tensor w = f32({1, 2, 3, 4, 5, 6}, {3, 2});
  const Tensor b = f32({1, 2}, {2});

  absl::StatusOr<Tensor> y = dense_forward(f32({1, 2, 3}, {3}), w, b);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("'x' has shape [3] (rank 1)"));

  y = dense_forward(x, f32({1, 2, 3, 4}, {2, 2}), b);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()),
              HasSubstr("'w' has shape [2, 2], expected [3, out]"));

  y = dense_forward(x, w, f32({1, 2, 3}, {3}));
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("'b' has shape [3], expected [2]"));

  y = dense_forward(x, Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2}), b);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("expected dtype float32"));

  y = dense_forward(Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3}), w, b);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("'x' is int32"));

  y = dense_forward(Tensor(), w, b);
  EXPECT_EQ(y.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(y.status().message()), HasSubstr("invalid"));

  absl::StatusOr<DenseGradients> g = dense_backward(x, w, f32({1, 2, 3}, {1, 3}));
  EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(g.status().message()),
              HasSubstr("nn::dense_backward: 'dy' has shape [1, 3], expected [2, 2]"));
}

}  // namespace
}  // namespace psflow::nn
