// ParameterServerStrategy against real ps processes (LocalCluster, 3 ps):
// placement, sharded ops, batched reads and updates over gRPC, handles
// rebuilt through independent clients, and exact concurrent updates.
#include "psflow/strategy.h"

#include <signal.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/variable.h"
#include "strategy/client_lookup.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
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

// Eight threads each add 1 ten thousand times through handles[t % size]
// and the counter ends at exactly 80,000; returns the calls that failed.
constexpr int kCountingThreads = 8;
constexpr int kAddsPerThread = 10'000;
int count_concurrently(const std::vector<ShardedVariable>& handles) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kCountingThreads; ++t) {
    threads.emplace_back([&, t] {
      const ShardedVariable& counter = handles[static_cast<size_t>(t) % handles.size()];
      const Tensor one = Tensor::scalar<int64_t>(1);
      for (int i = 0; i < kAddsPerThread; ++i) {
        if (!counter.assign_add(one).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  return failures.load();
}

TEST_F(StrategyIntegrationTest, ConcurrentAssignAddIsExact) {
  auto strategy = make_strategy();
  ShardedVariable counter =
      ok_value(strategy->create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
  const absl::Time start = absl::Now();
  EXPECT_EQ(count_concurrently({counter}), 0);
  std::cout << kCountingThreads << " threads x " << kAddsPerThread << " assign_add over gRPC took "
            << absl::FormatDuration(absl::Now() - start) << "\n";
  EXPECT_EQ(ok_value(counter.read_value()),
            Tensor::scalar<int64_t>(kCountingThreads * kAddsPerThread));
}

// Every sharded op on real ps tasks equals the same op on an unsharded
// twin on the coordinator: TF's div layout (13 rows over 5 shards of 3 ps ->
// 3, 3, 3, 2, 2), dense assigns, every scatter op with duplicate ids,
// sparse_read, and TF's embedding_lookup example over hand-made parts.
TEST_F(StrategyIntegrationTest, EveryShardedOpMatchesAnUnshardedTwin) {
  auto strategy = make_strategy(ok_value(fixed_shards_partitioner(5)));
  std::vector<float> init(13 * 2);
  for (size_t i = 0; i < init.size(); ++i) init[i] = 1 + static_cast<float>(i) * 0.25f;
  const Tensor value = Tensor::from_vector(init, {13, 2});
  ShardedVariable sharded;
  {
    StrategyScope scope = strategy->scope();
    sharded = ok_value(create_variable(value, {.name = "div13"}));
  }
  ShardedVariable twin = ok_value(create_variable(value, {.name = "div13_twin"}));
  ASSERT_EQ(sharded.num_parts(), 5u);
  std::vector<int64_t> rows;
  for (const Variable& part : sharded.variables()) rows.push_back(part.shape()[0]);
  EXPECT_THAT(rows, ElementsAre(3, 3, 3, 2, 2));
  EXPECT_EQ(sharded.variables()[0].name(), "div13/part_0");
  EXPECT_EQ(sharded.variables()[4].name(), "div13/part_4");

  auto expect_equal = [&](const std::string& what) {
    EXPECT_EQ(ok_value(sharded.read_value()), ok_value(twin.read_value())) << what;
  };
  const Tensor delta = Tensor::from_vector(std::vector<float>(26, 0.5f), {13, 2});
  ASSERT_TRUE(sharded.assign(value).ok());
  ASSERT_TRUE(twin.assign(value).ok());
  ASSERT_TRUE(sharded.assign_add(delta).ok());
  ASSERT_TRUE(twin.assign_add(delta).ok());
  ASSERT_TRUE(sharded.assign_sub(value).ok());
  ASSERT_TRUE(twin.assign_sub(value).ok());
  expect_equal("assign, assign_add, assign_sub");
  for (const auto& [name, fn] : testing::scatter_methods()) {
    // Ids on every part, 12 twice (applied in order), for all but update.
    const std::vector<int64_t> ids = name == "scatter_update"
                                         ? std::vector<int64_t>{12, 0, 5, 9}
                                         : std::vector<int64_t>{12, 0, 5, 12, 9};
    const auto n = static_cast<int64_t>(ids.size());
    std::vector<float> updates;
    for (int64_t i = 0; i < n * 2; ++i) updates.push_back(1.5f + static_cast<float>(i));
    const IndexedSlices slices{Tensor::from_vector(updates, {n, 2}), Tensor::from_vector(ids)};
    ASSERT_TRUE((sharded.*fn)(slices).ok()) << name;
    ASSERT_TRUE((twin.*fn)(slices).ok()) << name;
    expect_equal(name);
  }
  const Tensor ids = Tensor::from_vector<int32_t>({12, 0, 3, 3, 7, 10}, {2, 3});
  EXPECT_EQ(ok_value(sharded.sparse_read(ids)), ok_value(twin.sparse_read(ids)));
  EXPECT_EQ(ok_value(embedding_lookup(sharded, ids)), ok_value(twin.sparse_read(ids)));

  // TF's example: parts [[1,2],[3,4]], [[5,6],[7,8]], [[9,10]]; ids [0,3,4].
  auto unsharded = make_strategy();
  std::vector<Variable> parts;
  for (const Tensor& part : {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
                             Tensor::from_vector<float>({5, 6, 7, 8}, {2, 2}),
                             Tensor::from_vector<float>({9, 10}, {1, 2})}) {
    parts.push_back(ok_value(unsharded->create_variable(part)).variables()[0]);
  }
  EXPECT_EQ(parts[0].task() + parts[1].task() + parts[2].task(), 0 + 1 + 2);
  const ShardedVariable example = ok_value(ShardedVariable::create(parts));
  EXPECT_EQ(ok_value(embedding_lookup(example, Tensor::from_vector<int64_t>({0, 3, 4}))),
            Tensor::from_vector<float>({1, 2, 7, 8, 9, 10}, {3, 2}));
}

// The count with eight independent clients (each its own channel and
// handle, as eight worker processes would have) rather than threads
// sharing the coordinator's.
TEST_F(StrategyIntegrationTest, ConcurrentAssignAddFromIndependentClientsIsExact) {
  auto strategy = make_strategy();
  ShardedVariable counter =
      ok_value(strategy->create_variable(Tensor::scalar<int64_t>(0), {.name = "counter8"}));
  std::vector<ShardedVariable> handles;
  for (int c = 0; c < kCountingThreads; ++c) {
    handles.push_back(ok_value(ShardedVariable::from_handle(counter.handle(), worker_lookup())));
  }
  EXPECT_EQ(count_concurrently(handles), 0);
  EXPECT_EQ(ok_value(counter.read_value()),
            Tensor::scalar<int64_t>(kCountingThreads * kAddsPerThread));
}

// One request per ps task, sent to all of them at once: with one ps task
// stopped (SIGSTOP), a sharded assign_add still reaches the others while
// it waits for the stopped one. A client going through the tasks one by
// one would wait on the stopped task first, in one of the two rounds.
TEST_F(StrategyIntegrationTest, RequestsToThePsTasksGoOutInParallel) {
  auto strategy = make_strategy(ok_value(fixed_shards_partitioner(3)));
  ShardedVariable v;
  {
    StrategyScope scope = strategy->scope();
    v = ok_value(create_variable(Tensor::from_vector<float>({0, 0, 0}, {3}), {.name = "par"}));
  }
  ASSERT_EQ(v.num_parts(), 3u);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(v.variables()[static_cast<size_t>(i)].task(), i);
  const Tensor ones = Tensor::from_vector<float>({1, 1, 1}, {3});
  float expected = 0;
  for (int stopped : {0, 2}) {
    SCOPED_TRACE(absl::StrCat("ps ", stopped, " stopped"));
    const int live = stopped == 0 ? 2 : 0;
    ASSERT_TRUE(cluster_->signal_task("ps", stopped, SIGSTOP).ok());
    absl::Status added;
    std::thread caller([&] { added = v.assign_add(ones); });
    // The live task applies its part while the stopped one holds the call.
    ++expected;
    bool applied = false;
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!applied && absl::Now() < deadline) {
      absl::StatusOr<Tensor> part = v.variables()[static_cast<size_t>(live)].read_value();
      applied = part.ok() && part->flat<float>()[0] == expected;
    }
    EXPECT_TRUE(applied);
    ASSERT_TRUE(cluster_->signal_task("ps", stopped, SIGCONT).ok());
    caller.join();
    EXPECT_TRUE(added.ok()) << added;
  }
  EXPECT_EQ(ok_value(v.read_value()), Tensor::from_vector<float>({2, 2, 2}, {3}));
}

// Nesterov momentum (dense) and FTRL with l1, l2 and beta (sparse, sharded,
// a duplicated id summed) on real ps tasks, against TF's formulas computed
// here in double precision.
TEST_F(StrategyIntegrationTest, NesterovAndFtrlMatchTfFormulasOnRealPs) {
  auto strategy = make_strategy(ok_value(fixed_shards_partitioner(2)));
  OptimizerConfig nesterov;
  nesterov.kind = OptimizerConfig::Kind::kMomentum;
  nesterov.momentum = 0.8;
  nesterov.nesterov = true;
  OptimizerConfig ftrl;
  ftrl.kind = OptimizerConfig::Kind::kFtrl;
  ftrl.l1_regularization_strength = 0.01;
  ftrl.l2_regularization_strength = 0.1;
  ftrl.beta = 0.5;
  ShardedVariable m;
  ShardedVariable f;
  std::optional<Optimizer> momentum_opt;
  std::optional<Optimizer> ftrl_opt;
  {
    StrategyScope scope = strategy->scope();
    m = ok_value(create_variable(Tensor::from_vector<float>({1, -2, 3}, {3}), {.name = "nm"}));
    f = ok_value(create_variable(Tensor::from_vector<float>({0.5f, -0.5f, 1, 2, 0, 0}, {3, 2}),
                                 {.name = "ftrl"}));
    momentum_opt = ok_value(Optimizer::create(nesterov, 0.1, {.name = "nesterov"}));
    ftrl_opt = ok_value(Optimizer::create(ftrl, 0.2, {.name = "ftrl"}));
  }
  ASSERT_EQ(f.num_parts(), 2u);

  // Nesterov: accum = m * accum + g; w -= lr * g + lr * m * accum.
  std::vector<double> w = {1, -2, 3}, accum = {0, 0, 0};
  const std::vector<std::vector<float>> grads = {{1, 0.5f, -1}, {-0.25f, 2, 0}};
  for (const auto& g : grads) {
    ASSERT_TRUE(momentum_opt->apply_gradients({{Tensor::from_vector(g, {3}), m}}).ok());
    for (size_t i = 0; i < 3; ++i) {
      accum[i] = 0.8 * accum[i] + g[i];
      w[i] -= 0.1 * g[i] + 0.1 * 0.8 * accum[i];
    }
  }
  const Tensor got_m = ok_value(m.read_value());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(got_m.flat<float>()[i], w[i], 1e-5) << "element " << i;
  }

  // FTRL (Keras's, power 0.5): rows 0 and 2 live on different parts; row 2
  // comes twice in the first step, so its gradients add up.
  std::vector<double> fw = {0.5, -0.5, 1, 2, 0, 0};
  std::vector<double> n(6, 0.1), z(6, 0);
  const std::vector<std::pair<std::vector<int64_t>, std::vector<float>>> steps = {
      {{2, 0, 2}, {1, -1, 0.5f, 0.5f, 0.25f, 2}},
      {{0}, {-3, 0.125f}},
  };
  for (const auto& [ids, rows] : steps) {
    const IndexedSlices grad{Tensor::from_vector(rows, {static_cast<int64_t>(ids.size()), 2}),
                             Tensor::from_vector(ids, {static_cast<int64_t>(ids.size())})};
    ASSERT_TRUE(ftrl_opt->apply_gradients({{grad, f}}).ok());
    std::vector<double> g(6, 0);
    std::vector<bool> touched(6, false);
    for (size_t k = 0; k < ids.size(); ++k) {
      for (size_t j = 0; j < 2; ++j) {
        g[static_cast<size_t>(ids[k]) * 2 + j] += rows[k * 2 + j];
        touched[static_cast<size_t>(ids[k]) * 2 + j] = true;
      }
    }
    for (size_t i = 0; i < 6; ++i) {
      if (!touched[i]) continue;
      const double lr = 0.2;
      const double new_n = n[i] + g[i] * g[i];
      z[i] += g[i] - (std::sqrt(new_n) - std::sqrt(n[i])) / lr * fw[i];
      const double quadratic = (std::sqrt(new_n) + 0.5) / lr + 2 * 0.1;
      fw[i] = std::abs(z[i]) > 0.01 ? ((z[i] > 0 ? 0.01 : -0.01) - z[i]) / quadratic : 0.0;
      n[i] = new_n;
    }
  }
  const Tensor got_f = ok_value(f.read_value());
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_NEAR(got_f.flat<float>()[i], fw[i], 1e-5) << "element " << i;
  }
  EXPECT_EQ(ok_value(ftrl_opt->iterations().read_value()), Tensor::scalar<int64_t>(2));
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
}  // namespace psflow::internal
