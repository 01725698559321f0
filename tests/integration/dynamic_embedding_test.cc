// Dynamic embedding tables on real ps processes (docs/embeddings.md): a
// retried lookup creates the same rows, a retried update applies once,
// keys spread over the ps tasks by the stable hash, admission and expiry
// counts are exact over the wire, the optimizer matches the dense sparse
// apply, and bad requests are refused with the tables unchanged.
#include "psflow/dynamic_embedding.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/key_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer.h"
#include "ps/client/variable_client.h"
#include "psflow/local_cluster.h"
#include "psflow/server.h"
#include "strategy/dynamic_embedding_internal.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;
using Kind = OptimizerConfig::Kind;
using ::testing::HasSubstr;

constexpr int kNumPs = 2;

class DynamicEmbeddingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = kNumPs;
    options.num_workers = 0;
    options.include_chief = false;
    options.binary_path = PSFLOW_BINARY_PATH;
    start_suite_cluster(cluster_, options);
    if (cluster_ == nullptr) return;
    clients_ = new std::vector<std::shared_ptr<VariableClient>>();
    connect_to_ps_tasks(*cluster_, kNumPs, *clients_);
  }

  static void TearDownTestSuite() {
    delete clients_;
    clients_ = nullptr;
    stop_suite_cluster(cluster_);
  }

  void SetUp() override { ASSERT_NE(cluster_, nullptr) << "the cluster did not start"; }

  static DynamicEmbedding create(const std::string& name, const DynamicEmbeddingOptions& o) {
    absl::StatusOr<DynamicEmbedding> t = DynamicEmbeddingAccess::create(name, o, *clients_);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(DynamicEmbedding());
  }

  static DynamicEmbeddingStats stats(const DynamicEmbedding& t) {
    absl::StatusOr<DynamicEmbeddingStats> s = t.stats();
    EXPECT_TRUE(s.ok()) << s.status();
    return s.value_or(DynamicEmbeddingStats());
  }

  static Tensor lookup(const DynamicEmbedding& t, std::vector<int64_t> keys, int64_t step) {
    const auto n = static_cast<int64_t>(keys.size());
    absl::StatusOr<Tensor> rows = embedding_lookup(t, Tensor::from_vector(keys, {n}), step);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.value_or(Tensor());
  }

  static absl::StatusOr<std::vector<Tensor>> execute(int task, ExecuteBatch batch) {
    return (*clients_)[static_cast<size_t>(task)]->execute_batch(std::move(batch),
                                                                 absl::Now() + absl::Seconds(30));
  }

  static LocalCluster* cluster_;
  static std::vector<std::shared_ptr<VariableClient>>* clients_;
};

LocalCluster* DynamicEmbeddingTest::cluster_ = nullptr;
std::vector<std::shared_ptr<VariableClient>>* DynamicEmbeddingTest::clients_ = nullptr;

DynamicEmbeddingOptions options(int64_t dim, Kind kind = Kind::kSgd) {
  DynamicEmbeddingOptions o;
  o.dim = dim;
  o.seed = 2026;
  o.optimizer.kind = kind;
  return o;
}

std::vector<float> row(const Tensor& rows, int64_t i) {
  const int64_t dim = rows.dim(1);
  const float* p = rows.flat<float>().data() + i * dim;
  return {p, p + dim};
}

std::vector<int64_t> some_keys(int n) {
  std::vector<int64_t> k;
  for (int i = 0; i < n; ++i) k.push_back(int64_t{i} * 7777 - 100000);
  return k;
}

TEST_F(DynamicEmbeddingTest, RetriedLookupCreatesTheSameRowsOnce) {
  const DynamicEmbeddingOptions o = options(8);
  DynamicEmbedding table = create("retried_lookup", o);
  const std::vector<int64_t> keys = some_keys(50);
  // The closure's first run and its retry: the same session and closure
  // id, so the same update keys.
  DynamicEmbedding first = DynamicEmbeddingAccess::bind(table, std::make_shared<UpdateKeys>(1, 7));
  const Tensor a = lookup(first, keys, 3);
  const DynamicEmbeddingStats after_first = stats(table);
  EXPECT_EQ(after_first.rows, 50);
  EXPECT_EQ(after_first.created, 50);
  DynamicEmbedding retry = DynamicEmbeddingAccess::bind(table, std::make_shared<UpdateKeys>(1, 7));
  const Tensor b = lookup(retry, keys, 3);
  EXPECT_EQ(a, b);
  const DynamicEmbeddingStats after_retry = stats(table);
  EXPECT_EQ(after_retry.created, 50);
  EXPECT_EQ(after_retry.rows, 50);
  // Every row is the initializer's for (seed, key), whichever task holds it.
  std::vector<float> expected(8);
  for (size_t i = 0; i < keys.size(); ++i) {
    initial_row(o, keys[i], expected.data());
    EXPECT_EQ(row(a, static_cast<int64_t>(i)), expected) << keys[i];
  }
}

TEST_F(DynamicEmbeddingTest, RetriedUpdateAppliesOnce) {
  DynamicEmbeddingOptions o = options(4);
  o.initializer = DynamicEmbeddingInitializer::kZeros;
  DynamicEmbedding table = create("retried_update", o);
  const std::vector<int64_t> keys = some_keys(20);
  const auto n = static_cast<int64_t>(keys.size());
  Tensor grads(DType::kFloat32, {n, 4});
  for (int64_t i = 0; i < n * 4; ++i) grads.mutable_flat<float>()[static_cast<size_t>(i)] = 1.0f;
  const Tensor k = Tensor::from_vector(keys, {n});
  for (int attempt = 0; attempt < 3; ++attempt) {
    DynamicEmbedding run = DynamicEmbeddingAccess::bind(table, std::make_shared<UpdateKeys>(1, 9));
    (void)lookup(run, keys, 1);
    ASSERT_TRUE(run.apply_gradients(k, grads, 0.5, 1).ok());
  }
  const Tensor rows = lookup(table, keys, -1);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(row(rows, i), std::vector<float>(4, -0.5f));
  // One apply per task that holds some of the keys.
  EXPECT_EQ(stats(table).applies, kNumPs);
  // Unbound updates apply each time they are sent (at-least-once).
  ASSERT_TRUE(table.apply_gradients(k, grads, 0.5, 2).ok());
  EXPECT_EQ(row(lookup(table, keys, -1), 0), std::vector<float>(4, -1.0f));
}

TEST_F(DynamicEmbeddingTest, KeysSpreadOverThePsTasksByTheStableHash) {
  DynamicEmbedding table = create("spread", options(2));
  const std::vector<int64_t> keys = some_keys(1000);
  (void)lookup(table, keys, 0);
  absl::StatusOr<std::vector<DynamicEmbeddingStats>> per = table.stats_per_shard();
  ASSERT_TRUE(per.ok()) << per.status();
  ASSERT_EQ(per->size(), 2u);
  std::vector<int64_t> expected(2);
  for (int64_t key : keys) ++expected[static_cast<size_t>(dynamic_key_task(key, kNumPs))];
  EXPECT_EQ((*per)[0].rows, expected[0]);
  EXPECT_EQ((*per)[1].rows, expected[1]);
  EXPECT_GT(expected[0], 400);
  EXPECT_GT(expected[1], 400);
}

TEST_F(DynamicEmbeddingTest, AdmissionAndExpiryCountsAreExact) {
  DynamicEmbeddingOptions o = options(2);
  o.admit_after = 2;
  o.sketch_width = 1 << 14;
  o.ttl_steps = 3;
  DynamicEmbedding table = create("admission_expiry", o);
  const std::vector<int64_t> keys = some_keys(40);
  const Tensor once = lookup(table, keys, 0);
  EXPECT_EQ(row(once, 5), std::vector<float>(2, 0.0f));
  EXPECT_EQ(stats(table).rows, 0);
  EXPECT_EQ(stats(table).not_admitted, 40);
  (void)lookup(table, keys, 1);  // second sighting: admitted
  EXPECT_EQ(stats(table).rows, 40);
  // The first 10 keep being used; the other 30 expire once 3 steps old.
  const std::vector<int64_t> hot(keys.begin(), keys.begin() + 10);
  (void)lookup(table, hot, 4);
  EXPECT_EQ(stats(table).rows, 40);
  (void)lookup(table, hot, 5);
  DynamicEmbeddingStats s = stats(table);
  EXPECT_EQ(s.rows, 10);
  EXPECT_EQ(s.evicted_ttl, 30);
  EXPECT_EQ(s.created, 40);
}

TEST_F(DynamicEmbeddingTest, CapacityEvictsTheLeastRecentlyUsedPerTask) {
  DynamicEmbeddingOptions o = options(2);
  o.capacity_per_shard = 10;
  DynamicEmbedding table = create("capacity", o);
  const std::vector<int64_t> keys = some_keys(100);
  (void)lookup(table, keys, 0);
  absl::StatusOr<std::vector<DynamicEmbeddingStats>> per = table.stats_per_shard();
  ASSERT_TRUE(per.ok()) << per.status();
  std::vector<int64_t> on_task(2);
  for (int64_t key : keys) ++on_task[static_cast<size_t>(dynamic_key_task(key, kNumPs))];
  for (size_t t = 0; t < 2; ++t) {
    EXPECT_EQ((*per)[t].rows, 10);
    EXPECT_EQ((*per)[t].evicted_capacity, on_task[t] - 10);
  }
}

TEST_F(DynamicEmbeddingTest, AdamOnThePsMatchesTheDenseSparseApply) {
  DynamicEmbeddingOptions o = options(3, Kind::kAdam);
  DynamicEmbedding table = create("adam", o);
  const std::vector<int64_t> keys = {11, 12, 13, 14};
  Tensor dense = lookup(table, keys, 0).clone();
  OptimizerSlots slots;
  // Keys 11 and 13 twice; 12 never updated.
  const std::vector<int64_t> touched = {11, 13, 14, 11, 13};
  const Tensor dense_ids = Tensor::from_vector<int64_t>({0, 2, 3, 0, 2}, {5});
  for (int step = 1; step <= 3; ++step) {
    std::vector<float> g(15);
    for (size_t i = 0; i < g.size(); ++i) g[i] = 0.2f * static_cast<float>(i) - step;
    const Tensor grads = Tensor::from_vector(g, {5, 3});
    // Every key of the update on one task here: each task applies it once
    // (a task's step count is its own, as a dense shard's).
    ASSERT_TRUE(apply_sparse_gradient(o.optimizer, 0.01, dense, slots, dense_ids, grads).ok());
    ASSERT_TRUE(table.apply_gradients(Tensor::from_vector(touched, {5}), grads, 0.01, step).ok());
  }
  const Tensor rows = lookup(table, keys, -1);
  std::vector<int64_t> tasks;
  for (int64_t key : keys) tasks.push_back(dynamic_key_task(key, kNumPs));
  // The bias correction counts the applies each task made: equal to the
  // dense reference for keys on a task that got all three.
  for (int64_t i = 0; i < 4; ++i) {
    if (i == 1) {
      std::vector<float> initial(3);
      initial_row(o, 12, initial.data());
      EXPECT_EQ(row(rows, i), initial);
    } else {
      EXPECT_EQ(row(rows, i), row(dense, i)) << "key " << keys[static_cast<size_t>(i)];
    }
  }
}

TEST_F(DynamicEmbeddingTest, BadRequestsAreRefusedAndChangeNothing) {
  DynamicEmbedding table = create("guarded", options(4, Kind::kAdagrad));
  const std::vector<int64_t> keys = some_keys(10);
  const Tensor before = lookup(table, keys, 0);
  const DynamicEmbeddingStats stats_before = stats(table);
  const int task = dynamic_key_task(keys[0], kNumPs);
  auto one_op = [](Op::Kind kind, std::string name) {
    VariableOpArgs op;
    op.kind = kind;
    op.variable = std::move(name);
    return op;
  };
  OptimizerConfig adagrad;
  adagrad.kind = Kind::kAdagrad;
  auto apply_batch = [&](Tensor ids, Tensor grads, OptimizerConfig config) {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_APPLY, "guarded");
    op.ids = std::move(ids);
    op.value = std::move(grads);
    op.learning_rate = 0.1;
    b.ops.push_back(std::move(op));
    b.optimizers.push_back(config);
    return b;
  };
  const Tensor key0 = Tensor::from_vector<int64_t>({keys[0]}, {1});
  struct Case {
    std::string what;
    ExecuteBatch batch;
    absl::StatusCode code;
    std::string says;
  };
  std::vector<Case> cases;
  {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_LOOKUP, "guarded");
    op.ids = Tensor::from_vector<int32_t>({1}, {1});
    b.ops.push_back(std::move(op));
    cases.push_back({"int32 keys", std::move(b), absl::StatusCode::kInvalidArgument, "int64"});
  }
  {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_LOOKUP, "nosuch");
    op.ids = key0;
    b.ops.push_back(std::move(op));
    cases.push_back({"unknown table", std::move(b), absl::StatusCode::kNotFound, "nosuch"});
  }
  cases.push_back({"gradient of another dim",
                   apply_batch(key0, Tensor::from_vector<float>({1, 2, 3}, {1, 3}), adagrad),
                   absl::StatusCode::kInvalidArgument, "[1, 4]"});
  cases.push_back(
      {"another optimizer",
       apply_batch(key0, Tensor::from_vector<float>({1, 2, 3, 4}, {1, 4}), OptimizerConfig()),
       absl::StatusCode::kFailedPrecondition, "adagrad"});
  cases.push_back({"non-finite gradient",
                   apply_batch(key0,
                               Tensor::from_vector<float>(
                                   {1, std::numeric_limits<float>::quiet_NaN(), 3, 4}, {1, 4}),
                               adagrad),
                   absl::StatusCode::kInvalidArgument, "non-finite"});
  {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_LOOKUP, "guarded");
    op.ids = Tensor(DType::kInt64, {(int64_t{1} << 20) + 1});
    b.ops.push_back(std::move(op));
    cases.push_back(
        {"too many keys", std::move(b), absl::StatusCode::kInvalidArgument, "at most 1048576"});
  }
  {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_CREATE, "guarded");
    DynamicEmbeddingOptions other = options(8, Kind::kAdagrad);
    op.table = table_options_to_bytes(other);
    b.ops.push_back(std::move(op));
    cases.push_back(
        {"redefinition", std::move(b), absl::StatusCode::kAlreadyExists, "other options"});
  }
  {
    ExecuteBatch b;
    VariableOpArgs op = one_op(Op::DE_CREATE, "dim0");
    op.table = table_options_to_bytes(options(0));
    b.ops.push_back(std::move(op));
    cases.push_back({"dim 0", std::move(b), absl::StatusCode::kInvalidArgument, "dim 0"});
  }
  {
    // A good update before a bad op: the whole batch is refused.
    ExecuteBatch b = apply_batch(key0, Tensor::from_vector<float>({1, 1, 1, 1}, {1, 4}), adagrad);
    VariableOpArgs bad = one_op(Op::DE_LOOKUP, "guarded");
    bad.ids = Tensor::from_vector<float>({1}, {1});
    b.ops.push_back(std::move(bad));
    cases.push_back(
        {"good op then bad op", std::move(b), absl::StatusCode::kInvalidArgument, "op 1"});
  }
  for (Case& c : cases) {
    SCOPED_TRACE(c.what);
    absl::StatusOr<std::vector<Tensor>> r = execute(task, std::move(c.batch));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.says));
  }
  // Nothing changed: the same rows, the same counters.
  EXPECT_EQ(lookup(table, keys, -1), before);
  const DynamicEmbeddingStats after = stats(table);
  EXPECT_EQ(after.rows, stats_before.rows);
  EXPECT_EQ(after.applies, stats_before.applies);
  EXPECT_EQ(after.created, stats_before.created);
  // The ps is still up and serves.
  EXPECT_TRUE(
      table.apply_gradients(key0, Tensor::from_vector<float>({1, 1, 1, 1}, {1, 4}), 0.1, 1).ok());
}

}  // namespace
}  // namespace psflow::internal
