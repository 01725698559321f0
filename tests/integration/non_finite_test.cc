// NonFinitePolicy on real ps processes: a NaN gradient is refused with an
// error naming the variable and the task, nothing in its request applies
// (not even the optimizer's step count) and the ps keeps serving; started
// with --non-finite-updates=allow (LocalClusterOptions::server_flags) the
// ps applies it, as TensorFlow does.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/optimizer.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

struct Model {
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<ParameterServerStrategy> strategy;
  ShardedVariable w;
  std::optional<Optimizer> optimizer;
};

Model start(std::vector<std::string> server_flags) {
  Model m;
  LocalClusterOptions options;
  options.num_ps = 1;
  options.num_workers = 1;
  options.binary_path = PSFLOW_BINARY_PATH;
  options.server_flags = std::move(server_flags);
  m.cluster = ok_value(LocalCluster::start(options));
  m.strategy = ok_value(ParameterServerStrategy::create(
      SimpleClusterResolver(m.cluster->cluster_spec(), "chief", 0)));
  StrategyScope scope = m.strategy->scope();
  m.w = ok_value(create_variable(Tensor::from_vector<float>({1, 2, 3}, {3}), {.name = "w"}));
  OptimizerConfig sgd;
  m.optimizer = ok_value(Optimizer::create(sgd, 0.5));
  return m;
}

absl::Status step(const Model& m, float g) {
  return m.optimizer->apply_gradients({{Tensor::from_vector<float>({1, g, 1}, {3}), m.w}});
}

int64_t iterations(const Model& m) {
  return ok_value(m.optimizer->iterations().read_value()).scalar_value<int64_t>();
}

TEST(NonFiniteUpdatesTest, ANanGradientIsRefusedNamingTheVariableAndNothingApplies) {
  const Model m = start({});
  const absl::Status status = step(m, std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(status.message(), HasSubstr("APPLY_DENSE 'w'"));
  EXPECT_THAT(status.message(), HasSubstr("the gradient holds nan at element 1 of 3"));
  EXPECT_EQ(ok_value(m.w.read_value()), Tensor::from_vector<float>({1, 2, 3}, {3}));
  EXPECT_EQ(iterations(m), 0);

  ASSERT_TRUE(step(m, 1).ok());
  EXPECT_EQ(ok_value(m.w.read_value()), Tensor::from_vector<float>({0.5f, 1.5f, 2.5f}, {3}));
  EXPECT_EQ(iterations(m), 1);
}

TEST(NonFiniteUpdatesTest, AllowedByAServerFlagTheyApplyAsInTensorFlow) {
  const Model m = start({"--non-finite-updates=allow"});
  ASSERT_TRUE(step(m, std::numeric_limits<float>::infinity()).ok());
  const Tensor w = ok_value(m.w.read_value());
  EXPECT_EQ(w.flat<float>()[0], 0.5f);
  EXPECT_TRUE(std::isinf(w.flat<float>()[1]));
  EXPECT_EQ(iterations(m), 1);
}

}  // namespace
}  // namespace psflow::internal
