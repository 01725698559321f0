// ParameterServerStrategy against real ps processes (LocalCluster, 3 ps):
// placement, sharded ops, batched reads and updates over gRPC, handles
// rebuilt through independent clients, and exact concurrent updates.
#include "psflow/strategy.h"

#include <atomic>
#include <iostream>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/variable_client.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/variable.h"
#include "base/test_util.h"

namespace psflow {
namespace {

using ::testing::ElementsAre;


class StrategyIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = 3;
    options.num_workers = 1;
    options.binary_path = PSFLOW_BINARY_PATH;
    auto cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(cluster_, nullptr); }

  static std::unique_ptr<ParameterServerStrategy> make_strategy(Partitioner p = nullptr) {
    return ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0), std::move(p)));
  }

  // Fresh gRPC clients, as a worker process would make: handles rebuilt
  // with them reach the same stored values.
  static VariableClientLookup worker_lookup() {
    std::vector<std::shared_ptr<VariableClient>> clients;
    for (int i = 0; i < 3; ++i) {
      clients.push_back(make_grpc_variable_client(
          ok_value(cluster_->cluster_spec().task_address("ps", i)), task_name("ps", i)));
    }
    return ps_client_lookup(std::move(clients));
  }

  static LocalCluster* cluster_;
};

LocalCluster* StrategyIntegrationTest::cluster_ = nullptr;

TEST_F(StrategyIntegrationTest, RoundRobinPlacementOnRealPs) {
  auto strategy = make_strategy();
  ShardedVariable v1 = ok_value(create_variable(Tensor::scalar(0.0f)));
  std::vector<ShardedVariable> in_scope;
  {
    StrategyScope scope = strategy->scope();
    for (float x : {1.0f, 2.0f, 3.0f, 4.0f}) {
      in_scope.push_back(ok_value(create_variable(Tensor::scalar(x), {.name = "placed"})));
    }
  }
  EXPECT_EQ(v1.variables()[0].device(), "/job:chief/replica:0/task:0/device:CPU:0");
  std::vector<std::string> devices;
  for (const auto& v : in_scope) devices.push_back(v.variables()[0].device());
  EXPECT_THAT(devices, ElementsAre("/job:ps/replica:0/task:0/device:CPU:0",
                                   "/job:ps/replica:0/task:1/device:CPU:0",
                                   "/job:ps/replica:0/task:2/device:CPU:0",
                                   "/job:ps/replica:0/task:0/device:CPU:0"));
  // Another process's view (fresh clients) sees the values on those tasks.
  const VariableClientLookup lookup = worker_lookup();
  for (size_t i = 0; i < in_scope.size(); ++i) {
    ShardedVariable remote = ok_value(ShardedVariable::from_handle(
        VariableHandle::from_structure(in_scope[i].handle().to_structure()).value(), lookup));
    EXPECT_EQ(ok_value(remote.read_value()), Tensor::scalar(static_cast<float>(i + 1)));
  }
}

TEST_F(StrategyIntegrationTest, ShardedOpsMatchACoordinatorTwin) {
  auto strategy = make_strategy(ok_value(fixed_shards_partitioner(3)));
  std::vector<float> init(11 * 4);
  for (size_t i = 0; i < init.size(); ++i) init[i] = static_cast<float>(i) * 0.5f;
  const Tensor value = Tensor::from_vector(init, {11, 4});
  ShardedVariable w;
  ShardedVariable b;
  Optimizer opt = [&] {
    StrategyScope scope = strategy->scope();
    w = ok_value(create_variable(value, {.name = "emb"}));
    b = ok_value(create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}), {.name = "b"}));
    OptimizerConfig adagrad;
    adagrad.kind = OptimizerConfig::Kind::kAdagrad;
    return ok_value(Optimizer::create(adagrad, 0.05));
  }();
  // The twin lives on the coordinator, unsharded.
  ShardedVariable twin = ok_value(create_variable(value, {.name = "twin"}));
  ShardedVariable twin_b =
      ok_value(create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4})));
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  Optimizer twin_opt = ok_value(Optimizer::create(adagrad, 0.05));

  ASSERT_EQ(w.num_parts(), 3u);
  EXPECT_EQ(w.variables()[0].shape(), (Shape{4, 4}));
  EXPECT_EQ(w.variables()[2].shape(), (Shape{3, 4}));
  EXPECT_EQ(opt.iterations().variables()[0].job(), "ps");

  const Tensor delta = Tensor::from_vector(std::vector<float>(44, 1.5f), {11, 4});
  ASSERT_TRUE(w.assign_add(delta).ok());
  ASSERT_TRUE(twin.assign_add(delta).ok());
  const IndexedSlices rows{Tensor::from_vector(std::vector<float>(16, 2.0f), {4, 4}),
                           Tensor::from_vector<int64_t>({10, 0, 4, 10})};
  ASSERT_TRUE(w.scatter_mul(rows).ok());
  ASSERT_TRUE(twin.scatter_mul(rows).ok());
  for (int step = 0; step < 3; ++step) {
    const IndexedSlices grad{
        Tensor::from_vector(std::vector<float>(12, 0.25f * static_cast<float>(step + 1)), {3, 4}),
        Tensor::from_vector<int32_t>({3, 7, 3})};
    const Tensor dense_b = Tensor::from_vector<float>({1, -1, 0.5f, 0}, {1, 4});
    ASSERT_TRUE(opt.apply_gradients({{grad, w}, {dense_b, b}}).ok());
    ASSERT_TRUE(twin_opt.apply_gradients({{grad, twin}, {dense_b, twin_b}}).ok());
  }
  const std::vector<Tensor> got = ok_value(read_values({w, b, opt.iterations()}));
  EXPECT_EQ(got[0], ok_value(twin.read_value()));
  EXPECT_EQ(got[1], ok_value(twin_b.read_value()));
  EXPECT_EQ(got[2], Tensor::scalar<int64_t>(3));
  const Tensor ids = Tensor::from_vector<int64_t>({10, 3, 0, 7, 7}, {5});
  EXPECT_EQ(ok_value(embedding_lookup(w, ids)), ok_value(twin.sparse_read(ids)));
  // The same through a worker's independent clients.
  ShardedVariable remote = ok_value(ShardedVariable::from_handle(w.handle(), worker_lookup()));
  EXPECT_EQ(ok_value(remote.read_value()), got[0]);
}

TEST_F(StrategyIntegrationTest, ConcurrentAssignAddIsExact) {
  auto strategy = make_strategy();
  ShardedVariable counter =
      ok_value(strategy->create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
  constexpr int kThreads = 8;
  constexpr int kAddsPerThread = 10'000;
  std::atomic<int> failures{0};
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      const Tensor one = Tensor::scalar<int64_t>(1);
      for (int i = 0; i < kAddsPerThread; ++i) {
        if (!counter.assign_add(one).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  const absl::Duration took = absl::Now() - start;
  std::cout << kThreads << " threads x " << kAddsPerThread << " assign_add over gRPC took "
            << absl::FormatDuration(took) << "\n";
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(ok_value(counter.read_value()), Tensor::scalar<int64_t>(kThreads * kAddsPerThread));
}

TEST_F(StrategyIntegrationTest, ErrorsFromTheRemoteTaskNameTheVariable) {
  auto strategy = make_strategy();
  ShardedVariable v = ok_value(strategy->create_variable(Tensor::scalar(1.0f), {.name = "err"}));
  absl::Status s = v.assign(Tensor::from_vector<float>({1, 2}));
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("'err'"));
  ShardedVariable missing = ok_value(ShardedVariable::from_handle(
      VariableHandle{"m", DType::kFloat32, {}, {{"ps", 2, "no_such_variable", {}, 0}}},
      worker_lookup()));
  EXPECT_EQ(missing.read_value().status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace psflow
