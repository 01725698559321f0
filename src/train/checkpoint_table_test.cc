#include "train/checkpoint_table.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/index.h"
#include "checkpoint/safetensors.h"
#include "embedding/key_hash.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

DynamicEmbeddingOptions table_options() {
  DynamicEmbeddingOptions o;
  o.dim = 3;
  o.seed = 9;
  o.init_scale = 0.2;
  return o;
}

// A checkpoint directory holding table "t" with keys 3 and 7 on shard 0
// and key -5 on shard 1 (each shard in its own ps file).
std::string write_checkpoint(const std::string& name, const DynamicEmbeddingOptions& options) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  checkpoint::CheckpointIndex index;
  checkpoint::TableEntry table;
  table.name = "t";
  table.options = options;
  const std::vector<std::vector<int64_t>> keys = {{3, 7}, {-5}};
  for (int task = 0; task < 2; ++task) {
    const int64_t rows = static_cast<int64_t>(keys[task].size());
    std::vector<float> values;
    for (int64_t i = 0; i < rows * 3; ++i) values.push_back(static_cast<float>(task * 10 + i));
    const std::string file = "ps-" + std::to_string(task) + ".safetensors";
    const std::string prefix = "table/t/shard_" + std::to_string(task);
    absl::StatusOr<checkpoint::FileDigest> digest = checkpoint::write_safetensors_file(
        dir + "/" + file,
        {{prefix + "/keys", Tensor::from_vector(keys[task], {rows})},
         {prefix + "/values", Tensor::from_vector(values, {rows, 3})},
         {prefix + "/last_seen", Tensor::from_vector(std::vector<int64_t>(rows, 1), {rows})}});
    EXPECT_TRUE(digest.ok()) << digest.status();
    index.files.push_back({file, "ps", task, digest.ok() ? *digest : checkpoint::FileDigest{}});
    checkpoint::TableShardEntry shard;
    shard.task = task;
    shard.file = file;
    shard.rows = rows;
    shard.clock = 1;
    shard.keys = prefix + "/keys";
    shard.values = prefix + "/values";
    shard.last_seen = prefix + "/last_seen";
    table.shards.push_back(shard);
  }
  index.tables.push_back(table);
  std::ofstream(dir + "/index.json") << checkpoint::index_to_json(index);
  return dir;
}

TEST(CheckpointTableTest, HeldKeysReadTheirRowsAndOthersTheInitialRow) {
  const DynamicEmbeddingOptions options = table_options();
  const std::string dir = write_checkpoint("ckpt-table", options);
  absl::StatusOr<CheckpointTable> table = CheckpointTable::read(dir, "t");
  ASSERT_TRUE(table.ok()) << table.status();
  EXPECT_EQ(table->rows(), 3);
  absl::StatusOr<Tensor> rows = table->lookup(Tensor::from_vector<int64_t>({7, -5, 42}, {3}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  const absl::Span<const float> r = rows->flat<float>();
  EXPECT_THAT(std::vector<float>(r.begin(), r.begin() + 6),
              ::testing::ElementsAre(3.0f, 4.0f, 5.0f, 10.0f, 11.0f, 12.0f));
  float initial[3];
  initial_row(options, 42, initial);
  EXPECT_THAT(std::vector<float>(r.begin() + 6, r.end()),
              ::testing::ElementsAre(initial[0], initial[1], initial[2]));
  EXPECT_NE(initial[0], 0.0f);
}

TEST(CheckpointTableTest, AbsentKeysFollowTheAdmissionRule) {
  DynamicEmbeddingOptions options = table_options();
  options.admit_probability = 0.5;
  const std::string dir = write_checkpoint("ckpt-table-admit", options);
  absl::StatusOr<CheckpointTable> table = CheckpointTable::read(dir, "t");
  ASSERT_TRUE(table.ok()) << table.status();
  int admitted = 0;
  for (int64_t key = 100; key < 140; ++key) {
    absl::StatusOr<Tensor> row = table->lookup(Tensor::from_vector<int64_t>({key}, {1}));
    ASSERT_TRUE(row.ok()) << row.status();
    const bool admit = admission_draw(options.seed, key) < options.admit_probability;
    float expected[3] = {0.0f, 0.0f, 0.0f};
    if (admit) initial_row(options, key, expected);
    admitted += admit ? 1 : 0;
    EXPECT_EQ(row->flat<float>()[0], expected[0]) << key;
    EXPECT_EQ(row->flat<float>()[2], expected[2]) << key;
  }
  EXPECT_GT(admitted, 0);
  EXPECT_LT(admitted, 40);
}

TEST(CheckpointTableTest, AMissingTableIsNamedWithTheTablesHeld) {
  const std::string dir = write_checkpoint("ckpt-table-missing", table_options());
  absl::StatusOr<CheckpointTable> table = CheckpointTable::read(dir, "dlrm/embeddings");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(table.status().message(), HasSubstr("no embedding table 'dlrm/embeddings'"));
  EXPECT_THAT(table.status().message(), HasSubstr("its tables: 't'"));
}

TEST(CheckpointTableTest, AChangedFileIsRefused) {
  const std::string dir = write_checkpoint("ckpt-table-corrupt", table_options());
  {
    std::fstream f(dir + "/ps-1.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-1, std::ios::end);
    f.put('\x7f');
  }
  absl::StatusOr<CheckpointTable> table = CheckpointTable::read(dir, "t");
  EXPECT_EQ(table.status().code(), absl::StatusCode::kDataLoss) << table.status();
  EXPECT_THAT(table.status().message(), HasSubstr("ps-1.safetensors"));
}

}  // namespace
}  // namespace psflow::internal
