// ParameterServerStrategy: validation, scopes, placement, naming and
// partitioning (TF's parameter_server_strategy_v2_test, on in-process ps).
#include "psflow/strategy.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/partitioners.h"
#include "strategy/client_lookup.h"
#include "strategy/strategy_internal.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::test_cluster_spec;
using ::psflow::internal::testing::value_or_fail;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> devices(const ShardedVariable& v) {
  std::vector<std::string> out;
  for (const Variable& p : v.variables()) out.push_back(p.device());
  return out;
}

std::vector<std::string> names(const ShardedVariable& v) {
  std::vector<std::string> out;
  for (const Variable& p : v.variables()) out.push_back(p.name());
  return out;
}

std::vector<Shape> shapes(const ShardedVariable& v) {
  std::vector<Shape> out;
  for (const Variable& p : v.variables()) out.push_back(p.shape());
  return out;
}

Partitioner fixed(int n) { return value_or_fail(fixed_shards_partitioner(n)); }

Partitioner returning(std::vector<int64_t> result) {
  return [result](const Shape&, DType) -> absl::StatusOr<std::vector<int64_t>> { return result; };
}

TEST(StrategyTest, ValidatesTheClusterWithTfMessages) {
  auto no_ps = ParameterServerStrategy::create(SimpleClusterResolver(
      ClusterSpec({{"chief", {"127.0.0.1:1"}}, {"worker", {"127.0.0.1:2"}}}), "chief", 0));
  ASSERT_EQ(no_ps.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_ps.status().message(), HasSubstr("There must be at least one ps."));

  auto empty = ParameterServerStrategy::create(SimpleClusterResolver(ClusterSpec()));
  ASSERT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(), HasSubstr("Cluster spec must be non-empty"));

  auto sparse = ParameterServerStrategy::create(
      SimpleClusterResolver(ClusterSpec(std::map<std::string, ClusterSpec::Tasks>{
          {"worker", {{0, "127.0.0.1:2"}}}, {"ps", {{1, "127.0.0.1:3"}}}})));
  ASSERT_EQ(sparse.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sparse.status().message(), HasSubstr("ps tasks must be numbered 0..0"));
}

TEST(StrategyTest, FactoryErrorsNameTheTask) {
  auto factory = [](const ClusterSpec&,
                    int task) -> absl::StatusOr<std::shared_ptr<VariableClient>> {
    if (task == 1) return absl::UnavailableError("refused");
    return std::shared_ptr<VariableClient>(
        make_local_variable_client(std::make_shared<VariableStore>(), "ps"));
  };
  auto s = create_strategy(SimpleClusterResolver(test_cluster_spec(2), "chief", 0), nullptr, {},
                           factory);
  ASSERT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.status().message(), HasSubstr("/job:ps/replica:0/task:1: refused"));
}

// TF's testVariablePlacement and the class docstring's v1..v5 example.
TEST(StrategyTest, RoundRobinPlacementAndCoordinatorVariables) {
  LocalPsCluster cluster(3);
  ParameterServerStrategy& strategy = *cluster.strategy;
  ShardedVariable v1 = value_or_fail(create_variable(Tensor::scalar(0.0f)));
  ShardedVariable v2, v3, v4, v5;
  {
    StrategyScope scope = strategy.scope();
    EXPECT_EQ(get_strategy(), &strategy);
    v2 = value_or_fail(create_variable(Tensor::scalar(1.0f)));
    v3 = value_or_fail(create_variable(Tensor::scalar(2.0f)));
    v4 = value_or_fail(create_variable(Tensor::scalar(3.0f)));
    v5 = value_or_fail(create_variable(Tensor::scalar(4.0f)));
  }
  EXPECT_FALSE(has_strategy());
  EXPECT_THAT(devices(v1), ElementsAre("/job:chief/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(devices(v2), ElementsAre("/job:ps/replica:0/task:0/device:CPU:0"));
  EXPECT_THAT(devices(v3), ElementsAre("/job:ps/replica:0/task:1/device:CPU:0"));
  EXPECT_THAT(devices(v4), ElementsAre("/job:ps/replica:0/task:2/device:CPU:0"));
  EXPECT_THAT(devices(v5), ElementsAre("/job:ps/replica:0/task:0/device:CPU:0"));
  // The values really live on those tasks.
  EXPECT_EQ(cluster.stored(0, v2.name()), Tensor::scalar(1.0f));
  EXPECT_EQ(cluster.stored(2, v4.name()), Tensor::scalar(3.0f));
  EXPECT_EQ(cluster.stored(0, v5.name()), Tensor::scalar(4.0f));
  EXPECT_EQ(value_or_fail(v1.read_value()), Tensor::scalar(0.0f));
  EXPECT_EQ(value_or_fail(v3.read_value()), Tensor::scalar(2.0f));
  // Made outside the scope, no ps saw v1.
  EXPECT_EQ(cluster.stores[0]->size() + cluster.stores[1]->size() + cluster.stores[2]->size(), 4u);
  EXPECT_EQ(v2.dtype(), DType::kFloat32);
  EXPECT_TRUE(v2.shape().empty());
}

TEST(StrategyTest, MemberCreateVariableNeedsNoScope) {
  LocalPsCluster cluster(2);
  ShardedVariable a = value_or_fail(cluster.strategy->create_variable(Tensor::scalar(1)));
  ShardedVariable b = value_or_fail(cluster.strategy->create_variable(Tensor::scalar(2)));
  EXPECT_EQ(a.variables()[0].task(), 0);
  EXPECT_EQ(b.variables()[0].task(), 1);
  EXPECT_EQ(a.variables()[0].job(), "ps");
}

TEST(StrategyTest, NamesAreUniquifiedLikeTf) {
  LocalPsCluster cluster(2);
  StrategyScope scope = cluster.strategy->scope();
  auto make = [](std::string name) {
    return value_or_fail(create_variable(Tensor::scalar(1.0f), {.name = std::move(name)})).name();
  };
  EXPECT_EQ(make("w"), "w");
  EXPECT_EQ(make("w"), "w_1");
  EXPECT_EQ(make("w"), "w_2");
  EXPECT_EQ(make("w_1"), "w_1_1");
  EXPECT_EQ(make(""), "Variable");
  EXPECT_EQ(make(""), "Variable_1");
  // Stored names never collide: all six live side by side.
  EXPECT_EQ(cluster.stores[0]->size() + cluster.stores[1]->size(), 6u);
}

TEST(StrategyTest, CoordinatorVariablesHaveTheirOwnNamespace) {
  const std::string first =
      value_or_fail(create_variable(Tensor::scalar(1.0f), {.name = "local_ns"})).name();
  const std::string second =
      value_or_fail(create_variable(Tensor::scalar(1.0f), {.name = "local_ns"})).name();
  EXPECT_EQ(first, "local_ns");
  EXPECT_EQ(second, "local_ns_1");
}

TEST(StrategyTest, CoordinatorVariablesCopyTheirInitialValue) {
  Tensor init = Tensor::from_vector<float>({1, 2});
  ShardedVariable v = value_or_fail(create_variable(init));
  init.mutable_flat<float>()[0] = 100;  // the caller keeps using its tensor
  EXPECT_EQ(value_or_fail(v.read_value()), Tensor::from_vector<float>({1, 2}));
  ASSERT_TRUE(v.assign_add(Tensor::from_vector<float>({1, 1})).ok());
  EXPECT_EQ(init, Tensor::from_vector<float>({100, 2}));
}

TEST(StrategyTest, ScopesAreThreadLocalAndNest) {
  LocalPsCluster cluster(1);
  StrategyScope outer = cluster.strategy->scope();
  {
    StrategyScope inner = cluster.strategy->scope();
    EXPECT_EQ(get_strategy(), cluster.strategy.get());
  }
  EXPECT_EQ(get_strategy(), cluster.strategy.get());
  std::string other_thread_device;
  std::thread t([&] {
    other_thread_device =
        value_or_fail(create_variable(Tensor::scalar(1.0f))).variables()[0].device();
  });
  t.join();
  EXPECT_EQ(other_thread_device, "/job:chief/replica:0/task:0/device:CPU:0");
}

TEST(StrategyTest, MixingStrategiesFails) {
  LocalPsCluster a(1);
  LocalPsCluster b(1);
  StrategyScope sa = a.strategy->scope();
  {
    StrategyScope sb = b.strategy->scope();
    auto v = create_variable(Tensor::scalar(1.0f));
    ASSERT_EQ(v.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(v.status().message(), HasSubstr("Mixing different ParameterServerStrategy"));
  }
  EXPECT_TRUE(create_variable(Tensor::scalar(1.0f)).ok());
}

// TF's testInvalidPartitioner: None / [] / [0,1,1] / [2,2,1].
TEST(StrategyTest, InvalidPartitionerResults) {
  const std::vector<std::vector<int64_t>> bad = {{}, {0, 1, 1}, {2, 2, 1}};
  const std::vector<std::string> shown = {"got: []", "got: [0, 1, 1]", "got: [2, 2, 1]"};
  for (size_t i = 0; i < bad.size(); ++i) {
    LocalPsCluster cluster(2, returning(bad[i]));
    auto v = cluster.strategy->create_variable(Tensor(DType::kFloat32, {4, 2, 3}));
    ASSERT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument) << shown[i];
    EXPECT_THAT(v.status().message(),
                HasSubstr("variable_partitioner must return a list/tuple whose elements are 1 "
                          "besides the first element (non-zero), " +
                          shown[i]));
  }
  // A failing partitioner (Python's None has no closer C++ form) passes its
  // error on, naming the variable.
  LocalPsCluster failing(2, [](const Shape&, DType) -> absl::StatusOr<std::vector<int64_t>> {
    return absl::InvalidArgumentError("no plan");
  });
  auto v = failing.strategy->create_variable(Tensor(DType::kFloat32, {4}), {.name = "w"});
  ASSERT_EQ(v.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(v.status().message(), HasSubstr("variable 'w' of shape [4]: no plan"));
}

TEST(StrategyTest, PartitionedVariableUsesDivLayoutAndTheSharedCounter) {
  LocalPsCluster cluster(3, fixed(5));
  StrategyScope scope = cluster.strategy->scope();
  ShardedVariable before = value_or_fail(create_variable(Tensor::scalar(0.0f)));  // ps0
  std::vector<float> values(13 * 2);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const Tensor full = Tensor::from_vector(values, {13, 2});
  ShardedVariable w = value_or_fail(create_variable(full, {.name = "w"}));
  ShardedVariable after = value_or_fail(create_variable(Tensor::scalar(0.0f)));

  EXPECT_EQ(before.variables()[0].task(), 0);
  EXPECT_EQ(w.name(), "w");
  EXPECT_EQ(w.shape(), (Shape{13, 2}));
  EXPECT_THAT(names(w), ElementsAre("w/part_0", "w/part_1", "w/part_2", "w/part_3", "w/part_4"));
  EXPECT_THAT(shapes(w),
              ElementsAre(Shape{3, 2}, Shape{3, 2}, Shape{3, 2}, Shape{2, 2}, Shape{2, 2}));
  EXPECT_THAT(w.offsets(), ElementsAre(0, 3, 6, 9, 11, 13));
  // Counter 1..5 for the shards, then 6 for `after`.
  EXPECT_THAT(
      devices(w),
      ElementsAre("/job:ps/replica:0/task:1/device:CPU:0", "/job:ps/replica:0/task:2/device:CPU:0",
                  "/job:ps/replica:0/task:0/device:CPU:0", "/job:ps/replica:0/task:1/device:CPU:0",
                  "/job:ps/replica:0/task:2/device:CPU:0"));
  EXPECT_EQ(after.variables()[0].task(), 0);
  // Each shard holds its slice of the full value.
  EXPECT_EQ(cluster.stored(2, "w/part_4"), full.slice(11, 13));
  EXPECT_EQ(cluster.stored(0, "w/part_2"), full.slice(6, 9));
  EXPECT_EQ(value_or_fail(w.read_value()), full);
  // Scalars are never partitioned.
  EXPECT_EQ(after.num_parts(), 1u);
}

TEST(StrategyTest, PartitionEdgeCases) {
  // TF's testNumPartitionsLargerThanSize: 3 rows with FixedShards(4).
  LocalPsCluster cluster(2, fixed(4));
  ShardedVariable three =
      value_or_fail(cluster.strategy->create_variable(Tensor(DType::kInt32, {3}), {.name = "t"}));
  EXPECT_THAT(shapes(three), ElementsAre(Shape{1}, Shape{1}, Shape{1}));
  // A partitioner asking for 2 parts of a one-row variable: one part, still
  // named as a shard (TF's n = min(parts, rows)).
  LocalPsCluster two(2, returning({2, 1}));
  ShardedVariable one =
      value_or_fail(two.strategy->create_variable(Tensor(DType::kFloat32, {1, 4}), {.name = "o"}));
  EXPECT_THAT(names(one), ElementsAre("o/part_0"));
  // [1, 1]: a plain variable.
  LocalPsCluster plain(2, returning({1, 1}));
  ShardedVariable p = value_or_fail(
      plain.strategy->create_variable(Tensor(DType::kFloat32, {6, 4}), {.name = "p"}));
  EXPECT_THAT(names(p), ElementsAre("p"));
  // Part names are reserved: a later "o/part_0" gets uniquified.
  ShardedVariable clash =
      value_or_fail(two.strategy->create_variable(Tensor::scalar(1.0f), {.name = "o/part_0"}));
  EXPECT_EQ(clash.name(), "o/part_0_1");
}

// TF's testCustomPartitionAwareInitializer: a 4x4 identity in 2 shards.
TEST(StrategyTest, PartitionAwareInitializer) {
  LocalPsCluster cluster(2, fixed(2));
  std::vector<std::pair<Shape, Shape>> calls;
  Initializer identity{DType::kFloat32,
                       {4, 4},
                       [&calls](const Shape& shape, const Shape& offset) -> absl::StatusOr<Tensor> {
                         calls.emplace_back(shape, offset);
                         Tensor t(DType::kFloat32, shape);
                         for (int64_t r = 0; r < shape[0]; ++r) {
                           t.mutable_at<float>({r, r + offset[0]}) = 1.0f;
                         }
                         return t;
                       }};
  ShardedVariable v = value_or_fail(cluster.strategy->create_variable(identity, {.name = "eye"}));
  EXPECT_THAT(calls, ElementsAre(std::make_pair(Shape{2, 4}, Shape{0, 0}),
                                 std::make_pair(Shape{2, 4}, Shape{2, 0})));
  EXPECT_EQ(value_or_fail(v.variables()[0].read_value()),
            Tensor::from_vector<float>({1, 0, 0, 0, 0, 1, 0, 0}, {2, 4}));
  EXPECT_EQ(value_or_fail(v.variables()[1].read_value()),
            Tensor::from_vector<float>({0, 0, 1, 0, 0, 0, 0, 1}, {2, 4}));
}

TEST(StrategyTest, InitializerReturningTheFullValueIsSliced) {
  LocalPsCluster cluster(2, fixed(2));
  const Tensor full = Tensor::from_vector<int64_t>({1, 2, 3, 4, 5});
  Initializer init{DType::kInt64,
                   {5},
                   [&full](const Shape&, const Shape&) -> absl::StatusOr<Tensor> { return full; }};
  ShardedVariable v = value_or_fail(cluster.strategy->create_variable(init));
  EXPECT_THAT(shapes(v), ElementsAre(Shape{3}, Shape{2}));
  EXPECT_EQ(value_or_fail(v.read_value()), full);

  Initializer wrong{DType::kInt64, {5}, [](const Shape&, const Shape&) -> absl::StatusOr<Tensor> {
                      return Tensor(DType::kInt64, {4});
                    }};
  auto bad = cluster.strategy->create_variable(wrong, {.name = "bad"});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(),
              HasSubstr("initializer of variable 'bad/part_0' returned int64 [4] for part shape "
                        "[3] at offset [0]"));

  auto no_fn = cluster.strategy->create_variable(Initializer{DType::kInt64, {5}, nullptr});
  EXPECT_EQ(no_fn.status().code(), absl::StatusCode::kInvalidArgument);
  auto no_value = cluster.strategy->create_variable(Tensor());
  EXPECT_EQ(no_value.status().code(), absl::StatusCode::kInvalidArgument);
}

// TF's testColocateWith: beside var1, never sharded, counter unchanged.
TEST(StrategyTest, ColocateVarsWith) {
  LocalPsCluster cluster(3, fixed(3));
  StrategyScope scope = cluster.strategy->scope();
  ShardedVariable var1 = value_or_fail(create_variable(Tensor::scalar(0.0f)));            // ps0
  ShardedVariable big = value_or_fail(create_variable(Tensor(DType::kFloat32, {6, 2})));  // 1,2,0
  ShardedVariable var2, var3;
  {
    ColocationScope colocate = cluster.strategy->colocate_vars_with(big.variables()[2]);
    var2 = value_or_fail(create_variable(Tensor(DType::kFloat32, {6, 2})));
    var3 = value_or_fail(create_variable(Tensor::scalar(2.0f)));
  }
  EXPECT_EQ(var2.num_parts(), 1u);
  EXPECT_EQ(var2.variables()[0].device(), big.variables()[2].device());
  EXPECT_EQ(var3.variables()[0].device(), big.variables()[2].device());
  // The counter did not move: the next variable goes to ps1 (count 4).
  ShardedVariable next = value_or_fail(create_variable(Tensor::scalar(3.0f)));
  EXPECT_EQ(next.variables()[0].task(), 1);
  // The option form, and colocating with a coordinator variable.
  ShardedVariable local;
  {
    // Leave the strategy scope to make a coordinator variable.
    std::thread t([&] { local = value_or_fail(create_variable(Tensor::scalar(1.0f))); });
    t.join();
  }
  ShardedVariable beside_local =
      value_or_fail(create_variable(Tensor::scalar(5.0f), {.colocate_with = local}));
  EXPECT_EQ(beside_local.variables()[0].device(), "/job:chief/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(value_or_fail(beside_local.read_value()), Tensor::scalar(5.0f));
  // A sharded target is ambiguous.
  auto bad = create_variable(Tensor::scalar(1.0f), {.colocate_with = big});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("colocate with one of its variables()"));
}

TEST(StrategyTest, ClientLookupRebuildsVariables) {
  LocalPsCluster cluster(2, fixed(2));
  ShardedVariable w = value_or_fail(
      cluster.strategy->create_variable(Tensor::from_vector<float>({1, 2, 3}), {.name = "w"}));
  ShardedVariable local = value_or_fail(create_variable(Tensor::scalar(7.0f)));
  ShardedVariable w2 =
      value_or_fail(ShardedVariable::from_handle(w.handle(), cluster.strategy->client_lookup()));
  ASSERT_TRUE(w2.assign_add(Tensor::from_vector<float>({1, 1, 1})).ok());
  EXPECT_EQ(value_or_fail(w.read_value()), Tensor::from_vector<float>({2, 3, 4}));
  ShardedVariable local2 = value_or_fail(
      ShardedVariable::from_handle(local.handle(), cluster.strategy->client_lookup()));
  EXPECT_EQ(value_or_fail(local2.read_value()), Tensor::scalar(7.0f));
  // A worker's lookup knows only the ps tasks.
  auto unreachable = ShardedVariable::from_handle(local.handle(), ps_client_lookup({}));
  ASSERT_EQ(unreachable.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unreachable.status().message(), HasSubstr("create it inside strategy.scope()"));
}

TEST(StrategyTest, ConcurrentCreationPlacesEveryVariableOnce) {
  LocalPsCluster cluster(3);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 30;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      StrategyScope scope = cluster.strategy->scope();
      for (int i = 0; i < kPerThread; ++i) {
        EXPECT_TRUE(create_variable(Tensor::scalar(1.0f), {.name = "c"}).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  // 120 distinct names, 40 per ps.
  for (const auto& store : cluster.stores) EXPECT_EQ(store->size(), 40u);
}

}  // namespace
}  // namespace psflow::internal
