// TF's delayed restore (restore-on-create) against real ps processes
// (LocalCluster, 2 ps): a checkpoint restored before its variables exist
// gives each variable its saved value when it is created, sharded or not,
// into another number of parts; variables it does not name keep their
// initial values, and a mismatch fails the creation, naming it.
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/partitioners.h"
#include "psflow/strategy.h"
#include "suite_cluster.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Tensor kEmbedding = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {5, 2});
const Tensor kBias = Tensor::from_vector<float>({0.5f, -0.5f}, {2});

class DeferredRestoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { start_suite_cluster(cluster_, 2, 1, PSFLOW_BINARY_PATH); }
  static void TearDownTestSuite() { stop_suite_cluster(cluster_); }

  // Saves "emb" (sharded in 2) and "bias" (plain) under stored names of
  // their own, so that the restoring strategy's names do not collide.
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    static std::atomic<int> counter{0};
    tag_ = absl::StrCat("t", counter.fetch_add(1));
    dir_ = (fs::path(::testing::TempDir()) / absl::StrCat("psflow_deferred_", ::getpid(), tag_))
               .string();
    fs::remove_all(dir_);
    auto saver = strategy(2);
    StrategyScope scope = saver->scope();
    ShardedVariable emb = ok_value(create_variable(kEmbedding, {.name = tag_ + "_saved_emb"}));
    ShardedVariable bias = ok_value(create_variable(kBias, {.name = tag_ + "_saved_bias"}));
    ASSERT_EQ(emb.num_parts(), 2u);
    // Keys of their own per test: the ps tasks outlive the tests, and each
    // new strategy names afresh.
    emb_ = tag_ + "_emb";
    bias_ = tag_ + "_bias";
    ASSERT_TRUE(ok_value(Checkpoint::create({{emb_, emb}, {bias_, bias}})).save(dir_).ok());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // A strategy over the cluster, sharding in `shards` (1: none).
  std::unique_ptr<ParameterServerStrategy> strategy(int shards) const {
    return ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0),
        shards > 1 ? ok_value(fixed_shards_partitioner(shards)) : nullptr));
  }

  static LocalCluster* cluster_;
  std::string tag_;
  std::string dir_;
  std::string emb_, bias_;  // the saved variables' names in the checkpoint
};

LocalCluster* DeferredRestoreTest::cluster_ = nullptr;

TEST_F(DeferredRestoreTest, VariablesCreatedAfterTheRestoreGetTheSavedValuesInAnyLayout) {
  for (int shards : {3, 1}) {
    SCOPED_TRACE(absl::StrCat(shards, " shard(s)"));
    auto restorer = strategy(shards);
    std::unique_ptr<RestoreOnCreate> restoring = ok_value(RestoreOnCreate::start(dir_));
    EXPECT_THAT(restoring->pending(), ElementsAre(bias_, emb_));
    {
      StrategyScope scope = restorer->scope();
      ShardedVariable emb = ok_value(create_variable(
          Tensor::from_vector<float>(std::vector<float>(10, 0.0f), {5, 2}), {.name = emb_}));
      EXPECT_EQ(emb.num_parts(), static_cast<size_t>(shards));
      EXPECT_EQ(ok_value(emb.read_value()), kEmbedding);
      EXPECT_THAT(restoring->pending(), ElementsAre(bias_));
      EXPECT_EQ(restoring->assert_consumed().code(), absl::StatusCode::kFailedPrecondition);
      // A variable the checkpoint does not name keeps its initial value.
      ShardedVariable other = ok_value(
          create_variable(Tensor::scalar(7.0f), {.name = absl::StrCat(tag_, "_other", shards)}));
      EXPECT_EQ(ok_value(other.read_value()), Tensor::scalar(7.0f));
    }
    // Outside any strategy scope too (a variable in this process).
    ShardedVariable local =
        ok_value(create_variable(Tensor::from_vector<float>({0, 0}, {2}), {.name = bias_}));
    EXPECT_EQ(local.variables()[0].job(), "chief");
    EXPECT_EQ(ok_value(local.read_value()), kBias);
    EXPECT_THAT(restoring->restored(), ElementsAre(bias_, emb_));
    EXPECT_TRUE(restoring->assert_consumed().ok());
    // Each saved variable is restored once: a second "emb" is left alone.
    StrategyScope scope = restorer->scope();
    ShardedVariable again = ok_value(create_variable(
        Tensor::from_vector<float>(std::vector<float>(10, 1.0f), {5, 2}), {.name = emb_}));
    EXPECT_EQ(ok_value(again.read_value()),
              Tensor::from_vector<float>(std::vector<float>(10, 1.0f), {5, 2}));
  }
}

TEST_F(DeferredRestoreTest, NothingIsRestoredOnceTheGuardIsGoneAndMismatchesAreErrors) {
  auto restorer = strategy(2);
  StrategyScope scope = restorer->scope();
  {
    std::unique_ptr<RestoreOnCreate> restoring = ok_value(RestoreOnCreate::start(dir_));
    const absl::Status wrong =
        create_variable(Tensor::from_vector<float>({0, 0, 0}, {3}), {.name = bias_}).status();
    EXPECT_EQ(wrong.code(), absl::StatusCode::kInvalidArgument) << wrong;
    EXPECT_THAT(std::string(wrong.message()), HasSubstr("restore-on-create"));
    EXPECT_THAT(restoring->pending(), ElementsAre(bias_, emb_));
  }
  ShardedVariable emb = ok_value(create_variable(
      Tensor::from_vector<float>(std::vector<float>(10, 0.0f), {5, 2}), {.name = emb_}));
  EXPECT_EQ(ok_value(emb.read_value()),
            Tensor::from_vector<float>(std::vector<float>(10, 0.0f), {5, 2}));
  EXPECT_EQ(RestoreOnCreate::start(dir_ + "/missing").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace psflow::internal
