#include "ps/server/variable_shard.h"

#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

Tensor rows_4x2() { return Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}); }

TEST(VariableShardTest, ReadIsASnapshot) {
  VariableShard v("w", rows_4x2());
  Tensor before = v.read();
  ASSERT_TRUE(v.assign_add(Tensor::from_vector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {4, 2})).ok());
  EXPECT_EQ(before, rows_4x2());
  EXPECT_EQ(v.read(), Tensor::from_vector<float>({2, 3, 4, 5, 6, 7, 8, 9}, {4, 2}));
}

TEST(VariableShardTest, AssignDoesNotAliasTheCallersTensor) {
  VariableShard v("w", rows_4x2());
  Tensor value = Tensor::from_vector<float>({0, 0, 0, 0, 0, 0, 0, 0}, {4, 2});
  ASSERT_TRUE(v.assign(value).ok());
  value.mutable_flat<float>()[0] = 42;
  EXPECT_EQ(v.read().flat<float>()[0], 0.0f);
}

TEST(VariableShardTest, GatherReturnsRowsInIdOrder) {
  VariableShard v("w", rows_4x2());
  auto rows = v.gather(Tensor::from_vector<int32_t>({3, 0, 3}, {3}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, Tensor::from_vector<float>({7, 8, 1, 2, 7, 8}, {3, 2}));
}

// Many scattered rows (the prefetching copy loop), int32 and int64 ids,
// repeats included, against element-wise indexing.
TEST(VariableShardTest, GatherOfManyScatteredRowsMatchesIndexing) {
  constexpr int64_t kRows = 1000;
  for (const int64_t dim : {1, 3, 16, 64, 200}) {
    SCOPED_TRACE(dim);
    std::vector<float> values(static_cast<size_t>(kRows * dim));
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
    VariableShard v("t", Tensor::from_vector<float>(values, {kRows, dim}));
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < 500; ++i) ids.push_back((i * 7919) % kRows);
    ids.push_back(ids.front());
    for (const bool wide : {false, true}) {
      auto rows = v.gather(
          wide ? Tensor::from_vector<int64_t>(ids, {501})
               : Tensor::from_vector<int32_t>(std::vector<int32_t>(ids.begin(), ids.end()), {501}));
      ASSERT_TRUE(rows.ok()) << rows.status();
      ASSERT_EQ(rows->shape(), (Shape{501, dim}));
      for (size_t i = 0; i < ids.size(); ++i) {
        for (int64_t j = 0; j < dim; ++j) {
          ASSERT_EQ(rows->flat<float>()[i * dim + j], values[ids[i] * dim + j]) << i;
        }
      }
    }
  }
}

TEST(VariableShardTest, ScatterFamily) {
  const Tensor ids = Tensor::from_vector<int64_t>({1, 3, 1}, {3});
  const Tensor upd = Tensor::from_vector<float>({10, 10, 2, 2, 1, 1}, {3, 2});
  struct Case {
    ScatterOp op;
    std::vector<float> expected;
  };
  const std::vector<Case> cases = {
      {ScatterOp::kUpdate, {1, 2, 1, 1, 5, 6, 2, 2}},
      {ScatterOp::kAdd, {1, 2, 14, 15, 5, 6, 9, 10}},
      {ScatterOp::kSub, {1, 2, -8, -7, 5, 6, 5, 6}},
      {ScatterOp::kMul, {1, 2, 30, 40, 5, 6, 14, 16}},
      {ScatterOp::kDiv, {1, 2, 0.3f, 0.4f, 5, 6, 3.5f, 4}},
      {ScatterOp::kMin, {1, 2, 1, 1, 5, 6, 2, 2}},
      {ScatterOp::kMax, {1, 2, 10, 10, 5, 6, 7, 8}},
  };
  for (const Case& c : cases) {
    VariableShard v("w", rows_4x2());
    ASSERT_TRUE(v.scatter(c.op, ids, upd).ok());
    EXPECT_TRUE(all_close(v.read(), Tensor::from_vector<float>(c.expected, {4, 2})).ok())
        << static_cast<int>(c.op) << ": " << v.read();
  }
}

TEST(VariableShardTest, BadInputLeavesTheValueUnchanged) {
  VariableShard v("w", rows_4x2());
  EXPECT_EQ(v.assign(Tensor::from_vector<float>({1, 2}, {2})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.assign(Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2})).code(),
            absl::StatusCode::kInvalidArgument);
  auto s = v.scatter(ScatterOp::kAdd, Tensor::from_vector<int64_t>({0, 4}, {2}),
                     Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("row id 4"), absl::string_view::npos) << s;
  EXPECT_EQ(v.scatter(ScatterOp::kAdd, Tensor::from_vector<int64_t>({-1}, {1}),
                      Tensor::from_vector<float>({1, 1}, {1, 2}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.scatter(ScatterOp::kAdd, Tensor::from_vector<float>({0}, {1}),
                      Tensor::from_vector<float>({1, 1}, {1, 2}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.gather(Tensor::from_vector<int32_t>({9}, {1})).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v.read(), rows_4x2());

  VariableShard ints("i", Tensor::from_vector<int32_t>({4, 4}, {2}));
  EXPECT_EQ(ints.scatter(ScatterOp::kDiv, Tensor::from_vector<int64_t>({0}, {1}),
                         Tensor::from_vector<int32_t>({0}, {1}))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ints.read(), Tensor::from_vector<int32_t>({4, 4}, {2}));
}

// Integer updates wrap around instead of being undefined; in particular the
// most negative value divided by -1 (which traps the processor: a request
// could kill the ps with it) gives that value back.
TEST(VariableShardTest, IntegerArithmeticWrapsAndTheTrappingDivisionIsSafe) {
  using I32 = std::numeric_limits<int32_t>;
  using I64 = std::numeric_limits<int64_t>;
  VariableShard i32("i32", Tensor::from_vector<int32_t>({I32::min(), 7, I32::max()}, {3}));
  ASSERT_TRUE(i32.scatter(ScatterOp::kDiv, Tensor::from_vector<int64_t>({0, 1}, {2}),
                          Tensor::from_vector<int32_t>({-1, -1}, {2}))
                  .ok());
  EXPECT_EQ(i32.read(), Tensor::from_vector<int32_t>({I32::min(), -7, I32::max()}, {3}));
  ASSERT_TRUE(i32.assign_add(Tensor::from_vector<int32_t>({-1, 0, 1}, {3})).ok());
  EXPECT_EQ(i32.read(), Tensor::from_vector<int32_t>({I32::max(), -7, I32::min()}, {3}));
  ASSERT_TRUE(i32.scatter(ScatterOp::kMul, Tensor::from_vector<int64_t>({0}, {1}),
                          Tensor::from_vector<int32_t>({2}, {1}))
                  .ok());
  EXPECT_EQ(i32.read(), Tensor::from_vector<int32_t>({-2, -7, I32::min()}, {3}));

  VariableShard i64("i64", Tensor::from_vector<int64_t>({I64::min(), -9}, {2}));
  ASSERT_TRUE(i64.scatter(ScatterOp::kDiv, Tensor::from_vector<int64_t>({0, 1}, {2}),
                          Tensor::from_vector<int64_t>({-1, 2}, {2}))
                  .ok());
  EXPECT_EQ(i64.read(), Tensor::from_vector<int64_t>({I64::min(), -4}, {2}));
  ASSERT_TRUE(i64.assign_sub(Tensor::from_vector<int64_t>({1, 0}, {2})).ok());
  EXPECT_EQ(i64.read(), Tensor::from_vector<int64_t>({I64::max(), -4}, {2}));

  VariableShard u8("u8", Tensor::from_vector<uint8_t>({250, 3}, {2}));
  ASSERT_TRUE(u8.assign_add(Tensor::from_vector<uint8_t>({10, 0}, {2})).ok());
  EXPECT_EQ(u8.read(), Tensor::from_vector<uint8_t>({4, 3}, {2}));
}

// A variable with a zero-size dimension may have a huge other one. Its
// gathered shape may then need more bytes than int64 counts (refused, not a
// crash); a string tensor of that shape, holding no elements, is fine.
TEST(VariableShardTest, AGatherWhoseShapeCannotExistIsRefused) {
  const Shape shape = {1, 0, (int64_t{1} << 61) - 1};
  const Tensor ids = Tensor::from_vector<int64_t>({0, 0}, {2});
  VariableShard floats("odd", Tensor(DType::kFloat32, shape));
  const absl::Status status = floats.gather(ids).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("gathering 2 rows of 'odd' gives a shape no tensor can have"),
            std::string::npos)
      << status;
  VariableShard strings("odd_strings", Tensor(DType::kString, shape));
  absl::StatusOr<Tensor> empty = strings.gather(ids);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->num_elements(), 0);
}

TEST(VariableShardTest, ConcurrentAssignAddIsAtomic) {
  VariableShard v("counter", Tensor::scalar<int64_t>(0));
  constexpr int kThreads = 8;
  constexpr int kAdds = 10000;
  const Tensor one = Tensor::scalar<int64_t>(1);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kAdds; ++i) ASSERT_TRUE(v.assign_add(one).ok());
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(v.read().scalar_value<int64_t>(), int64_t{kThreads} * kAdds);
}

// Sparse applies check and sum their gradient before taking the shard's
// lock; the row arithmetic itself stays atomic per shard: 8 threads each
// applying 500 SGD updates of -1 (with a duplicated id) to overlapping rows
// leave every row at exactly its count of updates, and the step count at
// the number of applies.
TEST(VariableShardTest, ConcurrentSparseAppliesAreAtomic) {
  constexpr int kThreads = 8;
  constexpr int kApplies = 500;
  VariableShard v("table", Tensor(DType::kFloat32, {16, 4}));
  OptimizerConfig sgd;
  sgd.kind = OptimizerConfig::Kind::kSgd;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Rows t % 4, 4 + t % 4 (twice: summed to -2) and 15.
      const Tensor ids = Tensor::from_vector<int64_t>({t % 4, 4 + t % 4, 4 + t % 4, 15});
      Tensor g(DType::kFloat32, {4, 4});
      g.mutable_vec<float>().setConstant(-1.0f);
      for (int i = 0; i < kApplies; ++i) {
        ASSERT_TRUE(v.apply_sparse_gradient(sgd, 1.0, ids, g).ok());
      }
    });
  }
  for (auto& th : threads) th.join();
  const Tensor value = v.read();
  const auto flat = value.flat<float>();
  // Each of rows 0-3 and 4-7 is hit by 2 of the 8 threads; row 15 by all.
  for (int64_t row = 0; row < 16; ++row) {
    float expected = 0;
    if (row < 4) expected = 2.0f * kApplies;
    if (row >= 4 && row < 8) expected = 2.0f * 2 * kApplies;
    if (row == 15) expected = 1.0f * kThreads * kApplies;
    for (int64_t j = 0; j < 4; ++j) {
      EXPECT_EQ(flat[static_cast<size_t>(row * 4 + j)], expected) << "row " << row;
    }
  }
  EXPECT_EQ(v.optimizer_info().steps, int64_t{kThreads} * kApplies);
}

TEST(VariableShardTest, SnapshotAndRestoreIncludeSlots) {
  VariableShard v("w", Tensor::from_vector<float>({1, 2}, {2}));
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  ASSERT_TRUE(v.apply_dense_gradient(adam, 0.1, Tensor::from_vector<float>({1, 1}, {2})).ok());
  VariableShard::Snapshot snap = v.snapshot();
  EXPECT_EQ(snap.slots.optimizer, "adam");
  EXPECT_EQ(snap.slots.steps, 1);
  ASSERT_EQ(snap.slots.slots.size(), 2u);

  VariableShard fresh("w", Tensor::from_vector<float>({0, 0}, {2}));
  ASSERT_TRUE(fresh.restore(v.snapshot()).ok());
  ASSERT_TRUE(v.apply_dense_gradient(adam, 0.1, Tensor::from_vector<float>({1, -1}, {2})).ok());
  ASSERT_TRUE(fresh.apply_dense_gradient(adam, 0.1, Tensor::from_vector<float>({1, -1}, {2})).ok());
  EXPECT_EQ(v.read(), fresh.read());

  VariableShard::Snapshot wrong;
  wrong.value = Tensor::from_vector<float>({1, 2, 3}, {3});
  EXPECT_EQ(fresh.restore(std::move(wrong)).code(), absl::StatusCode::kInvalidArgument);
}

TEST(VariableShardTest, SharedReadsStayStableAcrossEveryKindOfWrite) {
  const Tensor ids = Tensor::from_vector<int64_t>({1}, {1});
  const Tensor row = Tensor::from_vector<float>({1, 1}, {1, 2});
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  const std::vector<std::function<absl::Status(VariableShard&)>> writes = {
      [](VariableShard& v) {
        return v.assign_add(Tensor(DType::kFloat32, {4, 2}));
      },
      [&](VariableShard& v) { return v.scatter(ScatterOp::kAdd, ids, row); },
      [](VariableShard& v) {
        return v.apply_dense_gradient(OptimizerConfig(), 1.0,
                                      Tensor::from_vector<float>({1, 1, 1, 1, 1, 1, 1, 1}, {4, 2}));
      },
      [&](VariableShard& v) { return v.apply_sparse_gradient(adagrad, 1.0, ids, row); },
  };
  for (size_t i = 0; i < writes.size(); ++i) {
    SCOPED_TRACE(i);
    VariableShard v("w", rows_4x2());
    const Tensor shared = v.read_shared();
    ASSERT_TRUE(writes[i](v).ok());
    EXPECT_EQ(shared, rows_4x2());  // copy-on-write: the reader's view is kept
    EXPECT_NE(v.read_shared().raw_data(), shared.raw_data());
  }
  // Without a reader holding it, updates happen in place.
  VariableShard v("w", rows_4x2());
  const void* before = v.read_shared().raw_data();
  ASSERT_TRUE(v.assign_add(Tensor(DType::kFloat32, {4, 2})).ok());
  EXPECT_EQ(v.read_shared().raw_data(), before);
}

TEST(VariableShardTest, AssignAdoptsATensorNobodyElseHolds) {
  VariableShard v("w", rows_4x2());
  Tensor sole = Tensor::from_vector<float>({8, 7, 6, 5, 4, 3, 2, 1}, {4, 2});
  const void* data = sole.raw_data();
  ASSERT_TRUE(v.assign(std::move(sole)).ok());
  EXPECT_EQ(v.read_shared().raw_data(), data);
  // A slice of a larger buffer is copied, not adopted.
  const Tensor big = Tensor::from_vector<float>(std::vector<float>(16, 1.0f), {8, 2});
  ASSERT_TRUE(v.assign(big.slice(0, 4)).ok());
  EXPECT_NE(v.read_shared().raw_data(), big.raw_data());
}

TEST(VariableShardTest, OptimizerInfo) {
  VariableShard v("w", rows_4x2());
  EXPECT_EQ(v.optimizer_info().optimizer, "");
  OptimizerConfig adagrad;
  adagrad.kind = OptimizerConfig::Kind::kAdagrad;
  ASSERT_TRUE(v.apply_dense_gradient(adagrad, 0.1, rows_4x2()).ok());
  ASSERT_TRUE(v.apply_dense_gradient(adagrad, 0.1, rows_4x2()).ok());
  EXPECT_EQ(v.optimizer_info().optimizer, "adagrad");
  EXPECT_EQ(v.optimizer_info().steps, 2);
}

}  // namespace
}  // namespace psflow::internal
