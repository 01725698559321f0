// `psflow eval` of a `psflow train --model dlrm` run as real processes: the
// evaluator reads the dense layers and the dynamic table's rows from the
// checkpoint files alone and reports the AUC and log loss training
// reported for the same checkpoint and test set.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_process.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

struct Ran {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Ran run(const std::vector<std::string>& argv, absl::Duration timeout) {
  TestProcess p(argv, test_environment());
  EXPECT_GT(p.pid(), 0);
  Ran r;
  r.out = p.read_stdout(absl::Now() + timeout);
  r.err = p.read_stderr(absl::Now() + absl::Seconds(5));
  r.exit_code = p.wait_exit_code(absl::Now() + absl::Seconds(30));
  return r;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream file(path);
  EXPECT_TRUE(file.good()) << path;
  return nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
}

// The only checkpoint directory of `run_dir`.
std::string only_checkpoint(const std::string& run_dir) {
  std::vector<std::string> found;
  for (const auto& entry : fs::directory_iterator(run_dir + "/checkpoints")) {
    if (entry.path().filename().string().rfind("ckpt-", 0) == 0) {
      found.push_back(entry.path().string());
    }
  }
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? "" : found.front();
}

TEST(DlrmEvalCliTest, EvalOfTheCheckpointReportsTrainsFigures) {
  const std::string dir = ::testing::TempDir() + "/psflow-dlrm-eval";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string run_dir = dir + "/run";
  const Ran train = run({PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir",
                         "generated:2000:5", "--num-ps", "2", "--num-workers", "1", "--epochs", "1",
                         "--batch-size", "64", "--run-dir", run_dir, "--insecure"},
                        absl::Seconds(120));
  ASSERT_EQ(train.exit_code, 0) << train.out << train.err;
  const nlohmann::json summary = read_json(run_dir + "/summary.json");
  ASSERT_TRUE(summary.contains("test_auc")) << summary.dump(2);
  const std::string checkpoint = only_checkpoint(run_dir);

  const Ran eval =
      run({PSFLOW_BINARY_PATH, "eval", "--run-dir", run_dir, "--once"}, absl::Seconds(60));
  ASSERT_EQ(eval.exit_code, 0) << eval.out << eval.err;
  EXPECT_THAT(eval.out, HasSubstr("1 checkpoint(s) evaluated"));
  EXPECT_THAT(eval.out, HasSubstr(" auc "));
  std::ifstream metrics(run_dir + "/eval/metrics.jsonl");
  std::string line;
  ASSERT_TRUE(std::getline(metrics, line)) << eval.out;
  const nlohmann::json m = nlohmann::json::parse(line);
  EXPECT_EQ(m["checkpoint"], checkpoint);
  EXPECT_EQ(m["test_examples"], summary["test_examples"]);
  EXPECT_EQ(m["test_examples"], 200);
  // The same dense layers, the same rows (test keys training never saw:
  // the same initial rows), the same chunks: the same arithmetic.
  EXPECT_NEAR(m["test_auc"].get<double>(), summary["test_auc"].get<double>(), 1e-9) << line;
  EXPECT_NEAR(m["test_loss"].get<double>(), summary["test_loss"].get<double>(), 1e-9) << line;
  EXPECT_NEAR(m["test_accuracy"].get<double>(), summary["test_accuracy"].get<double>(), 1e-9);
  // A model that learned nothing would sit at 0.5: the table's rows were
  // read, not started afresh.
  EXPECT_NE(m["test_auc"].get<double>(), 0.5);

  // The same run with its checkpoint's table taken out of index.json: the
  // evaluator names the table it misses and exits with a usage error.
  const std::string broken = dir + "/broken";
  fs::create_directories(broken + "/checkpoints");
  fs::copy_file(run_dir + "/config.json", broken + "/config.json");
  const std::string copy = broken + "/checkpoints/" + fs::path(checkpoint).filename().string();
  fs::copy(checkpoint, copy, fs::copy_options::recursive);
  nlohmann::json index = read_json(copy + "/index.json");
  ASSERT_TRUE(index.contains("tables")) << index.dump(2);
  index.erase("tables");
  std::ofstream(copy + "/index.json", std::ios::trunc) << index.dump();
  const Ran missing =
      run({PSFLOW_BINARY_PATH, "eval", "--run-dir", broken, "--once"}, absl::Seconds(60));
  EXPECT_EQ(missing.exit_code, 2) << missing.out << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("holds no embedding table 'dlrm/embeddings'"));
  fs::remove_all(dir);
}

TEST(DlrmEvalCliTest, ACheckpointOfAnotherModelIsNamedAsSuch) {
  const std::string dir = ::testing::TempDir() + "/psflow-dlrm-eval-other";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string dlrm_dir = dir + "/dlrm";
  const Ran dlrm = run({PSFLOW_BINARY_PATH, "train", "--model", "dlrm", "--data-dir",
                        "generated:400:1", "--num-ps", "1", "--num-workers", "1", "--epochs", "1",
                        "--batch-size", "64", "--run-dir", dlrm_dir, "--insecure"},
                       absl::Seconds(120));
  ASSERT_EQ(dlrm.exit_code, 0) << dlrm.out << dlrm.err;
  const std::string other_dir = dir + "/wide_deep";
  const Ran other =
      run({PSFLOW_BINARY_PATH, "train", "--model", "wide_deep", "--num-ps", "1", "--num-workers",
           "1", "--epochs", "1", "--batch-size", "1024", "--run-dir", other_dir, "--insecure"},
          absl::Seconds(120));
  ASSERT_EQ(other.exit_code, 0) << other.out << other.err;
  // The dlrm run's config.json beside the wide_deep run's checkpoint.
  const std::string mixed = dir + "/mixed";
  fs::create_directories(mixed + "/checkpoints");
  fs::copy_file(dlrm_dir + "/config.json", mixed + "/config.json");
  const std::string checkpoint = only_checkpoint(other_dir);
  fs::copy(checkpoint, mixed + "/checkpoints/" + fs::path(checkpoint).filename().string(),
           fs::copy_options::recursive);
  const Ran eval =
      run({PSFLOW_BINARY_PATH, "eval", "--run-dir", mixed, "--once"}, absl::Seconds(60));
  EXPECT_EQ(eval.exit_code, 2) << eval.out << eval.err;
  EXPECT_THAT(eval.err, HasSubstr("no variable 'bottom/dense_0/"));
  EXPECT_THAT(eval.err, HasSubstr("names the model dlrm"));
  EXPECT_THAT(eval.err, HasSubstr("of another model's run?"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace psflow::internal
