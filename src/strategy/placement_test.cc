// Placement of new variables: the fewest-bytes default and TF's round
// robin (ParameterServerStrategyOptions::placement), on in-process ps.
#include "strategy/placement.h"

#include <set>
#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "strategy/strategy_internal.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::test_cluster_spec;
using ::psflow::internal::testing::value_or_fail;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const ParameterServerStrategyOptions kRoundRobin{.placement = VariablePlacement::kRoundRobin};

std::vector<int> tasks(const ShardedVariable& v) {
  std::vector<int> out;
  for (const Variable& p : v.variables()) out.push_back(p.task());
  return out;
}

Partitioner fixed(int n) { return value_or_fail(fixed_shards_partitioner(n)); }

ShardedVariable make(ParameterServerStrategy& s, Shape shape, DType dtype = DType::kFloat32) {
  return value_or_fail(s.create_variable(Tensor(dtype, std::move(shape))));
}

TEST(PlacementTest, PartBytesCountElementsTimesDtypeSize) {
  EXPECT_EQ(part_bytes(DType::kFloat32, {}, 0), 4);
  EXPECT_EQ(part_bytes(DType::kInt64, {}, 0), 8);
  EXPECT_EQ(part_bytes(DType::kFloat32, {784, 256}, 392), 392 * 256 * 4);
  EXPECT_EQ(part_bytes(DType::kFloat64, {10, 3, 2}, 4), 4 * 3 * 2 * 8);
  EXPECT_EQ(part_bytes(DType::kString, {5}, 5), 5 * 16);
  EXPECT_EQ(part_bytes(DType::kFloat32, {0, 7}, 0), 0);
}

TEST(PlacementTest, FewestBytesIsTheDefaultAndNamed) {
  LocalPsCluster cluster(2);
  EXPECT_EQ(cluster.strategy->placement(), VariablePlacement::kFewestBytes);
  EXPECT_EQ(variable_placement_name(VariablePlacement::kFewestBytes), "fewest_bytes");
  EXPECT_EQ(variable_placement_name(VariablePlacement::kRoundRobin), "round_robin");
  EXPECT_EQ(variable_placement_name(static_cast<VariablePlacement>(7)), "");
}

TEST(PlacementTest, AnUnknownPlacementIsRefused) {
  auto s = create_strategy(
      SimpleClusterResolver(test_cluster_spec(2), "chief", 0), nullptr,
      {.placement = static_cast<VariablePlacement>(7)}, [](const ClusterSpec&, int) {
        return absl::StatusOr<std::shared_ptr<VariableClient>>(absl::InternalError("not reached"));
      });
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.status().message(), HasSubstr("placement 7 is not a VariablePlacement"));
}

// Equal sizes: TF's testVariablePlacement order (3 ps: 0, 1, 2, 0, ...),
// whichever rule, sharded or not.
TEST(PlacementTest, EqualSizesLandAsTfsRoundRobin) {
  for (bool sharded : {false, true}) {
    LocalPsCluster fewest(3, sharded ? fixed(2) : nullptr);
    LocalPsCluster robin(3, sharded ? fixed(2) : nullptr, kRoundRobin);
    std::vector<int> a;
    std::vector<int> b;
    for (int i = 0; i < 7; ++i) {
      for (int t : tasks(make(*fewest.strategy, {4, 3}))) a.push_back(t);
      for (int t : tasks(make(*robin.strategy, {4, 3}))) b.push_back(t);
    }
    EXPECT_EQ(a, b) << "sharded " << sharded;
    ASSERT_GE(a.size(), 4u);
    EXPECT_THAT(std::vector<int>(a.begin(), a.begin() + 4), ElementsAre(0, 1, 2, 0));
  }
}

// The MLP without a partitioner: round robin puts both kernels on
// ps 0; fewest bytes sends every later variable to the emptier task.
TEST(PlacementTest, FewestBytesFollowsSizesWhereRoundRobinDoesNot) {
  const std::vector<Shape> mlp = {{784, 256}, {256}, {256, 10}, {10}, {}};
  LocalPsCluster fewest(2);
  LocalPsCluster robin(2, nullptr, kRoundRobin);
  std::vector<int> a;
  std::vector<int> b;
  for (const Shape& s : mlp) {
    a.push_back(tasks(make(*fewest.strategy, s))[0]);
    b.push_back(tasks(make(*robin.strategy, s))[0]);
  }
  EXPECT_THAT(a, ElementsAre(0, 1, 1, 1, 1));
  EXPECT_THAT(b, ElementsAre(0, 1, 0, 1, 0));  // TF's order, unchanged
  EXPECT_THAT(fewest.strategy->placed_bytes(),
              ElementsAre(784 * 256 * 4, 256 * 4 + 256 * 10 * 4 + 10 * 4 + 4));
  EXPECT_THAT(robin.strategy->placed_bytes(),
              ElementsAre(784 * 256 * 4 + 256 * 10 * 4 + 4, 256 * 4 + 10 * 4));
}

TEST(PlacementTest, TiesGoToTheLowestIndex) {
  LocalPsCluster cluster(4);
  ParameterServerStrategy& s = *cluster.strategy;
  EXPECT_THAT(tasks(make(s, {10})), ElementsAre(0));  // 40, 0, 0, 0
  EXPECT_THAT(tasks(make(s, {5})), ElementsAre(1));   // 40, 20, 0, 0
  EXPECT_THAT(tasks(make(s, {5})), ElementsAre(2));   // 40, 20, 20, 0
  EXPECT_THAT(tasks(make(s, {5})), ElementsAre(3));   // 40, 20, 20, 20
  EXPECT_THAT(tasks(make(s, {5})), ElementsAre(1));   // tie of 1, 2, 3 -> 1
  EXPECT_THAT(tasks(make(s, {2})), ElementsAre(2));   // 40, 40, 20, 20 -> 2
  EXPECT_THAT(s.placed_bytes(), ElementsAre(40, 40, 28, 20));
  // The counter still counts every variable (TF's _variable_count).
  PsLoad load;
  load.bytes = {0, 0};
  EXPECT_THAT(place_parts(VariablePlacement::kFewestBytes, {3, 3, 3}, load), ElementsAre(0, 1, 0));
  EXPECT_EQ(load.variable_count, 3);
}

// Shards of one variable on distinct tasks even when one task is far
// emptier than the others: greedy alone would stack them there.
TEST(PlacementTest, ShardsOfOneVariableLandOnDistinctTasks) {
  LocalPsCluster cluster(3, fixed(3));
  ParameterServerStrategy& s = *cluster.strategy;
  EXPECT_THAT(tasks(make(s, {1, 100})), ElementsAre(0));  // rows < shards: one part
  EXPECT_THAT(tasks(make(s, {1, 100})), ElementsAre(1));  // ps 2 is empty
  const ShardedVariable small = make(s, {3, 2});          // 3 shards of 8 bytes
  const std::vector<int> small_tasks = tasks(small);
  EXPECT_THAT(small_tasks, ElementsAre(2, 0, 1));
  EXPECT_EQ(std::set<int>(small_tasks.begin(), small_tasks.end()).size(), 3u);
  EXPECT_EQ(value_or_fail(small.read_value()), Tensor(DType::kFloat32, {3, 2}));
  // Two shards over three tasks: the two emptiest, distinct.
  LocalPsCluster two(3, fixed(2));
  EXPECT_THAT(tasks(make(*two.strategy, {1, 100})), ElementsAre(0));
  EXPECT_THAT(tasks(make(*two.strategy, {2, 1})), ElementsAre(1, 2));
}

// More shards than tasks: every run of num_ps consecutive shards covers
// every task once, and the bytes end balanced.
TEST(PlacementTest, MoreShardsThanTasksCoverEveryTaskPerRound) {
  LocalPsCluster cluster(2, fixed(5));
  ParameterServerStrategy& s = *cluster.strategy;
  (void)make(s, {1, 50});  // ps 0 holds 200 bytes first
  const std::vector<int> t = tasks(make(s, {5, 20}));
  ASSERT_EQ(t.size(), 5u);
  EXPECT_THAT(t, ElementsAre(1, 0, 1, 0, 1));
  for (size_t i = 0; i + 1 < t.size(); i += 2) EXPECT_NE(t[i], t[i + 1]);
  EXPECT_THAT(s.placed_bytes(), ElementsAre(200 + 160, 240));
}

TEST(PlacementTest, RoundRobinOptionKeepsTfsCounterForShards) {
  // TF's layout test: a scalar on ps0, then 5 shards from counter 1.
  LocalPsCluster cluster(3, fixed(5), kRoundRobin);
  ParameterServerStrategy& s = *cluster.strategy;
  EXPECT_EQ(s.placement(), VariablePlacement::kRoundRobin);
  EXPECT_THAT(tasks(make(s, {1, 1000})), ElementsAre(0));
  EXPECT_THAT(tasks(make(s, {13, 2})), ElementsAre(1, 2, 0, 1, 2));
  EXPECT_THAT(tasks(make(s, {})), ElementsAre(0));
}

// Colocated variables take no counter slot but their bytes count.
TEST(PlacementTest, ColocatedBytesCountTowardsTheirTask) {
  LocalPsCluster cluster(2);
  StrategyScope scope = cluster.strategy->scope();
  ShardedVariable a = value_or_fail(create_variable(Tensor::scalar(0.0f)));  // ps0
  {
    ColocationScope colocate = cluster.strategy->colocate_vars_with(a);
    (void)value_or_fail(create_variable(Tensor(DType::kFloat32, {100})));  // ps0, 400 bytes
  }
  EXPECT_THAT(cluster.strategy->placed_bytes(), ElementsAre(404, 0));
  ShardedVariable next = value_or_fail(create_variable(Tensor::scalar(0.0f)));
  EXPECT_EQ(next.variables()[0].task(), 1);
  // A coordinator variable is on no ps.
  ShardedVariable local;
  std::thread([&] { local = value_or_fail(create_variable(Tensor(DType::kFloat32, {9}))); }).join();
  (void)value_or_fail(create_variable(Tensor(DType::kFloat32, {9}), {.colocate_with = local}));
  EXPECT_THAT(cluster.strategy->placed_bytes(), ElementsAre(404, 4));
}

// A coordinator that re-creates its variables in the same order (a restart)
// puts every part where the first one did.
TEST(PlacementTest, TheSameCreationsGiveTheSamePlacement) {
  const std::vector<Shape> shapes = {{300, 7}, {7}, {1000, 4}, {4}, {}, {64, 64}, {3}};
  std::vector<std::vector<int>> runs;
  for (int run = 0; run < 2; ++run) {
    LocalPsCluster cluster(3, value_or_fail(min_size_partitioner(4096, 3)));
    std::vector<int> all;
    for (const Shape& s : shapes) {
      for (int t : tasks(make(*cluster.strategy, s))) all.push_back(t);
    }
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_GT(runs[0].size(), shapes.size());  // some were sharded
}

// Creations from several threads are placed one at a time: every byte is
// counted once and the tasks stay within one variable of each other.
TEST(PlacementTest, ConcurrentCreationCountsEveryByteOnce) {
  LocalPsCluster cluster(3);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 15; ++i) (void)make(*cluster.strategy, {25});
    });
  }
  for (auto& t : threads) t.join();
  const std::vector<int64_t> bytes = cluster.strategy->placed_bytes();
  EXPECT_EQ(bytes[0] + bytes[1] + bytes[2], 60 * 100);
  EXPECT_THAT(bytes, ElementsAre(2000, 2000, 2000));
}

}  // namespace
}  // namespace psflow::internal
