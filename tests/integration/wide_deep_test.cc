// `psflow train --model wide_deep` on a real local cluster (2 ps, 2 worker
// processes): the embedding tables are sharded over both ps, workers pull
// rows and push sparse gradients, and the model learns the generated task.
#include "train/wide_deep.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>

#include "base/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "psflow/local_cluster.h"
#include "train/trainer.h"
#include "wide_deep_small.h"

namespace psflow::internal {
namespace {

class WideDeepTrainingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 2;
    options.num_workers = 2;
    options.binary_path = PSFLOW_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    run_dir_ = (std::filesystem::temp_directory_path() /
                ("psflow-wide-deep-" + std::to_string(::getpid())))
                   .string();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(run_dir_, ec);
  }

  static TrainOptions small_run() { return testing::small_wide_deep_run(); }
  static WideDeepOptions small_data() { return testing::small_wide_deep_data(); }

  std::unique_ptr<LocalCluster> cluster_;
  std::string run_dir_;
};

// The best possible test AUC of this data (the generator's true logits) is
// about 0.85 and a trained model gets about 0.82; a constant predictor has
// 0.5, and a model whose embeddings do not learn (dense features only, or
// sparse gradients that never reach the tables) about 0.70 (see
// WideDeepModelTest.LearnsTheGeneratedTaskLocally).
TEST_F(WideDeepTrainingTest, LearnsWithTablesShardedOverBothPs) {
  TrainOptions o = small_run();
  o.run_dir = run_dir_;
  WideDeepModel model(small_data());
  const TrainSummary s = ok_value(train_model(cluster_->cluster_spec(), o, model));
  std::printf("wide_deep: test auc %.4f accuracy %.4f loss %.4f in %.1f s\n", testing::test_auc(s),
              s.test_accuracy, s.test_loss, s.wall_seconds);
  EXPECT_GT(testing::test_auc(s), 0.78);
  EXPECT_GT(s.test_accuracy, 0.7);
  EXPECT_LT(s.test_loss, 0.6);
  EXPECT_EQ(s.steps, 3 * (30000 / 128));
  EXPECT_EQ(s.num_ps, 2);
  EXPECT_EQ(s.num_workers, 2);
  // The default partitioner shards both tables over both ps.
  for (const auto* devices : {&model.wide_table_devices(), &model.deep_table_devices()}) {
    ASSERT_EQ(devices->size(), 2u);
    EXPECT_EQ(std::set<std::string>(devices->begin(), devices->end()),
              (std::set<std::string>{"/job:ps/replica:0/task:0/device:CPU:0",
                                     "/job:ps/replica:0/task:1/device:CPU:0"}));
  }
  // The run's summary.
  std::ifstream file(run_dir_ + "/summary.json");
  ASSERT_TRUE(file.good());
  const nlohmann::json j = nlohmann::json::parse(file);
  EXPECT_EQ(j["model"], "wide_deep");
  EXPECT_DOUBLE_EQ(j["test_auc"].get<double>(), testing::test_auc(s));
  EXPECT_DOUBLE_EQ(j["test_accuracy"].get<double>(), s.test_accuracy);
  for (const char* key : {"test_loss", "epochs", "steps", "examples_per_sec", "wall_seconds",
                          "num_workers", "num_ps", "history", "invocations", "steps_per_execution",
                          "partitioner", "data_dir", "ps_recovery", "embedding_dim", "hidden"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  // Its own options: the generated data's sizes.
  EXPECT_EQ(j["generator"]["train_examples"], 30000) << j.dump(2);
  EXPECT_EQ(j["generator"]["seed"], o.seed);
  ASSERT_EQ(j["history"].size(), 3u);
  EXPECT_TRUE(j["history"][2].contains("train_auc"));
  EXPECT_GT(j["history"][2]["train_auc"].get<double>(), 0.7);
}

// A rerun on the same run directory resumes from the latest checkpoint:
// tables, dense layers, optimizer slots and iterations come back, and only
// the remaining epoch is trained.
TEST_F(WideDeepTrainingTest, ARerunResumesFromTheLatestCheckpoint) {
  TrainOptions o = small_run();
  o.run_dir = run_dir_;
  o.epochs = 2;
  const int64_t steps_per_epoch = 30000 / 128;
  WideDeepModel first_model(small_data());
  const TrainSummary first = ok_value(train_model(cluster_->cluster_spec(), o, first_model));
  EXPECT_EQ(first.optimizer_iterations, 2 * steps_per_epoch);
  EXPECT_TRUE(std::filesystem::exists(run_dir_ + "/checkpoints/ckpt-" +
                                      std::to_string(2 * steps_per_epoch)));
  o.epochs = 3;
  const std::string log = run_dir_ + "/rerun.log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  o.out = out;
  WideDeepModel second_model(small_data());
  const TrainSummary second = ok_value(train_model(cluster_->cluster_spec(), o, second_model));
  std::fclose(out);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("starting at epoch 3"), std::string::npos) << text;
  EXPECT_EQ(text.find("epoch 1/3:"), std::string::npos) << text;
  // The model's steps: the checkpoint's 2 epochs and this run's epoch 3.
  EXPECT_EQ(second.restored_steps, 2 * steps_per_epoch);
  EXPECT_EQ(second.steps, 3 * steps_per_epoch);
  EXPECT_EQ(second.optimizer_iterations, 3 * steps_per_epoch);
  // The run's history: the first invocation's epochs, then this one's.
  ASSERT_EQ(second.history.size(), 3u);
  EXPECT_EQ(second.history[2].epoch, 3);
  EXPECT_EQ(second.history[2].invocation, 1);
  EXPECT_EQ(second.history[2].end_step, 3 * steps_per_epoch);
  ASSERT_EQ(second.invocations.size(), 2u);
  EXPECT_EQ(second.invocations[0].ended, kInvocationComplete);
  // Training went on from the restored model, not from scratch: a fresh
  // model's first epoch is far below this (see AnUntrainedModelMissesTheBound
  // and the 3-epoch bound above).
  EXPECT_GT(testing::test_auc(second), 0.78);
}

// A learning rate too small to move the parameters in a short run leaves
// the model near chance: the bound above is one an untrained model misses.
TEST_F(WideDeepTrainingTest, AnUntrainedModelMissesTheBound) {
  TrainOptions o = small_run();
  o.epochs = 1;
  o.optimizer = "sgd";
  o.learning_rate = 1e-9;
  o.partitioner = "fixed:1";
  WideDeepModel model(small_data());
  const TrainSummary s = ok_value(train_model(cluster_->cluster_spec(), o, model));
  EXPECT_LT(testing::test_auc(s), 0.75);
  // fixed:1 keeps every table whole.
  EXPECT_EQ(model.wide_table_devices().size(), 1u);
  EXPECT_EQ(model.deep_table_devices().size(), 1u);
}

TEST_F(WideDeepTrainingTest, BadLibsvmPathIsNamed) {
  TrainOptions o = small_run();
  o.data_dir = "/nonexistent/clicks.svm";
  WideDeepModel model;
  absl::StatusOr<TrainSummary> s = train_model(cluster_->cluster_spec(), o, model);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
  EXPECT_NE(s.status().message().find("clicks.svm"), std::string_view::npos) << s.status();
}

// A LIBSVM file (no dense features; workers read the file themselves):
// the generated examples written as "label id:1 ...", so the ids carry the
// signal.
TEST_F(WideDeepTrainingTest, TrainsOnALibsvmFile) {
  WideDeepGeneratorOptions g;
  g.train_examples = 20000;
  g.test_examples = 1;
  g.vocab_size = 1000;
  g.dense_features = 0;
  g.seed = 5;
  const WideDeepData data = ok_value(generate_wide_deep_data(g));
  std::filesystem::create_directories(run_dir_);
  const std::string path = run_dir_ + "/clicks.svm";
  {
    std::ofstream file(path);
    const auto ids = data.train.ids.flat<int64_t>();
    const auto labels = data.train.labels.flat<float>();
    for (int64_t i = 0; i < data.train.size(); ++i) {
      std::set<int64_t> row(ids.begin() + i * g.bag_size, ids.begin() + (i + 1) * g.bag_size);
      file << (labels[i] > 0 ? "1" : "-1");
      for (int64_t id : row) file << " " << id + 1 << ":1";
      file << "\n";
    }
  }
  TrainOptions o = small_run();
  o.data_dir = path;
  WideDeepModel model(small_data());
  const TrainSummary s = ok_value(train_model(cluster_->cluster_spec(), o, model));
  std::printf("wide_deep on LIBSVM: test auc %.4f accuracy %.4f\n", testing::test_auc(s),
              s.test_accuracy);
  EXPECT_EQ(s.steps, 3 * (18000 / 128));  // 90% of the rows train
  EXPECT_EQ(s.num_ps, 2);
  // Only the ids carry signal here: without them the AUC is 0.5.
  EXPECT_GT(testing::test_auc(s), 0.65);
}

}  // namespace
}  // namespace psflow::internal
