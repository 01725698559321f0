// Checkpoints of dynamic embedding tables on real ps processes
// (docs/embeddings.md, "Checkpoints"): saved from 2 ps tasks and restored
// into 3 and into 1 with every row's values, slots and last-seen step
// equal; lookups after a restore; a damaged checkpoint refused with the
// table unchanged; a killed ps whose table comes back from the checkpoint.
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "embedding/dynamic_table.h"
#include "embedding/key_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "ps/request/execute_batch.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "rpc/channel.h"
#include "strategy/dynamic_embedding_internal.h"
#include "strategy/dynamic_embedding_rows.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr int kNumPs = 3;

// key -> (values and slots, last seen)
using RowMap = std::map<int64_t, std::pair<std::vector<float>, int64_t>>;

class DynamicEmbeddingCheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = kNumPs;
    options.num_workers = 0;
    options.include_chief = false;
    options.max_restarts = 1;
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
    dir_ = fs::path(::testing::TempDir()) /
           absl::StrCat("de_ckpt_", ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                        "_", ::getpid());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The table `name` on the first `num_ps` ps tasks.
  static DynamicEmbedding create(const std::string& name, const DynamicEmbeddingOptions& o,
                                 int num_ps) {
    std::vector<std::shared_ptr<VariableClient>> c(clients_->begin(), clients_->begin() + num_ps);
    absl::StatusOr<DynamicEmbedding> t = DynamicEmbeddingAccess::create(name, o, std::move(c));
    EXPECT_TRUE(t.ok()) << t.status();
    return t.value_or(DynamicEmbedding());
  }

  static RowMap rows(const DynamicEmbedding& t) {
    absl::StatusOr<std::vector<DynamicTable::Rows>> shards = export_table_rows(t);
    EXPECT_TRUE(shards.ok()) << shards.status();
    RowMap out;
    if (!shards.ok()) return out;
    const int64_t dim = t.options().dim;
    for (const DynamicTable::Rows& s : *shards) {
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

  static Checkpoint checkpoint_of(const DynamicEmbedding& t) {
    absl::StatusOr<Checkpoint> c = Checkpoint::create({}, std::nullopt, {{"emb", t}});
    EXPECT_TRUE(c.ok()) << c.status();
    return *c;
  }

  static LocalCluster* cluster_;
  static std::vector<std::shared_ptr<VariableClient>>* clients_;
  fs::path dir_;
};

LocalCluster* DynamicEmbeddingCheckpointTest::cluster_ = nullptr;
std::vector<std::shared_ptr<VariableClient>>* DynamicEmbeddingCheckpointTest::clients_ = nullptr;

DynamicEmbeddingOptions options() {
  DynamicEmbeddingOptions o;
  o.dim = 8;
  o.seed = 77;
  o.optimizer.kind = Kind::kAdagrad;
  o.ttl_steps = 1000;
  return o;
}

Tensor keys_tensor(const std::vector<int64_t>& k) {
  return Tensor::from_vector(k, {static_cast<int64_t>(k.size())});
}

// Rows created at different steps, some updated.
void train(const DynamicEmbedding& t) {
  std::vector<int64_t> keys;
  for (int64_t i = 0; i < 300; ++i) keys.push_back(i * 1'000'003 - 5'000'000);
  for (int step = 0; step < 3; ++step) {
    std::vector<int64_t> k(keys.begin() + step * 100, keys.begin() + step * 100 + 150 - step * 50);
    ASSERT_TRUE(t.lookup(keys_tensor(k), step + 1).ok());
    Tensor g(DType::kFloat32, {static_cast<int64_t>(k.size()), t.options().dim});
    for (int64_t i = 0; i < g.num_elements(); ++i) {
      g.mutable_flat<float>()[static_cast<size_t>(i)] = 0.01f * static_cast<float>(i % 17 - 8);
    }
    ASSERT_TRUE(t.apply_gradients(keys_tensor(k), g, 0.1, step + 1).ok());
  }
}

TEST_F(DynamicEmbeddingCheckpointTest, RestoresIntoAnotherNumberOfPsTasks) {
  const DynamicEmbeddingOptions o = options();
  DynamicEmbedding two = create("reshard_2", o, 2);
  train(two);
  const RowMap saved = rows(two);
  ASSERT_GT(saved.size(), 200u);
  const std::string path = (dir_ / "ckpt-2ps").string();
  ASSERT_TRUE(checkpoint_of(two).save(path).ok());

  DynamicEmbedding three = create("reshard_3", o, 3);
  ASSERT_TRUE(three.lookup(keys_tensor({123456789}), 1).ok());  // replaced by the restore
  absl::Status restored = checkpoint_of(three).restore(path);
  ASSERT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(rows(three), saved);
  absl::StatusOr<std::vector<DynamicEmbeddingStats>> per = three.stats_per_shard();
  ASSERT_TRUE(per.ok());
  for (const DynamicEmbeddingStats& s : *per) EXPECT_GT(s.rows, 0);

  // Saved from 3, restored into 1: still every row.
  const std::string path3 = (dir_ / "ckpt-3ps").string();
  ASSERT_TRUE(checkpoint_of(three).save(path3).ok());
  DynamicEmbedding one = create("reshard_1", o, 1);
  ASSERT_TRUE(checkpoint_of(one).restore(path3).ok());
  EXPECT_EQ(rows(one), saved);

  // Lookups: saved keys read their saved values, a new key the initial row.
  const int64_t old_key = saved.begin()->first;
  absl::StatusOr<Tensor> got = three.lookup(keys_tensor({old_key, 42}), 5);
  ASSERT_TRUE(got.ok());
  const std::vector<float>& want = saved.begin()->second.first;
  for (int64_t j = 0; j < o.dim; ++j) {
    EXPECT_EQ(got->flat<float>()[static_cast<size_t>(j)], want[static_cast<size_t>(j)]);
  }
  std::vector<float> initial(static_cast<size_t>(o.dim));
  initial_row(o, 42, initial.data());
  for (int64_t j = 0; j < o.dim; ++j) {
    EXPECT_EQ(got->flat<float>()[static_cast<size_t>(o.dim + j)], initial[static_cast<size_t>(j)]);
  }
}

TEST_F(DynamicEmbeddingCheckpointTest, DamagedCheckpointIsRefusedWithTheTableUnchanged) {
  const DynamicEmbeddingOptions o = options();
  DynamicEmbedding t = create("damaged", o, 2);
  train(t);
  const std::string path = (dir_ / "ckpt").string();
  ASSERT_TRUE(checkpoint_of(t).save(path).ok());
  ASSERT_TRUE(t.lookup(keys_tensor({1, 2, 3}), 9).ok());
  const RowMap before = rows(t);

  // index.json claims another row count for shard 0 (the file is intact).
  const fs::path index = fs::path(path) / "index.json";
  std::string text;
  {
    std::ifstream in(index);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string rows_field = "\"rows\": ";
  const size_t at = text.find(rows_field);
  ASSERT_NE(at, std::string::npos);
  std::string bad = text;
  bad.insert(at + rows_field.size(), "1");
  std::ofstream(index, std::ios::trunc) << bad;
  absl::Status s = checkpoint_of(t).restore(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("table 'emb' shard 0"));
  EXPECT_EQ(rows(t), before);

  // Another definition of the table.
  std::ofstream(index, std::ios::trunc) << text;
  DynamicEmbeddingOptions other = o;
  other.seed = 78;
  DynamicEmbedding t2 = create("damaged_other", other, 2);
  s = checkpoint_of(t2).restore(path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("other options"));
  EXPECT_TRUE(checkpoint_of(t).restore(path).ok());
}

TEST_F(DynamicEmbeddingCheckpointTest, KilledPsGetsItsRowsBackFromTheCheckpoint) {
  const DynamicEmbeddingOptions o = options();
  DynamicEmbedding t = create("killed", o, 3);
  train(t);
  const RowMap saved = rows(t);
  const std::string path = (dir_ / "ckpt").string();
  ASSERT_TRUE(checkpoint_of(t).save(path).ok());
  ASSERT_TRUE(cluster_->signal_task("ps", 2, SIGKILL).ok());
  ASSERT_TRUE(cluster_->wait_for_restart("ps", 2, 1, absl::Seconds(60)).ok());
  absl::StatusOr<std::string> address = cluster_->cluster_spec().task_address("ps", 2);
  ASSERT_TRUE(address.ok());
  ASSERT_TRUE(wait_for_healthy(*address, task_name("ps", 2), absl::Now() + absl::Seconds(60)).ok());
  // The restarted ps holds no table until the restore makes it again.
  absl::StatusOr<std::vector<DynamicTable::Rows>> lost = export_table_rows(t);
  EXPECT_FALSE(lost.ok());
  absl::Status restored = checkpoint_of(t).restore(path);
  ASSERT_TRUE(restored.ok()) << restored;
  EXPECT_EQ(rows(t), saved);
}

// DE_IMPORT straight to a ps: every malformed request is refused naming
// the problem, the ps stays up and the shard keeps its rows.
TEST_F(DynamicEmbeddingCheckpointTest, PsRefusesBadImportsAndKeepsItsRows) {
  const DynamicEmbeddingOptions o = options();
  DynamicEmbedding t = create("bad_import", o, 1);
  ASSERT_TRUE(t.lookup(keys_tensor({10, 20, 30}), 1).ok());
  const RowMap before = rows(t);
  auto import = [&](std::vector<int64_t> keys, int64_t rows_n, std::vector<std::string> names,
                    int64_t clock) {
    VariableOpArgs op;
    op.kind = v1::VariableOp::DE_IMPORT;
    op.variable = "bad_import";
    op.table = table_options_to_bytes(o);
    op.ids = keys_tensor(keys);
    const auto floats = [&] {
      return Tensor::from_vector(std::vector<float>(static_cast<size_t>(rows_n * o.dim), 0.5f),
                                 {rows_n, o.dim});
    };
    op.value = floats();
    op.slot_names = std::move(names);
    for (const std::string& n : op.slot_names) {
      op.slots.push_back(
          n == "last_seen"
              ? Tensor::from_vector(std::vector<int64_t>(static_cast<size_t>(rows_n), 1), {rows_n})
              : floats());
    }
    op.step = clock;
    ExecuteBatch batch;
    batch.ops.push_back(std::move(op));
    return (*clients_)[0]
        ->execute_batch(std::move(batch), absl::Now() + absl::Seconds(30))
        .status();
  };
  const std::vector<std::string> good = {"accumulator", "last_seen"};
  absl::Status s = import({1, 1}, 2, good, 5);
  EXPECT_THAT(std::string(s.message()), HasSubstr("key 1 appears twice"));
  s = import({1, 2}, 3, good, 5);
  EXPECT_THAT(std::string(s.message()), HasSubstr("one row per key"));
  s = import({1, 2}, 2, {"last_seen"}, 5);
  EXPECT_THAT(std::string(s.message()), HasSubstr("'accumulator', 'last_seen' in that order"));
  s = import({1, 2}, 2, good, -1);
  EXPECT_THAT(std::string(s.message()), HasSubstr("clock -1"));
  EXPECT_EQ(rows(t), before);
  // A well-formed one replaces the rows.
  EXPECT_TRUE(import({1, 2}, 2, good, 5).ok());
  EXPECT_EQ(rows(t).size(), 2u);
}

// The generic path: every table made through a strategy is in the
// checkpoint of strategy->dynamic_embeddings(), saved and restored by a
// CheckpointManager beside the dense variables (what `psflow train` does).
TEST(DynamicEmbeddingStrategyCheckpointTest, StrategyTablesAreSavedWithTheModel) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = 1;  // a strategy needs one
  cluster_options.binary_path = PSFLOW_BINARY_PATH;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(cluster_options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> strategy =
      ParameterServerStrategy::create(
          SimpleClusterResolver((*cluster)->cluster_spec(), "chief", 0));
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  absl::StatusOr<ShardedVariable> w =
      (*strategy)->create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  ASSERT_TRUE(w.ok()) << w.status();
  const DynamicEmbeddingOptions o = options();
  absl::StatusOr<DynamicEmbedding> table = DynamicEmbedding::get_variable(**strategy, "ids", o);
  ASSERT_TRUE(table.ok()) << table.status();
  const std::map<std::string, DynamicEmbedding> tables = (*strategy)->dynamic_embeddings();
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables.begin()->first, "ids");
  train(*table);
  const fs::path dir =
      fs::path(::testing::TempDir()) / absl::StrCat("de_ckpt_strategy_", ::getpid());
  fs::remove_all(dir);
  absl::StatusOr<Checkpoint> ckpt = Checkpoint::create({{"w", *w}}, std::nullopt, tables);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  absl::StatusOr<CheckpointManager> manager = CheckpointManager::create(*ckpt, dir.string(), 3);
  ASSERT_TRUE(manager.ok()) << manager.status();
  ASSERT_TRUE(manager->save().ok());
  absl::StatusOr<std::vector<DynamicTable::Rows>> before = export_table_rows(*table);
  ASSERT_TRUE(before.ok());

  // Training goes on: a new row, updated rows, another dense value.
  train(*table);
  ASSERT_TRUE(table->lookup(keys_tensor({31337}), 10).ok());
  ASSERT_TRUE(w->assign(Tensor::from_vector<float>({0, 0, 0, 0}, {2, 2})).ok());
  absl::StatusOr<std::optional<std::string>> restored = manager->restore_or_initialize();
  ASSERT_TRUE(restored.ok()) << restored.status();
  ASSERT_TRUE(restored->has_value());
  absl::StatusOr<std::vector<DynamicTable::Rows>> after = export_table_rows(*table);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), before->size());
  for (size_t t = 0; t < after->size(); ++t) {
    const DynamicTable::Rows& a = (*after)[t];
    const DynamicTable::Rows& b = (*before)[t];
    ASSERT_EQ(a.keys.num_elements(), b.keys.num_elements());
    // Same rows (the order may differ where last-seen steps tie).
    std::map<int64_t, std::vector<float>> ra;
    std::map<int64_t, std::vector<float>> rb;
    const int64_t dim = o.dim;
    for (int64_t i = 0; i < a.keys.num_elements(); ++i) {
      ra[a.keys.flat<int64_t>()[static_cast<size_t>(i)]] =
          std::vector<float>(a.slots[0].flat<float>().data() + i * dim,
                             a.slots[0].flat<float>().data() + (i + 1) * dim);
      rb[b.keys.flat<int64_t>()[static_cast<size_t>(i)]] =
          std::vector<float>(b.slots[0].flat<float>().data() + i * dim,
                             b.slots[0].flat<float>().data() + (i + 1) * dim);
    }
    EXPECT_EQ(ra, rb);
    EXPECT_EQ(a.applies, b.applies);
  }
  absl::StatusOr<Tensor> value = w->read_value();
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->flat<float>()[3], 4.0f);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace psflow::internal
