#include "embedding/dynamic_table.h"

#include <cstring>
#include <set>
#include <vector>

#include "embedding/count_min_sketch.h"
#include "embedding/key_hash.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;

DynamicEmbeddingOptions options(int64_t dim, Kind kind = Kind::kSgd) {
  DynamicEmbeddingOptions o;
  o.dim = dim;
  o.seed = 42;
  o.optimizer.kind = kind;
  return o;
}

std::unique_ptr<DynamicTable> make(const DynamicEmbeddingOptions& o) {
  absl::StatusOr<std::unique_ptr<DynamicTable>> t = DynamicTable::create(o);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

Tensor keys(std::vector<int64_t> k) {
  const auto n = static_cast<int64_t>(k.size());
  return Tensor::from_vector(k, {n});
}

std::vector<float> initial(const DynamicEmbeddingOptions& o, int64_t key) {
  std::vector<float> v(static_cast<size_t>(o.dim));
  initial_row(o, key, v.data());
  return v;
}

std::vector<float> row_of(const Tensor& rows, int64_t i) {
  const int64_t dim = rows.dim(1);
  const float* p = rows.flat<float>().data() + i * dim;
  return std::vector<float>(p, p + dim);
}

TEST(DynamicTableTest, RowsDependOnlyOnSeedAndKey) {
  DynamicEmbeddingOptions o = options(8);
  auto a = make(o);
  auto b = make(o);
  Tensor ra = a->lookup(keys({7, -3, int64_t{1} << 40}), 0, false);
  // Another order and another table: the same rows.
  Tensor rb = b->lookup(keys({int64_t{1} << 40, 7, -3}), 5, false);
  EXPECT_EQ(row_of(ra, 0), row_of(rb, 1));
  EXPECT_EQ(row_of(ra, 1), row_of(rb, 2));
  EXPECT_EQ(row_of(ra, 2), row_of(rb, 0));
  EXPECT_EQ(row_of(ra, 0), initial(o, 7));
  EXPECT_NE(row_of(ra, 0), row_of(ra, 1));
  for (float v : row_of(ra, 0)) {
    EXPECT_GE(v, -0.05f);
    EXPECT_LT(v, 0.05f);
  }
  o.seed = 43;
  EXPECT_NE(initial(o, 7), row_of(ra, 0));
  o.initializer = DynamicEmbeddingInitializer::kZeros;
  EXPECT_EQ(initial(o, 7), std::vector<float>(8, 0.0f));
  EXPECT_EQ(a->stats().rows, 3);
  EXPECT_EQ(a->stats().created, 3);
}

TEST(DynamicTableTest, NormalInitializerHasTheScale) {
  DynamicEmbeddingOptions o = options(4096);
  o.initializer = DynamicEmbeddingInitializer::kNormal;
  o.init_scale = 2.0;
  std::vector<float> v = initial(o, 1);
  double sum = 0, sq = 0;
  for (float x : v) {
    sum += x;
    sq += double{x} * x;
  }
  const double mean = sum / 4096;
  const double sd = std::sqrt(sq / 4096 - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.15);
  EXPECT_NEAR(sd, 2.0, 0.15);
}

TEST(DynamicTableTest, KeysSpreadOverTasksByAStableHash) {
  // Fixed values: the spread must not change between builds or runs.
  EXPECT_EQ(splitmix64(0), 0xE220A8397B1DCDAFULL);
  std::vector<int> per_task(3);
  for (int64_t k = 0; k < 30000; ++k) ++per_task[static_cast<size_t>(dynamic_key_task(k, 3))];
  for (int n : per_task) EXPECT_NEAR(n, 10000, 400);
  EXPECT_EQ(dynamic_key_task(-1, 1), 0);
}

TEST(DynamicTableTest, AdmitsAfterNSightings) {
  DynamicEmbeddingOptions o = options(4);
  o.admit_after = 3;
  o.sketch_width = 1 << 12;
  auto t = make(o);
  Tensor r1 = t->lookup(keys({10, 11}), 0, false);
  EXPECT_EQ(row_of(r1, 0), std::vector<float>(4, 0.0f));
  Tensor r2 = t->lookup(keys({10}), 1, false);
  EXPECT_EQ(row_of(r2, 0), std::vector<float>(4, 0.0f));
  EXPECT_EQ(t->stats().rows, 0);
  EXPECT_EQ(t->stats().not_admitted, 3);
  // The third sighting admits 10; 11 has been seen twice.
  Tensor r3 = t->lookup(keys({10, 11}), 2, false);
  EXPECT_EQ(row_of(r3, 0), initial(o, 10));
  EXPECT_EQ(row_of(r3, 1), std::vector<float>(4, 0.0f));
  EXPECT_EQ(t->stats().rows, 1);
  EXPECT_EQ(t->stats().created, 1);
  EXPECT_EQ(t->stats().not_admitted, 4);
  // Duplicates in one request count each.
  Tensor r4 = t->lookup(keys({12, 12, 12, 12}), 3, false);
  EXPECT_EQ(row_of(r4, 1), std::vector<float>(4, 0.0f));
  EXPECT_EQ(row_of(r4, 2), initial(o, 12));
  EXPECT_EQ(row_of(r4, 3), initial(o, 12));
  EXPECT_EQ(t->stats().rows, 2);
}

TEST(DynamicTableTest, AdmitsAFixedFractionOfKeysByProbability) {
  DynamicEmbeddingOptions o = options(1);
  o.admit_probability = 0.25;
  auto t = make(o);
  std::vector<int64_t> k(20000);
  int64_t expected = 0;
  for (size_t i = 0; i < k.size(); ++i) {
    k[i] = static_cast<int64_t>(i) * 7919;
    if (admission_draw(o.seed, k[i]) < 0.25) ++expected;
  }
  (void)t->lookup(keys(k), 0, false);
  EXPECT_EQ(t->stats().rows, expected);
  EXPECT_NEAR(static_cast<double>(expected), 5000, 300);
  // The same keys again: the same ones are refused, nothing new is admitted.
  (void)t->lookup(keys(k), 1, false);
  EXPECT_EQ(t->stats().rows, expected);
  EXPECT_EQ(t->stats().not_admitted, 2 * (20000 - expected));
}

TEST(DynamicTableTest, ExpiresRowsNotTouchedForTtlSteps) {
  DynamicEmbeddingOptions o = options(2);
  o.ttl_steps = 2;
  auto t = make(o);
  (void)t->lookup(keys({1}), 0, false);
  (void)t->lookup(keys({2}), 1, false);
  // Step 2: 1 is 2 steps old, kept.
  (void)t->lookup(keys({3}), 2, false);
  EXPECT_EQ(t->stats().rows, 3);
  // Step 3: 1 is 3 steps old, evicted; 2 is 2 steps old, kept.
  (void)t->lookup(keys({3}), 3, false);
  EXPECT_FALSE(t->find(1).has_value());
  EXPECT_TRUE(t->find(2).has_value());
  EXPECT_EQ(t->stats().evicted_ttl, 1);
  // An update touches: 2 updated at step 3 lives to step 5, as 3 does.
  OptimizerConfig sgd;
  t->apply(sgd, 0.1, keys({2}), Tensor::from_vector<float>({1, 1}, {1, 2}), 3);
  ASSERT_TRUE(t->find(2).has_value());
  EXPECT_EQ(t->find(2)->last_seen, 3);
  (void)t->lookup(keys({}), 5, false);
  EXPECT_TRUE(t->find(2).has_value());
  EXPECT_TRUE(t->find(3).has_value());
  (void)t->lookup(keys({}), 6, false);
  EXPECT_FALSE(t->find(2).has_value());
  EXPECT_FALSE(t->find(3).has_value());
  EXPECT_EQ(t->stats().evicted_ttl, 3);
  EXPECT_EQ(t->stats().rows, 0);
  // An update at a step past a row's expiry finds no row: dropped.
  t->apply(sgd, 0.1, keys({2}), Tensor::from_vector<float>({1, 1}, {1, 2}), 7);
  EXPECT_EQ(t->stats().dropped_gradients, 1);
  // An evicted key comes back as a new row, with its initial values.
  Tensor back = t->lookup(keys({2}), 8, false);
  EXPECT_EQ(row_of(back, 0), initial(o, 2));
  EXPECT_EQ(t->stats().created, 4);
}

TEST(DynamicTableTest, EvictsTheLeastRecentlyUsedBeyondCapacity) {
  DynamicEmbeddingOptions o = options(2);
  o.capacity_per_shard = 3;
  auto t = make(o);
  (void)t->lookup(keys({1, 2, 3}), 0, false);
  (void)t->lookup(keys({1}), 1, false);  // 2 is now the least recent
  (void)t->lookup(keys({4}), 2, false);
  EXPECT_EQ(t->stats().rows, 3);
  EXPECT_EQ(t->stats().evicted_capacity, 1);
  EXPECT_FALSE(t->find(2).has_value());
  std::vector<int64_t> order;
  t->for_each_row([&](int64_t key, const float*, int64_t) { order.push_back(key); });
  EXPECT_EQ(order, (std::vector<int64_t>{4, 1, 3}));
  // Evicted slots are reused: no new memory for the same number of rows.
  const int64_t bytes = t->stats().bytes;
  (void)t->lookup(keys({5, 6, 7, 8, 9}), 3, false);
  EXPECT_EQ(t->stats().evicted_capacity, 6);
  EXPECT_EQ(t->stats().bytes, bytes);
}

TEST(DynamicTableTest, ReplayedLookupChangesNothing) {
  DynamicEmbeddingOptions o = options(3);
  o.admit_after = 2;
  o.sketch_width = 1024;
  auto t = make(o);
  (void)t->lookup(keys({1, 1}), 0, false);  // admitted at the second sighting
  Tensor replay = t->lookup(keys({1, 2}), 9, true);
  EXPECT_EQ(row_of(replay, 0), initial(o, 1));
  EXPECT_EQ(row_of(replay, 1), std::vector<float>(3, 0.0f));
  DynamicTableStats s = t->stats();
  EXPECT_EQ(s.clock, 0);
  EXPECT_EQ(s.rows, 1);
  EXPECT_EQ(s.not_admitted, 1);
  // 2's sighting in the replay did not count.
  (void)t->lookup(keys({2}), 1, false);
  EXPECT_EQ(t->stats().rows, 1);
}

// Every optimizer on the touched rows gives exactly what the dense sparse
// apply gives on a variable holding the same rows.
TEST(DynamicTableTest, OptimizersMatchTheDenseSparseApply) {
  for (Kind kind : {Kind::kSgd, Kind::kMomentum, Kind::kAdagrad, Kind::kAdam, Kind::kFtrl}) {
    SCOPED_TRACE(std::string(optimizer_name(kind)));
    DynamicEmbeddingOptions o = options(5, kind);
    o.optimizer.initial_accumulator_value = 0.2;
    o.optimizer.l1_regularization_strength = 0.01;
    auto t = make(o);
    const std::vector<int64_t> table_keys = {100, -7, 31};
    Tensor var = t->lookup(keys(table_keys), 0, false).clone();
    OptimizerSlots slots;
    for (int step = 0; step < 3; ++step) {
      // Rows 0 and 2 touched (0 twice: summed), row 1 untouched.
      std::vector<float> g(15);
      for (size_t i = 0; i < g.size(); ++i) g[i] = 0.1f * static_cast<float>(i + 1) - 0.3f * step;
      Tensor grads = Tensor::from_vector(g, {3, 5});
      ASSERT_TRUE(apply_sparse_gradient(o.optimizer, 0.05, var, slots,
                                        Tensor::from_vector<int64_t>({0, 2, 0}, {3}), grads)
                      .ok());
      ASSERT_TRUE(t->validate_apply(o.optimizer, 0.05, keys({100, 31, 100}), grads).ok());
      t->apply(o.optimizer, 0.05, keys({100, 31, 100}), grads, step + 1);
    }
    const std::vector<std::string_view> names = optimizer_slot_names(kind);
    for (int64_t i = 0; i < 3; ++i) {
      std::optional<DynamicTable::RowCopy> r = t->find(table_keys[static_cast<size_t>(i)]);
      ASSERT_TRUE(r.has_value());
      EXPECT_EQ(std::vector<float>(r->values.begin(), r->values.begin() + 5), row_of(var, i));
      for (size_t s = 0; s < names.size(); ++s) {
        const Tensor& slot = slots.slots.at(std::string(names[s]));
        const auto from = static_cast<std::ptrdiff_t>(5 * (s + 1));
        EXPECT_EQ(std::vector<float>(r->values.begin() + from, r->values.begin() + from + 5),
                  row_of(slot, i))
            << names[s];
      }
    }
    EXPECT_EQ(t->stats().applies, 3);
  }
}

TEST(DynamicTableTest, DropsGradientsOfKeysWithoutARow) {
  auto t = make(options(2));
  t->apply(OptimizerConfig(), 1.0, keys({5, 5, 6}),
           Tensor::from_vector<float>({1, 1, 1, 1, 1, 1}, {3, 2}), 0);
  EXPECT_EQ(t->stats().dropped_gradients, 2);
  EXPECT_EQ(t->stats().rows, 0);
}

TEST(DynamicTableTest, RefusesBadRequestsAndOptions) {
  auto t = make(options(2, Kind::kAdagrad));
  EXPECT_EQ(t->validate_lookup(Tensor::from_vector<int32_t>({1}, {1})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->validate_lookup(Tensor::from_vector<int64_t>({1, 2}, {1, 2})).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->validate_lookup(Tensor(DType::kInt64, {DynamicTable::kMaxKeys + 1})).code(),
            absl::StatusCode::kInvalidArgument);
  OptimizerConfig adagrad;
  adagrad.kind = Kind::kAdagrad;
  const Tensor grads = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  absl::Status s = t->validate_apply(adagrad, 0.1, keys({1}), grads);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[1, 2]"), std::string::npos) << s;
  EXPECT_EQ(t->validate_apply(OptimizerConfig(), 0.1, keys({1}),
                              Tensor::from_vector<float>({1, 2}, {1, 2}))
                .code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      t->validate_apply(adagrad, -1, keys({1}), Tensor::from_vector<float>({1, 2}, {1, 2})).code(),
      absl::StatusCode::kInvalidArgument);
  DynamicEmbeddingOptions o = options(0);
  EXPECT_EQ(DynamicTable::create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(4);
  o.dtype = DType::kFloat64;
  EXPECT_EQ(DynamicTable::create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(4);
  o.admit_probability = 0;
  EXPECT_EQ(DynamicTable::create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(4);
  o.admit_after = 70000;
  EXPECT_EQ(DynamicTable::create(o).status().code(), absl::StatusCode::kInvalidArgument);
  o = options(4);
  o.ttl_steps = -1;
  EXPECT_EQ(DynamicTable::create(o).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DynamicTableTest, MemoryPerRowIsNearTheRawSize) {
  for (int64_t dim : {16, 64}) {
    auto t = make(options(dim, Kind::kAdagrad));
    std::vector<int64_t> k(200000);
    for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<int64_t>(i) * 1000003;
    (void)t->lookup(keys(k), 0, false);
    DynamicTableStats s = t->stats();
    const double raw = 8.0 + 4.0 * static_cast<double>(dim) * 2 + 8.0;
    const double per_row = static_cast<double>(s.bytes) / static_cast<double>(s.rows);
    EXPECT_LE(per_row, 1.5 * raw) << "dim " << dim << ": " << per_row << " bytes per row";
  }
}

TEST(CountMinSketchTest, NeverUndercountsAndIsExactWhenSparse) {
  CountMinSketch sketch(1 << 16);
  for (int64_t k = 0; k < 100; ++k) {
    for (int64_t i = 0; i <= k % 7; ++i) sketch.add(k);
  }
  for (int64_t k = 0; k < 100; ++k) EXPECT_EQ(sketch.count(k), static_cast<uint32_t>(k % 7 + 1));
  // Crowded: 64 counters per row for 5000 keys; counts only go up.
  CountMinSketch small(64);
  for (int64_t k = 0; k < 5000; ++k) small.add(k);
  for (int64_t k = 0; k < 5000; ++k) EXPECT_GE(small.count(k), 1u);
  EXPECT_EQ(small.bytes(), 4u * 64u * 2u);
}

}  // namespace
}  // namespace psflow::internal
