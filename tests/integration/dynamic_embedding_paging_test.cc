// Paged checkpoints of dynamic embedding tables on real ps processes
// (docs/embeddings.md, "Checkpoints"): a checkpoint saved from 2 ps tasks
// and restored into 3 with a page size of a few rows (many pages per
// shard) keeps every key's values, slots and last-seen step; a page
// sequence read while training goes on sees the shard as it was at its
// first page; hostile page requests are refused with the shard unchanged.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/dynamic_table.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "psflow/checkpoint.h"
#include "psflow/local_cluster.h"
#include "strategy/dynamic_embedding_internal.h"
#include "strategy/dynamic_embedding_rows.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int kNumPs = 3;
constexpr int64_t kPageRows = 7;

// key -> (values and slots, last seen)
using RowMap = std::map<int64_t, std::pair<std::vector<float>, int64_t>>;

RowMap row_map(const std::vector<DynamicTable::Rows>& shards, int64_t dim) {
  RowMap out;
  for (const DynamicTable::Rows& s : shards) {
    for (int64_t i = 0; i < s.keys.num_elements(); ++i) {
      std::vector<float> row(s.values.flat<float>().data() + i * dim,
                             s.values.flat<float>().data() + (i + 1) * dim);
      for (const Tensor& slot : s.slots) {
        row.insert(row.end(), slot.flat<float>().data() + i * dim,
                   slot.flat<float>().data() + (i + 1) * dim);
      }
      out[s.keys.flat<int64_t>()[static_cast<size_t>(i)]] = {
          row, s.last_seen.flat<int64_t>()[static_cast<size_t>(i)]};
    }
  }
  return out;
}

DynamicEmbeddingOptions options() {
  DynamicEmbeddingOptions o;
  o.dim = 4;
  o.seed = 31;
  o.optimizer.kind = Kind::kAdagrad;
  o.ttl_steps = 1000;
  return o;
}

Tensor keys_tensor(const std::vector<int64_t>& k) {
  return Tensor::from_vector(k, {static_cast<int64_t>(k.size())});
}

Tensor ones(int64_t n, int64_t dim) {
  return Tensor::from_vector(std::vector<float>(static_cast<size_t>(n * dim), 1.0f), {n, dim});
}

class DynamicEmbeddingPagingTest : public ::testing::Test {
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
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr) << "the cluster did not start";
    set_checkpoint_table_page_rows(kPageRows);
    dir_ =
        fs::path(::testing::TempDir()) /
        absl::StrCat("de_paging_", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                     "_", ::getpid());
    fs::remove_all(dir_);
  }
  void TearDown() override {
    set_checkpoint_table_page_rows(kDefaultTablePageRows);
    fs::remove_all(dir_);
  }

  static DynamicEmbedding create(const std::string& name, int num_ps) {
    std::vector<std::shared_ptr<VariableClient>> c(clients_->begin(), clients_->begin() + num_ps);
    absl::StatusOr<DynamicEmbedding> t = DynamicEmbeddingAccess::create(name, options(), c);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(DynamicEmbedding());
  }
  static RowMap rows(const DynamicEmbedding& t, int64_t page_rows) {
    absl::StatusOr<std::vector<DynamicTable::Rows>> shards = export_table_rows(t, page_rows);
    EXPECT_TRUE(shards.ok()) << shards.status();
    return shards.ok() ? row_map(*shards, t.options().dim) : RowMap();
  }
  // Rows at steps 1..3, with gradients on some.
  static void train(const DynamicEmbedding& t, int64_t n) {
    for (int step = 1; step <= 3; ++step) {
      std::vector<int64_t> k;
      for (int64_t i = 0; i < n; ++i) {
        if (i % 3 == step - 1) k.push_back(i * 2'654'435'761 - 77);
      }
      ASSERT_TRUE(t.lookup(keys_tensor(k), step).ok());
      ASSERT_TRUE(
          t.apply_gradients(keys_tensor(k), ones(static_cast<int64_t>(k.size()), 4), 0.1, step)
              .ok());
    }
  }

  static LocalCluster* cluster_;
  static std::vector<std::shared_ptr<VariableClient>>* clients_;
  fs::path dir_;
};

LocalCluster* DynamicEmbeddingPagingTest::cluster_ = nullptr;
std::vector<std::shared_ptr<VariableClient>>* DynamicEmbeddingPagingTest::clients_ = nullptr;

TEST_F(DynamicEmbeddingPagingTest, ManyPagesSaveFromTwoAndRestoreIntoThree) {
  DynamicEmbedding two = create("paged_2", 2);
  train(two, 200);
  // Every page of a task holds at most kPageRows rows and they tile its
  // shard.
  std::vector<int> pages(2, 0);
  std::vector<int64_t> seen(2, 0);
  ASSERT_TRUE(for_each_table_page(two, kPageRows, [&](TablePage p) {
                EXPECT_EQ(p.offset, seen[static_cast<size_t>(p.task)]);
                EXPECT_LE(p.rows.keys.num_elements(), kPageRows);
                seen[static_cast<size_t>(p.task)] += p.rows.keys.num_elements();
                ++pages[static_cast<size_t>(p.task)];
                return absl::OkStatus();
              }).ok());
  EXPECT_EQ(seen[0] + seen[1], 200);
  EXPECT_GE(pages[0], 10);
  const RowMap saved = rows(two, 1 << 20);
  ASSERT_EQ(saved.size(), 200u);
  EXPECT_EQ(rows(two, kPageRows), saved);

  const std::string path = (dir_ / "ckpt").string();
  absl::StatusOr<Checkpoint> c2 = Checkpoint::create({}, std::nullopt, {{"emb", two}});
  ASSERT_TRUE(c2.ok());
  ASSERT_TRUE(c2->save(path).ok());
  DynamicEmbedding three = create("paged_3", 3);
  ASSERT_TRUE(three.lookup(keys_tensor({5, 6}), 1).ok());  // replaced by the restore
  absl::StatusOr<Checkpoint> c3 = Checkpoint::create({}, std::nullopt, {{"emb", three}});
  ASSERT_TRUE(c3.ok());
  absl::Status restored = c3->restore(path);
  ASSERT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(rows(three, kPageRows), saved);
  absl::StatusOr<std::vector<DynamicEmbeddingStats>> per = three.stats_per_shard();
  ASSERT_TRUE(per.ok());
  int64_t total = 0;
  for (const DynamicEmbeddingStats& s : *per) {
    EXPECT_GT(s.rows, kPageRows);  // each shard took several pages
    EXPECT_EQ(s.clock, 3);
    total += s.rows;
  }
  EXPECT_EQ(total, 200);
}

// Training between pages changes the table, not the page sequence: it
// reads the shard as it was when its first page was asked for.
TEST_F(DynamicEmbeddingPagingTest, PagesSeeTheShardAsAtTheFirstPage) {
  DynamicEmbedding t = create("paged_live", 2);
  train(t, 120);
  const RowMap before = rows(t, 1 << 20);
  std::vector<DynamicTable::Rows> got(2);
  std::vector<std::vector<DynamicTable::Rows>> pages(2);
  int64_t fresh = 1'000'000'000;
  ASSERT_TRUE(for_each_table_page(t, 5, [&](TablePage p) {
                pages[static_cast<size_t>(p.task)].push_back(std::move(p.rows));
                // A new row and an update of a saved one, between pages.
                const int64_t old_key = before.begin()->first;
                absl::Status s = t.lookup(keys_tensor({fresh++, old_key}), 7).status();
                if (s.ok()) s = t.apply_gradients(keys_tensor({old_key}), ones(1, 4), 1.0, 7);
                return s;
              }).ok());
  for (size_t i = 0; i < 2; ++i) got[i] = concat_table_rows(pages[i]);
  EXPECT_EQ(row_map(got, 4), before);
  const RowMap after = rows(t, 1 << 20);
  EXPECT_GT(after.size(), before.size());
  EXPECT_NE(after.at(before.begin()->first), before.begin()->second);
}

// DE_EXPORT pages straight to a ps: a negative or huge limit, a negative,
// foreign or stale cursor are refused naming the problem; the shard keeps
// its rows and a new export still works.
TEST_F(DynamicEmbeddingPagingTest, PsRefusesHostilePageRequests) {
  DynamicEmbedding t = create("paged_hostile", 1);
  train(t, 30);
  const RowMap before = rows(t, 1 << 20);
  auto page = [&](int64_t cursor, int64_t limit) {
    VariableOpArgs op;
    op.kind = v1::VariableOp::DE_EXPORT;
    op.variable = "paged_hostile";
    op.step = cursor;
    op.optimizer_steps = limit;
    ExecuteBatch batch;
    batch.ops.push_back(std::move(op));
    return (*clients_)[0]->execute_batch(std::move(batch), absl::Now() + absl::Seconds(30));
  };
  EXPECT_THAT(std::string(page(0, -1).status().message()), HasSubstr("limit -1 is outside"));
  EXPECT_THAT(std::string(page(0, int64_t{1} << 40).status().message()),
              HasSubstr("is outside [1, "));
  EXPECT_THAT(std::string(page(-5, 3).status().message()), HasSubstr("cursor -5 is negative"));
  EXPECT_EQ(page((int64_t{77} << 32) | 3, 3).status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<Tensor>> first = page(0, 4);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t next = (*first)[0].flat<int64_t>()[4];
  ASSERT_NE(next, 0);
  EXPECT_EQ((*first)[0].flat<int64_t>()[3], 30);
  ASSERT_TRUE(page(0, 4).ok());  // a new sequence: the first one's cursor is stale
  EXPECT_EQ(page(next, 4).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(rows(t, 4), before);
}

}  // namespace
}  // namespace psflow::internal
