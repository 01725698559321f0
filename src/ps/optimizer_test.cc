#include "ps/optimizer.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace psflow {
namespace {

using Kind = OptimizerConfig::Kind;

// Scalar reference implementations written from TF's op definitions
// (training_ops: ApplyGradientDescent, ApplyMomentum, ApplyAdagradV2,
// ApplyAdam, ApplyFtrl), independent of the Eigen code under test.
struct RefState {
  double w, s0 = 0, s1 = 0;
};

void reference_step(const OptimizerConfig& c, double lr, int64_t t, RefState& st, double g) {
  switch (c.kind) {
    case Kind::kSgd:
      st.w -= lr * g;
      break;
    case Kind::kMomentum:
      st.s0 = c.momentum * st.s0 + g;
      st.w -= c.nesterov ? lr * g + lr * c.momentum * st.s0 : lr * st.s0;
      break;
    case Kind::kAdagrad:
      st.s0 += g * g;
      st.w -= lr * g / (std::sqrt(st.s0) + c.epsilon);
      break;
    case Kind::kAdam: {
      const double lr_t = lr * std::sqrt(1 - std::pow(c.beta_2, t)) / (1 - std::pow(c.beta_1, t));
      st.s0 = c.beta_1 * st.s0 + (1 - c.beta_1) * g;
      st.s1 = c.beta_2 * st.s1 + (1 - c.beta_2) * g * g;
      st.w -= lr_t * st.s0 / (std::sqrt(st.s1) + c.epsilon);
      break;
    }
    case Kind::kFtrl: {
      const double p = -c.learning_rate_power;
      const double new_acc = st.s0 + g * g;
      st.s1 += g - (std::pow(new_acc, p) - std::pow(st.s0, p)) / lr * st.w;
      const double quadratic = (std::pow(new_acc, p) + c.beta) / lr + 2 * c.l2_regularization_strength;
      const double l1 = c.l1_regularization_strength;
      st.w = std::abs(st.s1) > l1 ? ((st.s1 > 0 ? l1 : -l1) - st.s1) / quadratic : 0.0;
      st.s0 = new_acc;
      break;
    }
  }
}

double initial_s0(const OptimizerConfig& c) {
  return (c.kind == Kind::kAdagrad || c.kind == Kind::kFtrl) ? c.initial_accumulator_value : 0.0;
}

std::vector<OptimizerConfig> all_configs() {
  std::vector<OptimizerConfig> out;
  OptimizerConfig c;
  c.kind = Kind::kSgd;
  out.push_back(c);
  c.kind = Kind::kMomentum;
  out.push_back(c);
  c.nesterov = true;
  out.push_back(c);
  c = {};
  c.kind = Kind::kAdagrad;
  out.push_back(c);
  c.kind = Kind::kAdam;
  out.push_back(c);
  c.kind = Kind::kFtrl;
  out.push_back(c);
  c.l1_regularization_strength = 0.01;
  c.l2_regularization_strength = 0.1;
  c.beta = 0.5;
  out.push_back(c);
  c.learning_rate_power = -0.7;
  out.push_back(c);
  return out;
}

std::string config_label(const OptimizerConfig& c) {
  return std::string(optimizer_name(c.kind)) + (c.nesterov ? "+nesterov" : "") +
         (c.l1_regularization_strength > 0 ? "+l1l2" : "") +
         (c.learning_rate_power != -0.5 ? "+power" : "");
}

TEST(OptimizerTest, DenseMatchesScalarReferenceForEveryOptimizer) {
  const std::vector<double> w0 = {0.5, -1.25, 2.0, 0.0, 3.5, -0.75};
  const std::vector<std::vector<double>> grads = {
      {0.1, -0.2, 0.3, -0.4, 0.5, 0.0},
      {-0.3, 0.2, 0.1, 0.05, -0.5, 0.25},
      {0.7, 0.7, -0.7, 0.1, 0.2, -0.3}};
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    Tensor var = Tensor::from_vector<double>(w0, {2, 3});
    OptimizerSlots slots;
    std::vector<RefState> ref;
    for (double w : w0) ref.push_back(RefState{w, initial_s0(c), 0});
    for (size_t step = 0; step < grads.size(); ++step) {
      const double lr = 0.05 * static_cast<double>(step + 1);
      ASSERT_TRUE(apply_dense_gradient(c, lr, var, slots,
                                       Tensor::from_vector<double>(grads[step], {2, 3}))
                      .ok());
      for (size_t i = 0; i < ref.size(); ++i) {
        reference_step(c, lr, static_cast<int64_t>(step + 1), ref[i], grads[step][i]);
      }
    }
    EXPECT_EQ(slots.steps, 3);
    EXPECT_EQ(slots.optimizer, optimizer_name(c.kind));
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_NEAR(var.flat<double>()[i], ref[i].w, 1e-12) << "element " << i;
    }
  }
}

TEST(OptimizerTest, Float32DenseAdamTracksFloat64Reference) {
  OptimizerConfig c;
  c.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1.0f, -2.0f, 0.5f}, {3});
  OptimizerSlots slots;
  std::vector<RefState> ref = {{1.0}, {-2.0}, {0.5}};
  const std::vector<float> g = {0.25f, -0.5f, 1.0f};
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE(apply_dense_gradient(c, 0.01, var, slots, Tensor::from_vector<float>(g, {3})).ok());
    for (size_t i = 0; i < 3; ++i) reference_step(c, 0.01, step, ref[i], g[i]);
  }
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(var.flat<float>()[i], ref[i].w, 1e-5);
}

TEST(OptimizerTest, SparseSumsDuplicatesAndTouchesOnlyGivenRows) {
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    // 4 rows of width 2.
    const std::vector<double> w0 = {1, 2, 3, 4, 5, 6, 7, 8};
    Tensor var = Tensor::from_vector<double>(w0, {4, 2});
    OptimizerSlots slots;
    Tensor ids = Tensor::from_vector<int64_t>({2, 0, 2}, {3});
    Tensor rows = Tensor::from_vector<double>({0.5, -0.5, 1.0, 1.0, 0.25, 0.75}, {3, 2});
    ASSERT_TRUE(apply_sparse_gradient(c, 0.1, var, slots, ids, rows).ok());
    // Row 2 receives the sum of its two gradient rows, row 0 its one row.
    const std::vector<std::pair<int, std::vector<double>>> touched = {
        {0, {1.0, 1.0}}, {2, {0.75, 0.25}}};
    std::vector<double> expected = w0;
    for (const auto& [row, g] : touched) {
      for (int j = 0; j < 2; ++j) {
        RefState st{w0[row * 2 + j], initial_s0(c), 0};
        reference_step(c, 0.1, 1, st, g[j]);
        expected[row * 2 + j] = st.w;
      }
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(var.flat<double>()[i], expected[i], 1e-12) << "element " << i;
    }
  }
}

TEST(OptimizerTest, SparseEqualsDenseWhenEveryRowIsGivenOnce) {
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    const std::vector<double> w0 = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    const std::vector<double> g = {0.3, -0.1, 0.2, 0.4, -0.6, 0.05};
    Tensor dense = Tensor::from_vector<double>(w0, {3, 2});
    Tensor sparse = Tensor::from_vector<double>(w0, {3, 2});
    OptimizerSlots ds, ss;
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(apply_dense_gradient(c, 0.2, dense, ds, Tensor::from_vector<double>(g, {3, 2})).ok());
      ASSERT_TRUE(apply_sparse_gradient(c, 0.2, sparse, ss,
                                        Tensor::from_vector<int32_t>({0, 1, 2}, {3}),
                                        Tensor::from_vector<double>(g, {3, 2}))
                      .ok());
    }
    ASSERT_TRUE(all_close(dense, sparse, 1e-12, 1e-12).ok());
  }
}

TEST(OptimizerTest, RejectsBadInputWithoutChangingAnything) {
  OptimizerConfig adam;
  adam.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  const Tensor before = var.clone();
  OptimizerSlots slots;

  auto s = apply_dense_gradient(adam, 0.1, var, slots, Tensor::from_vector<float>({1, 2}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2, 2]"), absl::string_view::npos) << s;

  s = apply_dense_gradient(adam, -1, var, slots, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  s = apply_sparse_gradient(adam, 0.1, var, slots, Tensor::from_vector<int64_t>({0, 2}, {2}),
                            Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("row id 2"), absl::string_view::npos) << s;

  s = apply_sparse_gradient(adam, 0.1, var, slots, Tensor::from_vector<int64_t>({0}, {1}),
                            Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  OptimizerConfig bad = adam;
  bad.beta_1 = 1.5;
  s = apply_dense_gradient(bad, 0.1, var, slots, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("beta_1"), absl::string_view::npos) << s;

  Tensor ints = Tensor::from_vector<int32_t>({1, 2}, {2});
  s = apply_dense_gradient(adam, 0.1, ints, slots, Tensor::from_vector<int32_t>({1, 2}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(var, before);
  EXPECT_TRUE(slots.optimizer.empty());
  EXPECT_EQ(slots.steps, 0);
}

TEST(OptimizerTest, SlotsBelongToOneOptimizer) {
  OptimizerConfig adagrad;
  adagrad.kind = Kind::kAdagrad;
  OptimizerConfig adam;
  adam.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1, 2}, {2});
  OptimizerSlots slots;
  const Tensor g = Tensor::from_vector<float>({0.5f, 0.5f}, {2});
  ASSERT_TRUE(apply_dense_gradient(adagrad, 0.1, var, slots, g).ok());
  const Tensor after_one = var.clone();
  auto s = apply_dense_gradient(adam, 0.1, var, slots, g);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("adagrad"), absl::string_view::npos) << s;
  EXPECT_EQ(var, after_one);
  ASSERT_EQ(slots.slots.count("accumulator"), 1u);
  // Adagrad's accumulator starts at 0.1 and gained 0.25.
  EXPECT_NEAR(slots.slots.at("accumulator").flat<float>()[0], 0.35f, 1e-6);
}

TEST(OptimizerTest, NamesRoundTripAndUnknownNamesAreRejected) {
  for (Kind k : {Kind::kSgd, Kind::kMomentum, Kind::kAdagrad, Kind::kAdam, Kind::kFtrl}) {
    auto parsed = optimizer_kind_from_name(optimizer_name(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  auto bad = optimizer_kind_from_name("rmsprop");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("rmsprop"), absl::string_view::npos);
}

}  // namespace
}  // namespace psflow
