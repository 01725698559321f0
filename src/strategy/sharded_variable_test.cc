// ShardedVariable: results equal the same op on an unsharded variable, and
// every multi-part op sends one request per ps (TF's sharded_variable_test).
#include <random>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "strategy/strategy_test_util.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::LocalPsCluster;
using ::psflow::internal::testing::value_or_fail;
using ::testing::HasSubstr;

Partitioner fixed(int n) { return value_or_fail(fixed_shards_partitioner(n)); }

Tensor iota(int64_t rows, int64_t cols, float start = 0) {
  std::vector<float> v(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_vector(v, {rows, cols});
}

// A sharded variable (3 parts over 3 ps) and an unsharded twin with the
// same value, for comparing every op.
struct Twins {
  explicit Twins(int64_t rows) : sharded_cluster(3, fixed(3)), plain_cluster(1) {
    const Tensor init = iota(rows, 2, 1);
    sharded = value_or_fail(sharded_cluster.strategy->create_variable(init, {.name = "s"}));
    plain = value_or_fail(plain_cluster.strategy->create_variable(init, {.name = "p"}));
  }
  void expect_equal(const std::string& context) {
    EXPECT_EQ(value_or_fail(sharded.read_value()), value_or_fail(plain.read_value())) << context;
  }
  LocalPsCluster sharded_cluster;
  LocalPsCluster plain_cluster;
  ShardedVariable sharded;
  ShardedVariable plain;
};

class ShardedEquivalenceTest : public ::testing::TestWithParam<int64_t> {};

// Even (10/10/10) and uneven (11/11/10) layouts.
INSTANTIATE_TEST_SUITE_P(Layouts, ShardedEquivalenceTest, ::testing::Values(30, 32));

TEST_P(ShardedEquivalenceTest, LayoutIsDiv) {
  Twins t(GetParam());
  ASSERT_EQ(t.sharded.num_parts(), 3u);
  const int64_t base = GetParam() / 3;
  EXPECT_EQ(t.sharded.variables()[0].shape()[0], GetParam() == 30 ? base : base + 1);
  EXPECT_EQ(t.sharded.variables()[2].shape()[0], base);
}

TEST_P(ShardedEquivalenceTest, DenseAssignOps) {
  Twins t(GetParam());
  const Tensor v = iota(GetParam(), 2, 100);
  ASSERT_TRUE(t.sharded.assign(v).ok());
  ASSERT_TRUE(t.plain.assign(v).ok());
  t.expect_equal("assign");
  ASSERT_TRUE(t.sharded.assign_add(v).ok());
  ASSERT_TRUE(t.plain.assign_add(v).ok());
  t.expect_equal("assign_add");
  const Tensor d = iota(GetParam(), 2, -7);
  ASSERT_TRUE(t.sharded.assign_sub(d).ok());
  ASSERT_TRUE(t.plain.assign_sub(d).ok());
  t.expect_equal("assign_sub");
  // Part i really holds rows [offsets[i], offsets[i+1]).
  const Tensor whole = value_or_fail(t.sharded.read_value());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(value_or_fail(t.sharded.variables()[i].read_value()),
              whole.slice(t.sharded.offsets()[i], t.sharded.offsets()[i + 1]));
  }
}

TEST_P(ShardedEquivalenceTest, ScatterOpsAndSparseRead) {
  Twins t(GetParam());
  std::mt19937 rng(42);
  std::uniform_int_distribution<int64_t> id(0, GetParam() - 1);
  for (const auto& [name, fn] : testing::scatter_methods()) {
    for (int round = 0; round < 3; ++round) {
      // Unique ids for update (duplicates apply in order either way, but
      // keep the comparison about routing), duplicates for the rest.
      std::vector<int64_t> ids;
      for (int i = 0; i < 12; ++i) ids.push_back(id(rng));
      if (name == "scatter_update") {
        std::sort(ids.begin(), ids.end());
        ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
      }
      const auto n = static_cast<int64_t>(ids.size());
      IndexedSlices delta{iota(n, 2, static_cast<float>(round + 1)),
                          Tensor::from_vector<int64_t>(ids)};
      ASSERT_TRUE((t.sharded.*fn)(delta).ok()) << name;
      ASSERT_TRUE((t.plain.*fn)(delta).ok()) << name;
      t.expect_equal(name);
    }
  }
  const Tensor ids = Tensor::from_vector<int32_t>(
      {5, 0, static_cast<int32_t>(GetParam() - 1), 5, 11, 10, 21, 22}, {2, 4});
  const Tensor a = value_or_fail(t.sharded.sparse_read(ids));
  EXPECT_EQ(a.shape(), (Shape{2, 4, 2}));
  EXPECT_EQ(a, value_or_fail(t.plain.sparse_read(ids)));
  EXPECT_EQ(a, value_or_fail(embedding_lookup(t.sharded, ids)));
}

// TF's embedding_lookup example.
TEST(ShardedVariableTest, EmbeddingLookupExample) {
  LocalPsCluster cluster(3);
  std::vector<Variable> parts;
  for (const Tensor& value : {Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
                              Tensor::from_vector<float>({5, 6, 7, 8}, {2, 2}),
                              Tensor::from_vector<float>({9, 10}, {1, 2})}) {
    parts.push_back(value_or_fail(cluster.strategy->create_variable(value)).variables()[0]);
  }
  ShardedVariable sv = value_or_fail(ShardedVariable::create(parts));
  EXPECT_EQ(sv.name(), "ShardedVariable");
  EXPECT_EQ(sv.shape(), (Shape{5, 2}));
  cluster.reset_counts();
  const Tensor rows = value_or_fail(embedding_lookup(sv, Tensor::from_vector<int64_t>({0, 3, 4})));
  EXPECT_EQ(rows, Tensor::from_vector<float>({1, 2, 7, 8, 9, 10}, {3, 2}));
  // One gather per shard that owns requested ids, one request per ps.
  for (const auto& c : cluster.clients) EXPECT_EQ(c->requests(), 1);
  cluster.reset_counts();
  EXPECT_EQ(value_or_fail(sv.sparse_read(Tensor::from_vector<int64_t>({1, 0}))),
            Tensor::from_vector<float>({3, 4, 1, 2}, {2, 2}));
  EXPECT_EQ(cluster.clients[0]->requests(), 1);
  EXPECT_EQ(cluster.total_requests(), 1);  // shards without ids are not asked
}

TEST(ShardedVariableTest, OneRequestPerPsForMultiPartOps) {
  // 6 parts over 2 ps: each op sends exactly 2 requests.
  LocalPsCluster cluster(2, fixed(6));
  ShardedVariable w = value_or_fail(cluster.strategy->create_variable(iota(12, 3), {.name = "w"}));
  ASSERT_EQ(w.num_parts(), 6u);
  cluster.reset_counts();
  ASSERT_TRUE(w.read_value().ok());
  EXPECT_EQ(cluster.clients[0]->requests(), 1);
  EXPECT_EQ(cluster.clients[1]->requests(), 1);
  EXPECT_EQ(cluster.clients[0]->ops(), 3);
  cluster.reset_counts();
  ASSERT_TRUE(w.assign_add(iota(12, 3)).ok());
  EXPECT_EQ(cluster.total_requests(), 2);
  cluster.reset_counts();
  ASSERT_TRUE(w.scatter_add({iota(12, 3),
                             Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})})
                  .ok());
  EXPECT_EQ(cluster.total_requests(), 2);
  cluster.reset_counts();
  ASSERT_TRUE(embedding_lookup(w, Tensor::from_vector<int64_t>({11, 0, 5})).ok());
  EXPECT_EQ(cluster.total_requests(), 2);
}

TEST(ShardedVariableTest, BadInputNamesTheVariableAndSendsNothing) {
  LocalPsCluster cluster(2, fixed(2));
  ShardedVariable w = value_or_fail(cluster.strategy->create_variable(iota(4, 2), {.name = "w"}));
  cluster.reset_counts();
  absl::Status s = w.assign(iota(3, 2));
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("sharded variable 'w' is float32 [3, 2] but the variable is "
                                     "float32 [4, 2]"));
  auto lookup = embedding_lookup(w, Tensor::from_vector<int64_t>({0, 4}));
  ASSERT_EQ(lookup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(lookup.status().message(),
              HasSubstr("row id 4 at position 1 is out of range for variable 'w' with 4 rows"));
  s = w.scatter_add({iota(2, 2), Tensor::from_vector<int64_t>({0, 1}, {1, 2})});
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("needs 1-D indices"));
  s = w.scatter_add({iota(2, 3), Tensor::from_vector<int64_t>({0, 1})});
  ASSERT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("needs values of float32 [2, 2]"));
  auto float_ids = embedding_lookup(w, Tensor::from_vector<float>({0}));
  EXPECT_EQ(float_ids.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cluster.total_requests(), 0);
}

TEST(ShardedVariableTest, CreateChecksLikeTf) {
  LocalPsCluster cluster(1);
  auto make = [&](Tensor t) {
    return value_or_fail(cluster.strategy->create_variable(std::move(t))).variables()[0];
  };
  EXPECT_THAT(ShardedVariable::create({}).status().message(),
              HasSubstr("should be a non-empty list of"));
  EXPECT_THAT(ShardedVariable::create(
                  {make(Tensor(DType::kFloat32, {2})), make(Tensor(DType::kInt32, {2}))})
                  .status()
                  .message(),
              HasSubstr("must have the same dtype"));
  EXPECT_THAT(ShardedVariable::create(
                  {make(Tensor(DType::kFloat32, {2, 3})), make(Tensor(DType::kFloat32, {2, 4}))})
                  .status()
                  .message(),
              HasSubstr("the same shapes except for the first axis"));
  EXPECT_THAT(ShardedVariable::create({make(Tensor::scalar(1.0f)), make(Tensor::scalar(1.0f))})
                  .status()
                  .message(),
              HasSubstr("scalars are never sharded"));
  EXPECT_EQ(ShardedVariable::create({Variable()}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ShardedVariableTest, EmptyHandlesFailCleanly) {
  ShardedVariable empty;
  EXPECT_FALSE(empty.valid());
  EXPECT_EQ(empty.read_value().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(empty.assign(Tensor::scalar(1.0f)).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(empty.variables().empty());
  Variable none;
  EXPECT_EQ(none.read_value().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_FALSE(ShardedVariable(none).valid());
}

TEST(ShardedVariableTest, PlainVariableOpsAndErrors) {
  LocalPsCluster cluster(1);
  Variable v =
      value_or_fail(cluster.strategy->create_variable(iota(3, 2), {.name = "v"})).variables()[0];
  ASSERT_TRUE(v.scatter_max({Tensor::from_vector<float>({10, -1}, {1, 2}),
                             Tensor::from_vector<int32_t>({2})})
                  .ok());
  EXPECT_EQ(value_or_fail(v.read_value()), Tensor::from_vector<float>({0, 1, 2, 3, 10, 5}, {3, 2}));
  EXPECT_EQ(value_or_fail(v.sparse_read(Tensor::scalar<int64_t>(2))),
            Tensor::from_vector<float>({10, 5}, {2}));
  absl::Status wrong = v.assign(Tensor::scalar(1.0f));
  ASSERT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong.message(), HasSubstr("'v'"));
  // A task that does not hold the variable.
  ShardedVariable gone = value_or_fail(ShardedVariable::from_handle(
      VariableHandle{"x", DType::kFloat32, {}, {{"ps", 0, "missing", {}, 0}}},
      cluster.strategy->client_lookup()));
  EXPECT_EQ(gone.read_value().status().code(), absl::StatusCode::kNotFound);
}

TEST(ShardedVariableTest, StringVariablesShardToo) {
  LocalPsCluster cluster(2, fixed(2));
  const Tensor words = Tensor::from_strings({"a", "b", "c"});
  ShardedVariable w = value_or_fail(cluster.strategy->create_variable(words));
  ASSERT_EQ(w.num_parts(), 2u);
  EXPECT_EQ(value_or_fail(w.read_value()), words);
  EXPECT_EQ(value_or_fail(embedding_lookup(w, Tensor::from_vector<int64_t>({2, 0}))),
            Tensor::from_strings({"c", "a"}));
}

}  // namespace
}  // namespace psflow::internal
