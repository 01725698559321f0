// Optimizer: updates equal hand-computed references, one request per ps
// per step, and `iterations` counts steps on a ps.
#include "psflow/optimizer.h"

#include <cmath>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/strategy.h"
#include "strategy/partial_apply.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::value_or_fail;
using ::testing::HasSubstr;

OptimizerConfig sgd() { return OptimizerConfig{}; }

OptimizerConfig adagrad() {
  OptimizerConfig c;
  c.kind = OptimizerConfig::Kind::kAdagrad;
  return c;
}

std::vector<float> values_of(const ShardedVariable& v) {
  const Tensor t = value_or_fail(v.read_value());
  const auto flat = t.flat<float>();
  return {flat.begin(), flat.end()};
}

int64_t iterations_of(const Optimizer& o) {
  return value_or_fail(o.iterations().read_value()).scalar_value<int64_t>();
}

// A model with a sharded weight (3 parts, 3 ps) and a bias, made in scope.
struct Model {
  Model() : cluster(3, value_or_fail(fixed_shards_partitioner(3))) {
    StrategyScope scope = cluster.strategy->scope();
    w = value_or_fail(create_variable(
        Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2}), {.name = "w"}));
    b = value_or_fail(create_variable(Tensor::from_vector<float>({0.5f, -0.5f}), {.name = "b"}));
  }
  LocalPsCluster cluster;
  ShardedVariable w;
  ShardedVariable b;
};

TEST(StrategyOptimizerTest, SgdDenseMatchesHandComputation) {
  Model m;
  Optimizer opt = [&] {
    StrategyScope scope = m.cluster.strategy->scope();
    return value_or_fail(Optimizer::create(sgd(), 0.1));
  }();
  // iterations is an int64 scalar on a ps: counter 5, after w's 3 shards
  // and b's 2 (FixedShards(3) over 2 rows).
  ASSERT_EQ(m.b.num_parts(), 2u);
  ASSERT_EQ(opt.iterations().num_parts(), 1u);
  EXPECT_EQ(opt.iterations().variables()[0].device(), "/job:ps/replica:0/task:2/device:CPU:0");
  EXPECT_EQ(opt.iterations().name(), "sgd/iterations");
  EXPECT_EQ(opt.iterations().dtype(), DType::kInt64);

  const std::vector<float> g = {1, -1, 2, -2, 3, -3, 4, -4, 5, -5};
  std::vector<float> w = values_of(m.w);
  std::vector<float> b = values_of(m.b);
  for (int step = 0; step < 3; ++step) {
    m.cluster.reset_counts();
    ASSERT_TRUE(opt.apply_gradients({{Tensor::from_vector(g, {5, 2}), m.w},
                                     {Tensor::from_vector<float>({1, 1}), m.b}})
                    .ok());
    // One request per ps: the shards of w, b and the iterations increment
    // all share them.
    for (const auto& c : m.cluster.clients) EXPECT_EQ(c->requests(), 1);
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.1f * g[i];
    for (float& x : b) x -= 0.1f * 1;
  }
  const std::vector<float> got_w = values_of(m.w);
  const std::vector<float> got_b = values_of(m.b);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_FLOAT_EQ(got_w[i], w[i]) << i;
  for (size_t i = 0; i < b.size(); ++i) EXPECT_FLOAT_EQ(got_b[i], b[i]) << i;
  EXPECT_EQ(iterations_of(opt), 3);
}

TEST(StrategyOptimizerTest, AdagradSparseWithDuplicatesMatchesHandComputation) {
  Model m;
  Optimizer opt = value_or_fail(Optimizer::create(adagrad(), 0.5, {.name = "ada"}));
  // Made outside the scope: iterations stays on the coordinator.
  EXPECT_EQ(opt.iterations().variables()[0].job(), "chief");
  // Rows 0 and 4 are in shards 0 and 2; row 0 twice (summed first).
  const std::vector<int64_t> ids = {0, 4, 0};
  const std::vector<float> rows = {1, 2, 3, 4, 0.5f, 0.5f};
  std::vector<float> w = values_of(m.w);
  std::vector<float> acc(w.size(), 0.1f);  // initial_accumulator_value
  for (int step = 0; step < 2; ++step) {
    m.cluster.reset_counts();
    ASSERT_TRUE(opt.apply_gradients({{IndexedSlices{Tensor::from_vector(rows, {3, 2}),
                                                    Tensor::from_vector<int64_t>(ids)},
                                      m.w}})
                    .ok());
    EXPECT_EQ(m.cluster.clients[0]->requests(), 1);
    EXPECT_EQ(m.cluster.clients[1]->requests(), 0);  // shard 1 has no rows
    EXPECT_EQ(m.cluster.clients[2]->requests(), 1);
    std::vector<float> g(w.size(), 0);
    for (size_t k = 0; k < ids.size(); ++k) {
      for (size_t j = 0; j < 2; ++j) g[static_cast<size_t>(ids[k]) * 2 + j] += rows[k * 2 + j];
    }
    for (size_t i = 0; i < w.size(); ++i) {
      if (g[i] == 0) continue;  // untouched rows keep value and accumulator
      acc[i] += g[i] * g[i];
      w[i] -= 0.5f * g[i] / (std::sqrt(acc[i]) + 1e-7f);
    }
  }
  const std::vector<float> got = values_of(m.w);
  for (size_t i = 0; i < w.size(); ++i) EXPECT_NEAR(got[i], w[i], 1e-5) << i;
  EXPECT_EQ(iterations_of(opt), 2);
}

TEST(StrategyOptimizerTest, ShardedAndUnshardedSparseAdagradAgree) {
  Model m;
  LocalPsCluster plain_cluster(1);
  ShardedVariable plain = value_or_fail(
      plain_cluster.strategy->create_variable(value_or_fail(m.w.read_value()), {.name = "plain"}));
  Optimizer opt = value_or_fail(Optimizer::create(adagrad(), 0.3));
  const IndexedSlices grad{Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}),
                           Tensor::from_vector<int32_t>({4, 2, 3})};
  for (int step = 0; step < 3; ++step) {
    ASSERT_TRUE(opt.apply_gradients({{grad, m.w}, {grad, plain}}).ok());
  }
  EXPECT_EQ(value_or_fail(m.w.read_value()), value_or_fail(plain.read_value()));
}

TEST(StrategyOptimizerTest, ScheduleSeesTheStep) {
  LocalPsCluster cluster(2);
  StrategyScope scope = cluster.strategy->scope();
  ShardedVariable v = value_or_fail(create_variable(Tensor::scalar(10.0), {.name = "v"}));
  std::vector<int64_t> steps;
  auto schedule = [&steps](int64_t step) {
    steps.push_back(step);
    return 1.0 / static_cast<double>(step + 1);
  };
  Optimizer opt = value_or_fail(Optimizer::create(sgd(), schedule));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(opt.apply_gradients({{Tensor::scalar(1.0), v}}).ok());
  }
  EXPECT_THAT(steps, ::testing::ElementsAre(0, 1, 2));
  EXPECT_DOUBLE_EQ(value_or_fail(v.read_value()).scalar_value<double>(),
                   10.0 - 1.0 - 0.5 - 1.0 / 3);
  EXPECT_DOUBLE_EQ(opt.learning_rate(3), 0.25);
  // What a step's other updates (a dynamic table) use: the schedule at the
  // step the optimizer is at.
  EXPECT_DOUBLE_EQ(value_or_fail(internal::current_learning_rate(opt)), 0.25);

  // A worker rebuilding the optimizer adopts the same counter and reads it
  // once before its first step.
  ShardedVariable iterations = value_or_fail(
      ShardedVariable::from_handle(opt.iterations().handle(), cluster.strategy->client_lookup()));
  Optimizer adopted = value_or_fail(Optimizer::create(sgd(), schedule, {.iterations = iterations}));
  steps.clear();
  ASSERT_TRUE(adopted.apply_gradients({{Tensor::scalar(1.0), v}}).ok());
  ASSERT_TRUE(adopted.apply_gradients({{Tensor::scalar(1.0), v}}).ok());
  EXPECT_THAT(steps, ::testing::ElementsAre(3, 4));
  EXPECT_EQ(iterations_of(opt), 5);
}

TEST(StrategyOptimizerTest, MissingAndBadGradients) {
  Model m;
  Optimizer opt = value_or_fail(Optimizer::create(sgd(), 0.1));
  m.cluster.reset_counts();
  absl::Status none = opt.apply_gradients({{Tensor(), m.w}, {Tensor(), m.b}});
  ASSERT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.message(), HasSubstr("No gradients provided for any variable: ['w', 'b']"));

  absl::Status shape = opt.apply_gradients(
      {{Tensor::from_vector<float>({1, 1}), m.b}, {Tensor(DType::kFloat32, {4, 2}), m.w}});
  ASSERT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(shape.message(), HasSubstr("gradient for variable 'w' is float32 [4, 2]"));

  absl::Status ids = opt.apply_gradients(
      {{IndexedSlices{Tensor(DType::kFloat32, {1, 2}), Tensor::from_vector<int64_t>({5})}, m.w}});
  ASSERT_EQ(ids.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ids.message(), HasSubstr("row id 5 at position 0 is out of range"));
  // Nothing was sent for any of them.
  EXPECT_EQ(m.cluster.total_requests(), 0);
  EXPECT_EQ(iterations_of(opt), 0);

  // A missing gradient among present ones is skipped, as in TF.
  ASSERT_TRUE(
      opt.apply_gradients({{Tensor(), m.w}, {Tensor::from_vector<float>({1, 1}), m.b}}).ok());
  EXPECT_EQ(iterations_of(opt), 1);
}

TEST(StrategyOptimizerTest, CreationChecks) {
  OptimizerConfig bad = sgd();
  bad.kind = OptimizerConfig::Kind::kMomentum;
  bad.momentum = -1;
  EXPECT_EQ(Optimizer::create(bad, 0.1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Optimizer::create(sgd(), -0.1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Optimizer::create(sgd(), LearningRateSchedule()).status().code(),
            absl::StatusCode::kInvalidArgument);
  ShardedVariable wrong = value_or_fail(create_variable(Tensor::scalar(0.0f)));
  auto adopted = Optimizer::create(sgd(), 0.1, {.iterations = wrong});
  ASSERT_EQ(adopted.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(adopted.status().message(), HasSubstr("must be an int64 scalar"));
}

}  // namespace
}  // namespace psflow::internal
