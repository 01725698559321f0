// read_values: a worker step's reads, one request per ps in parallel.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::value_or_fail;

TEST(ReadValuesTest, OneRequestPerPsForManyVariables) {
  LocalPsCluster cluster(3, value_or_fail(fixed_shards_partitioner(3)));
  std::vector<ShardedVariable> vars;
  std::vector<Tensor> expected;
  {
    StrategyScope scope = cluster.strategy->scope();
    for (int i = 0; i < 7; ++i) {
      expected.push_back(Tensor::from_vector<float>({static_cast<float>(i), 1, 2, 3, 4, 5},
                                                    {3, 2}));  // 3 shards each
      vars.push_back(value_or_fail(create_variable(expected.back())));
      expected.push_back(Tensor::scalar<int64_t>(i));
      vars.push_back(value_or_fail(create_variable(expected.back())));
    }
  }
  // A coordinator variable joins the batch through its own client.
  expected.push_back(Tensor::scalar(3.5));
  vars.push_back(value_or_fail(create_variable(expected.back())));
  cluster.reset_counts();
  std::vector<Tensor> values = value_or_fail(read_values(vars));
  EXPECT_EQ(values, expected);
  for (const auto& c : cluster.clients) EXPECT_EQ(c->requests(), 1);
  // 7 * 3 shards + 7 scalars over 3 ps.
  EXPECT_EQ(cluster.clients[0]->ops() + cluster.clients[1]->ops() + cluster.clients[2]->ops(), 28);
}

TEST(ReadValuesTest, FailsWithTheTaskError) {
  LocalPsCluster cluster(2);
  ShardedVariable a = value_or_fail(cluster.strategy->create_variable(Tensor::scalar(1.0f)));
  ShardedVariable missing = value_or_fail(ShardedVariable::from_handle(
      VariableHandle{"m", DType::kFloat32, {}, {{"ps", 1, "missing", {}, 0}}},
      cluster.strategy->client_lookup()));
  auto r = read_values({a, missing});
  ASSERT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("missing"));
  EXPECT_EQ(value_or_fail(read_values({})).size(), 0u);
}

}  // namespace
}  // namespace psflow::internal
