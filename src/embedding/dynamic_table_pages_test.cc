// Paged export and import of a table shard (DynamicTable::export_page,
// import_pages) and the ps's staging of import pages.
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "embedding/dynamic_table.h"
#include "embedding/staged_table_import.h"
#include "embedding/table_reshard.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;
using ::testing::HasSubstr;

DynamicEmbeddingOptions options() {
  DynamicEmbeddingOptions o;
  o.dim = 3;
  o.seed = 5;
  o.optimizer.kind = Kind::kAdagrad;
  o.ttl_steps = 1000;
  return o;
}

std::unique_ptr<DynamicTable> filled(int64_t n) {
  auto t = *DynamicTable::create(options());
  std::vector<int64_t> k;
  for (int64_t i = 0; i < n; ++i) k.push_back(i * 7919 - 50);
  (void)t->lookup(Tensor::from_vector(k, {n}), 3, false);
  Tensor grads(DType::kFloat32, {n, 3});
  for (int64_t i = 0; i < grads.num_elements(); ++i) {
    grads.mutable_flat<float>()[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i % 17);
  }
  t->apply(options().optimizer, 0.1, Tensor::from_vector(k, {n}), grads, 5);
  return t;
}

std::map<int64_t, std::pair<std::vector<float>, int64_t>> rows_of(const DynamicTable& t) {
  std::map<int64_t, std::pair<std::vector<float>, int64_t>> out;
  const int64_t stride = t.options().dim * (1 + t.num_slots());
  t.for_each_row([&](int64_t key, const float* row, int64_t last_seen) {
    out[key] = {std::vector<float>(row, row + stride), last_seen};
  });
  return out;
}

// Every page of `t`, reading `limit` rows at a time; `between` runs after
// each page.
std::vector<DynamicTable::Rows> all_pages(DynamicTable& t, int64_t limit,
                                          const std::function<void()>& between = {}) {
  std::vector<DynamicTable::Rows> pages;
  int64_t cursor = 0;
  for (int i = 0; i < 10000; ++i) {
    absl::StatusOr<DynamicTable::ExportPage> p = t.export_page(cursor, limit, int64_t{1} << 30);
    EXPECT_TRUE(p.ok()) << p.status();
    if (!p.ok()) break;
    EXPECT_LE(p->rows.keys.num_elements(), limit);
    pages.push_back(std::move(p->rows));
    cursor = p->next_cursor;
    if (cursor == 0) break;
    if (between) between();
  }
  return pages;
}

TEST(DynamicTablePagesTest, PagesReassembleTheWholeShard) {
  auto a = filled(103);
  const std::vector<DynamicTable::Rows> pages = all_pages(*a, 10);
  ASSERT_EQ(pages.size(), 11u);
  EXPECT_EQ(pages.back().keys.num_elements(), 3);
  const DynamicTable::Rows whole = *a->export_rows(int64_t{1} << 30);
  const DynamicTable::Rows joined = concat_table_rows(pages);
  EXPECT_EQ(joined.keys.flat<int64_t>(), whole.keys.flat<int64_t>());
  ASSERT_TRUE(DynamicTable::validate_import_pages(options(), pages).ok());
  auto b = *DynamicTable::create(options());
  b->import_pages(pages);
  EXPECT_EQ(rows_of(*a), rows_of(*b));
  EXPECT_EQ(b->stats().clock, 5);
  EXPECT_EQ(b->stats().applies, 1);
}

// A page sequence reads the shard as it was at its first page: rows
// created, updated or evicted afterwards are not in it.
TEST(DynamicTablePagesTest, PagesReadTheStateOfTheFirstPage) {
  auto a = filled(50);
  const auto before = rows_of(*a);
  int64_t extra = 1'000'000;
  const std::vector<DynamicTable::Rows> pages = all_pages(*a, 7, [&] {
    (void)a->lookup(Tensor::from_vector<int64_t>({extra++, -50}, {2}), 9, false);
    Tensor g(DType::kFloat32, {1, 3});
    for (float& x : g.mutable_flat<float>()) x = 1;
    a->apply(options().optimizer, 1.0, Tensor::from_vector<int64_t>({-50}, {1}), g, 9);
  });
  auto b = *DynamicTable::create(options());
  b->import_pages(pages);
  EXPECT_EQ(rows_of(*b), before);
  EXPECT_EQ(b->stats().clock, 5);
  EXPECT_GT(a->stats().rows, 50);
}

TEST(DynamicTablePagesTest, HostilePageRequestsAreRefused) {
  auto a = filled(20);
  EXPECT_THAT(std::string(a->export_page(-1, 5, 1 << 30).status().message()),
              HasSubstr("negative"));
  EXPECT_THAT(std::string(a->export_page(0, 0, 1 << 30).status().message()),
              HasSubstr("outside [1, "));
  EXPECT_THAT(std::string(a->export_page(0, -3, 1 << 30).status().message()),
              HasSubstr("outside [1, "));
  EXPECT_THAT(
      std::string(
          a->export_page(0, DynamicTable::kMaxPageRows + 1, int64_t{1} << 40).status().message()),
      HasSubstr("outside [1, "));
  EXPECT_THAT(std::string(a->export_page(0, 1000, 1000).status().message()),
              HasSubstr("ask for at most"));
  // A cursor of no copy, one of a replaced copy, and one past the end.
  EXPECT_TRUE(absl::IsFailedPrecondition(a->export_page(12345, 5, 1 << 30).status()));
  absl::StatusOr<DynamicTable::ExportPage> first = a->export_page(0, 5, 1 << 30);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(a->export_page(0, 5, 1 << 30).ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(a->export_page(first->next_cursor, 5, 1 << 30).status()));
  absl::StatusOr<DynamicTable::ExportPage> again = a->export_page(0, 5, 1 << 30);
  ASSERT_TRUE(again.ok());
  const int64_t past = (again->next_cursor & ~int64_t{0xFFFFFFFF}) | 21;
  EXPECT_THAT(std::string(a->export_page(past, 5, 1 << 30).status().message()),
              HasSubstr("row 21 of a copy of 20"));
  // The table is unchanged and a fresh export still works.
  EXPECT_EQ(a->stats().rows, 20);
  EXPECT_EQ(concat_table_rows(all_pages(*a, 6)).keys.num_elements(), 20);
}

TEST(DynamicTablePagesTest, PagesWithARepeatedKeyAreRefused) {
  auto a = filled(10);
  std::vector<DynamicTable::Rows> pages = all_pages(*a, 4);
  pages.push_back(pages[0]);
  EXPECT_THAT(std::string(DynamicTable::validate_import_pages(options(), pages).message()),
              HasSubstr("appears in two pages"));
}

// The reshard plan cuts the same rows as reshard_table_rows, page by
// page, and refuses a key saved in two shards.
TEST(TableReshardTest, SlicesMatchTheCopyingReshard) {
  auto a = filled(40);
  auto b = *DynamicTable::create(options());
  (void)b->lookup(Tensor::from_vector<int64_t>({123, 456, 789}, {3}), 8, false);
  const std::vector<DynamicTable::Rows> saved = {*a->export_rows(1 << 30),
                                                 *b->export_rows(1 << 30)};
  const std::vector<DynamicTable::Rows> copied = reshard_table_rows(saved, 3, options().dim);
  absl::StatusOr<TableReshard> plan = TableReshard::plan(saved, 3, options());
  ASSERT_TRUE(plan.ok()) << plan.status();
  for (int t = 0; t < 3; ++t) {
    const int64_t n = plan->totals()[static_cast<size_t>(t)];
    ASSERT_EQ(n, copied[static_cast<size_t>(t)].keys.num_elements());
    std::vector<DynamicTable::Rows> pages;
    for (int64_t at = 0; at < n; at += 4)
      pages.push_back(plan->slice(t, at, std::min<int64_t>(4, n - at)));
    const DynamicTable::Rows joined = concat_table_rows(pages);
    EXPECT_EQ(joined.keys.flat<int64_t>(), copied[static_cast<size_t>(t)].keys.flat<int64_t>());
    EXPECT_EQ(joined.values.flat<float>(), copied[static_cast<size_t>(t)].values.flat<float>());
    EXPECT_EQ(joined.slots[0].flat<float>(), copied[static_cast<size_t>(t)].slots[0].flat<float>());
    EXPECT_EQ(joined.last_seen.flat<int64_t>(),
              copied[static_cast<size_t>(t)].last_seen.flat<int64_t>());
    EXPECT_EQ(joined.clock, 8);
  }
  const std::vector<DynamicTable::Rows> twice = {saved[0], saved[0]};
  EXPECT_THAT(std::string(TableReshard::plan(twice, 2, options()).status().message()),
              HasSubstr("appears twice"));
  DynamicEmbeddingOptions small = options();
  small.capacity_per_shard = 10;
  EXPECT_THAT(std::string(TableReshard::plan(saved, 2, small).status().message()),
              HasSubstr("capacity_per_shard 10"));
}

TEST(StagedTableImportsTest, PagesInOrderCompleteTheShardOnce) {
  auto a = filled(10);
  const std::vector<DynamicTable::Rows> pages = all_pages(*a, 4);  // 4, 4, 2
  StagedTableImports staged;
  using Action = StagedTableImports::Action;
  auto stage = [&](int64_t offset, const DynamicTable::Rows& r) {
    return staged.stage("t", "cfg", {offset, 10}, r);
  };
  ASSERT_FALSE(stage(0, pages[0])->has_value());
  // Out of sequence: refused, nothing staged changes.
  EXPECT_TRUE(absl::IsFailedPrecondition(staged.check("t", "cfg", {8, 10}, 2).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(staged.check("t", "other", {4, 10}, 4).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(staged.check("t", "cfg", {8, 10}, 3).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(staged.check("t", "cfg", {-1, 10}, 3).status()));
  ASSERT_FALSE(stage(4, pages[1])->has_value());
  // A retried page replaces itself.
  EXPECT_EQ(*staged.check("t", "cfg", {4, 10}, 4), Action::kStage);
  ASSERT_FALSE(stage(4, pages[1])->has_value());
  absl::StatusOr<std::optional<std::vector<DynamicTable::Rows>>> done = stage(8, pages[2]);
  ASSERT_TRUE(done.ok() && done->has_value());
  EXPECT_EQ((*done)->size(), 3u);
  // A retried last page changes nothing; an earlier one is out of sequence.
  EXPECT_EQ(*staged.check("t", "cfg", {8, 10}, 2), Action::kDone);
  EXPECT_FALSE(stage(8, pages[2])->has_value());
  EXPECT_TRUE(absl::IsFailedPrecondition(staged.check("t", "cfg", {4, 10}, 4).status()));
}

}  // namespace
}  // namespace psflow::internal
