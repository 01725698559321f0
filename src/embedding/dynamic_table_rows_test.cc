// A table shard's rows out and in (the checkpoint side of DynamicTable) and
// their regrouping for another number of ps tasks.
#include <algorithm>
#include <map>
#include <vector>

#include "embedding/dynamic_table.h"
#include "embedding/key_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;
using ::testing::HasSubstr;

DynamicEmbeddingOptions options(Kind kind, int64_t ttl = 0) {
  DynamicEmbeddingOptions o;
  o.dim = 4;
  o.seed = 9;
  o.optimizer.kind = kind;
  o.ttl_steps = ttl;
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

// Every row of `t` by key: values and slots, and its last-seen step.
std::map<int64_t, std::pair<std::vector<float>, int64_t>> rows_of(const DynamicTable& t) {
  std::map<int64_t, std::pair<std::vector<float>, int64_t>> out;
  const int64_t stride = t.options().dim * (1 + t.num_slots());
  t.for_each_row([&](int64_t key, const float* row, int64_t last_seen) {
    out[key] = {std::vector<float>(row, row + stride), last_seen};
  });
  return out;
}

// A table with rows touched at different steps and updated by `kind`.
std::unique_ptr<DynamicTable> trained(const DynamicEmbeddingOptions& o) {
  auto t = make(o);
  (void)t->lookup(keys({1, 2, 3, 4, 5}), 1, false);
  (void)t->lookup(keys({3, -7, 1 << 20}), 4, false);
  Tensor grads(DType::kFloat32, {3, o.dim});
  for (int64_t i = 0; i < grads.num_elements(); ++i) {
    grads.mutable_flat<float>()[static_cast<size_t>(i)] = 0.1f * static_cast<float>(i + 1);
  }
  OptimizerConfig c = o.optimizer;
  t->apply(c, 0.5, keys({2, 3, -7}), grads, 6);
  return t;
}

TEST(DynamicTableRowsTest, ExportThenImportReproducesEveryRow) {
  for (Kind kind : {Kind::kSgd, Kind::kAdagrad, Kind::kAdam}) {
    const DynamicEmbeddingOptions o = options(kind, /*ttl=*/100);
    auto a = trained(o);
    absl::StatusOr<DynamicTable::Rows> rows = a->export_rows(int64_t{1} << 30);
    ASSERT_TRUE(rows.ok()) << rows.status();
    EXPECT_EQ(rows->keys.num_elements(), 7);
    EXPECT_EQ(rows->slots.size(), optimizer_slot_names(kind).size());
    EXPECT_EQ(rows->clock, 6);
    EXPECT_EQ(rows->applies, 1);
    ASSERT_TRUE(DynamicTable::validate_import(o, *rows).ok());
    auto b = make(o);
    (void)b->lookup(keys({99}), 2, false);  // replaced by the import
    b->import_rows(*rows);
    EXPECT_EQ(rows_of(*a), rows_of(*b));
    EXPECT_FALSE(b->find(99).has_value());
    const DynamicTableStats s = b->stats();
    EXPECT_EQ(s.rows, 7);
    EXPECT_EQ(s.clock, 6);
    EXPECT_EQ(s.applies, 1);
    // The recency order follows the last-seen steps: at step 105 the rows
    // last seen before step 5 (keys 1, 4, 5 at step 1, 2^20 at step 4)
    // expire, those updated at step 6 (2, 3, -7) stay.
    (void)b->lookup(keys({}), 105, false);
    EXPECT_EQ(b->stats().rows, 3);
    EXPECT_EQ(b->stats().evicted_ttl, 4);
    EXPECT_FALSE(b->find(4).has_value());
    EXPECT_FALSE(b->find(int64_t{1} << 20).has_value());
    EXPECT_TRUE(b->find(3).has_value());
    EXPECT_TRUE(b->find(-7).has_value());
  }
}

TEST(DynamicTableRowsTest, ImportedTableKeepsUpdatingAsTheOriginal) {
  const DynamicEmbeddingOptions o = options(Kind::kAdam);
  auto a = trained(o);
  auto b = make(o);
  b->import_rows(*a->export_rows(int64_t{1} << 30));
  Tensor grads(DType::kFloat32, {2, o.dim});
  for (float& g : grads.mutable_flat<float>()) g = 0.25f;
  for (auto* t : {a.get(), b.get()}) t->apply(o.optimizer, 0.1, keys({2, 8}), grads, 7);
  // Key 8 has no row in either; a new key still gets the initial row.
  EXPECT_EQ(rows_of(*a), rows_of(*b));
  Tensor ra = a->lookup(keys({1234}), 8, false);
  Tensor rb = b->lookup(keys({1234}), 8, false);
  EXPECT_EQ(std::vector<float>(ra.flat<float>().begin(), ra.flat<float>().end()),
            std::vector<float>(rb.flat<float>().begin(), rb.flat<float>().end()));
}

TEST(DynamicTableRowsTest, AdmissionCountsRestartAfterImport) {
  DynamicEmbeddingOptions o = options(Kind::kSgd);
  o.admit_after = 3;
  o.sketch_width = 1024;
  auto a = make(o);
  (void)a->lookup(keys({50, 50}), 1, false);  // two sightings, no row yet
  (void)a->lookup(keys({60, 60, 60}), 1, false);
  auto b = make(o);
  b->import_rows(*a->export_rows(int64_t{1} << 30));
  EXPECT_TRUE(b->find(60).has_value());
  // Key 50's two sightings were not saved: it needs three more.
  (void)b->lookup(keys({50, 50}), 2, false);
  EXPECT_FALSE(b->find(50).has_value());
  (void)b->lookup(keys({50}), 2, false);
  EXPECT_TRUE(b->find(50).has_value());
}

TEST(DynamicTableRowsTest, BadRowsAreRefused) {
  const DynamicEmbeddingOptions o = options(Kind::kAdagrad);
  auto a = trained(o);
  const DynamicTable::Rows good = *a->export_rows(int64_t{1} << 30);
  auto refused = [&](DynamicTable::Rows r, const std::string& why) {
    absl::Status s = DynamicTable::validate_import(o, r);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << why;
    return std::string(s.message());
  };
  DynamicTable::Rows dup = good;
  std::vector<int64_t> k(good.keys.flat<int64_t>().begin(), good.keys.flat<int64_t>().end());
  k[1] = k[0];
  dup.keys = keys(k);
  EXPECT_THAT(refused(dup, "duplicate"), HasSubstr("appears twice"));
  DynamicTable::Rows short_keys = good;
  short_keys.keys = keys({1, 2});
  EXPECT_THAT(refused(short_keys, "count"), HasSubstr("one row per key"));
  DynamicTable::Rows no_slot = good;
  no_slot.slots.clear();
  EXPECT_THAT(refused(no_slot, "slots"), HasSubstr("0 slot tensors"));
  DynamicTable::Rows f64 = good;
  f64.values = Tensor(DType::kFloat64, good.values.shape());
  EXPECT_THAT(refused(f64, "dtype"), HasSubstr("float32"));
  DynamicTable::Rows late = good;
  late.clock = 2;  // rows were last seen at step 6
  EXPECT_THAT(refused(late, "clock"), HasSubstr("outside [0, clock 2]"));
  DynamicEmbeddingOptions small = o;
  small.capacity_per_shard = 3;
  EXPECT_THAT(std::string(DynamicTable::validate_import(small, good).message()),
              HasSubstr("capacity_per_shard 3"));
  EXPECT_THAT(std::string(a->export_rows(100).status().message()), HasSubstr("more than the 100"));
}

TEST(DynamicTableRowsTest, ReshardSendsEveryRowToItsKeysTask) {
  const DynamicEmbeddingOptions o = options(Kind::kAdagrad);
  // Two saved shards, as two ps tasks hold them.
  auto s0 = make(o);
  auto s1 = make(o);
  std::vector<int64_t> all;
  for (int64_t key = -40; key < 60; ++key) {
    (void)(dynamic_key_task(key, 2) == 0 ? s0 : s1)->lookup(keys({key}), key + 40, false);
    all.push_back(key);
  }
  std::vector<DynamicTable::Rows> saved = {*s0->export_rows(int64_t{1} << 30),
                                           *s1->export_rows(int64_t{1} << 30)};
  saved[1].applies = 3;
  for (int n : {1, 3}) {
    std::vector<DynamicTable::Rows> out = reshard_table_rows(saved, n, o.dim);
    ASSERT_EQ(out.size(), static_cast<size_t>(n));
    std::map<int64_t, std::pair<std::vector<float>, int64_t>> restored;
    for (int t = 0; t < n; ++t) {
      EXPECT_EQ(out[static_cast<size_t>(t)].clock, 99);
      EXPECT_EQ(out[static_cast<size_t>(t)].applies, 3);
      ASSERT_TRUE(DynamicTable::validate_import(o, out[static_cast<size_t>(t)]).ok());
      for (int64_t key : out[static_cast<size_t>(t)].keys.flat<int64_t>()) {
        EXPECT_EQ(dynamic_key_task(key, n), t) << key;
      }
      auto table = make(o);
      table->import_rows(out[static_cast<size_t>(t)]);
      for (const auto& [key, row] : rows_of(*table)) restored[key] = row;
    }
    std::map<int64_t, std::pair<std::vector<float>, int64_t>> original = rows_of(*s0);
    for (const auto& [key, row] : rows_of(*s1)) original[key] = row;
    EXPECT_EQ(restored.size(), all.size());
    EXPECT_EQ(restored, original);
  }
}

}  // namespace
}  // namespace psflow::internal
