// The run directory across reruns, as real `psflow` processes: a damaged
// latest checkpoint is skipped (and kept), --checkpoint picks one, every
// model and strategy writes config.json and checkpoints that a rerun
// resumes from and `psflow eval` evaluates (docs/fault_tolerance.md).
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kRunTimeout = absl::Seconds(300);
constexpr absl::Duration kExitTimeout = absl::Seconds(30);

std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

// A finished process's output and exit code.
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

Ran run(const std::vector<std::string>& argv) {
  TestProcess process(argv, test_environment());
  EXPECT_GT(process.pid(), 0);
  Ran ran;
  ran.out = process.read_stdout(absl::Now() + kRunTimeout);
  ran.code = process.wait_exit_code(absl::Now() + kExitTimeout);
  ran.err = process.read_stderr(absl::Now() + absl::Seconds(5));
  return ran;
}

std::vector<std::string> entries_of(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
}

std::vector<nlohmann::json> read_metrics(const std::string& run_dir) {
  std::ifstream in(run_dir + "/eval/metrics.jsonl");
  std::vector<nlohmann::json> out;
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

void corrupt(const std::string& file) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-5, std::ios::end);
  f.put('\x7f');
}

// A damaged latest checkpoint no longer blocks the resume: it is skipped
// with a line naming it and the error, renamed aside (byte for byte) and
// the run goes on from the one before; --checkpoint picks one, or names
// the ones there are.
TEST(ResumeCliTest, TrainSkipsADamagedLatestCheckpointAndCanPickOne) {
  const std::string run_dir = fresh_dir("psflow-resume-damaged");
  const std::string ckpts = run_dir + "/checkpoints";
  // 100 steps per epoch.
  const std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "train", "--num-ps",  "1",
                                         "--num-workers",    "1",     "--epochs",  "2",
                                         "--batch-size",     "600",   "--run-dir", run_dir};
  Ran first = run(argv);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const std::string file = ckpts + "/ckpt-200/ps-0.safetensors";
  ASSERT_TRUE(std::filesystem::exists(file));
  corrupt(file);
  const std::string damaged = read_all(file);
  std::filesystem::remove(run_dir + "/summary.json");  // as if killed before the end

  Ran second = run(argv);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_THAT(second.out, HasSubstr(absl::StrCat("skipping checkpoint ", ckpts, "/ckpt-200: ", file,
                                                 ": CRC32 is")));
  EXPECT_THAT(second.out, HasSubstr(absl::StrCat("renamed ", ckpts, "/ckpt-200 to ", ckpts,
                                                 "/ckpt-200.corrupt")));
  EXPECT_THAT(second.out,
              HasSubstr(absl::StrCat("resuming from ", ckpts,
                                     "/ckpt-100: 100 steps done, starting at epoch 2")));
  EXPECT_THAT(second.out, HasSubstr("epoch 2/2:"));
  EXPECT_EQ(read_all(ckpts + "/ckpt-200.corrupt/ps-0.safetensors"), damaged);
  EXPECT_EQ(entries_of(ckpts),
            (std::vector<std::string>{"ckpt-100", "ckpt-200", "ckpt-200.corrupt"}));

  // The sidecar evaluator skips the renamed one.
  Ran eval = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", run_dir, "--once"});
  ASSERT_EQ(eval.code, 0) << eval.out << eval.err;
  EXPECT_THAT(eval.out, HasSubstr("2 checkpoint(s) evaluated"));
  EXPECT_THAT(eval.out, Not(HasSubstr("corrupt")));

  // A name that is not there: the error names it and the ones there are.
  std::vector<std::string> pick = argv;
  pick.insert(pick.end(), {"--checkpoint", "ckpt-150"});
  Ran missing = run(pick);
  EXPECT_EQ(missing.code, 1) << missing.out << missing.err;
  EXPECT_THAT(
      missing.err,
      HasSubstr(absl::StrCat("--checkpoint 'ckpt-150': there is no checkpoint directory ", ckpts,
                             "/ckpt-150; the checkpoints in ", ckpts, " are ckpt-100, ckpt-200")));
  // The damaged one, by path: not valid, named with its error.
  pick.back() = ckpts + "/ckpt-200.corrupt";
  Ran invalid = run(pick);
  EXPECT_EQ(invalid.code, 1) << invalid.out << invalid.err;
  EXPECT_THAT(invalid.err,
              HasSubstr(absl::StrCat("--checkpoint '", ckpts, "/ckpt-200.corrupt': ", ckpts,
                                     "/ckpt-200.corrupt is not a valid "
                                     "checkpoint (")));
  EXPECT_THAT(invalid.err, HasSubstr("CRC32 is"));

  // An older one: the newer is renamed aside, never replaced.
  pick.back() = "ckpt-100";
  Ran older = run(pick);
  ASSERT_EQ(older.code, 0) << older.out << older.err;
  EXPECT_THAT(older.out, HasSubstr(absl::StrCat("renamed ", ckpts, "/ckpt-200 to ", ckpts,
                                                "/ckpt-200.superseded")));
  EXPECT_THAT(older.out, HasSubstr(absl::StrCat("resuming from ", ckpts,
                                                "/ckpt-100: 100 steps done, starting at epoch 2")));
  EXPECT_EQ(entries_of(ckpts), (std::vector<std::string>{"ckpt-100", "ckpt-200", "ckpt-200.corrupt",
                                                         "ckpt-200.superseded"}));
  const nlohmann::json summary = read_json(run_dir + "/summary.json");
  EXPECT_EQ(summary["optimizer_iterations"], 200) << summary.dump(2);
}

// --strategy mirrored writes what a parameter-server run writes: config.json
// and a checkpoint every epoch, in the same format. A rerun resumes from it
// (saying where), psflow eval evaluates it, and a parameter-server run
// resumes from a mirrored run's checkpoint.
TEST(ResumeCliTest, MirroredRunsCheckpointResumeAndAreEvaluable) {
  const std::string run_dir = fresh_dir("psflow-resume-mirrored");
  const std::string ckpts = run_dir + "/checkpoints";
  std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "train", "--strategy", "mirrored",
                                   "--replicas",       "2",     "--epochs",   "1",
                                   "--batch-size",     "600",   "--run-dir",  run_dir};
  Ran first = run(argv);
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  const nlohmann::json config = read_json(run_dir + "/config.json");
  EXPECT_EQ(config["model"], "mlp") << config.dump(2);
  EXPECT_EQ(config["strategy"], "mirrored") << config.dump(2);
  EXPECT_TRUE(std::filesystem::exists(ckpts + "/ckpt-100/index.json"));
  EXPECT_TRUE(std::filesystem::exists(ckpts + "/ckpt-100/chief-0.safetensors"));

  argv[7] = "2";  // --epochs 2
  Ran second = run(argv);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_THAT(second.out,
              HasSubstr(absl::StrCat("resuming from ", ckpts,
                                     "/ckpt-100: 100 steps done, starting at epoch 2")));
  EXPECT_THAT(second.out, Not(HasSubstr("epoch 1/2:")));
  const nlohmann::json summary = read_json(run_dir + "/summary.json");
  EXPECT_EQ(summary["restored_steps"], 100) << summary.dump(2);
  EXPECT_EQ(summary["steps"], 200) << summary.dump(2);
  EXPECT_EQ(summary["optimizer_iterations"], 200) << summary.dump(2);
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.75) << summary.dump(2);

  Ran eval = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", run_dir, "--once"});
  ASSERT_EQ(eval.code, 0) << eval.out << eval.err;
  EXPECT_THAT(eval.out, HasSubstr("2 checkpoint(s) evaluated"));
  const std::vector<nlohmann::json> metrics = read_metrics(run_dir);
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[1]["step"], 200);
  // Replica 0's copy, as training evaluated it.
  EXPECT_DOUBLE_EQ(metrics[1]["test_accuracy"].get<double>(),
                   summary["test_accuracy"].get<double>());

  // The same checkpoint resumes a parameter-server run of the same model.
  const std::string ps_dir = fresh_dir("psflow-resume-mirrored-to-ps");
  Ran ps = run({PSFLOW_BINARY_PATH, "train", "--num-ps", "2", "--num-workers", "1", "--epochs", "3",
                "--batch-size", "600", "--partitioner", "fixed:2", "--run-dir", ps_dir,
                "--checkpoint", ckpts + "/ckpt-200"});
  ASSERT_EQ(ps.code, 0) << ps.out << ps.err;
  EXPECT_THAT(ps.out, HasSubstr(absl::StrCat("resuming from ", ckpts,
                                             "/ckpt-200: 200 steps done, starting at epoch 3")));
  const nlohmann::json ps_summary = read_json(ps_dir + "/summary.json");
  EXPECT_EQ(ps_summary["optimizer_iterations"], 300) << ps_summary.dump(2);
  EXPECT_GT(ps_summary["test_accuracy"].get<double>(), 0.75) << ps_summary.dump(2);
}

// A mirrored run stopped by SIGTERM mid-epoch saves the steps done; the
// rerun resumes in the middle of the epoch.
TEST(ResumeCliTest, MirroredRunStoppedMidEpochResumesThere) {
  const std::string run_dir = fresh_dir("psflow-resume-mirrored-stop");
  constexpr int64_t kSteps = 60000 / 64;
  const std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "train", "--strategy",   "mirrored",
                                         "--epochs",         "1",     "--batch-size", "64",
                                         "--run-dir",        run_dir};
  int64_t saved_steps = 0;
  {
    TestProcess first(argv, test_environment());
    ASSERT_GT(first.pid(), 0);
    const absl::Time deadline = absl::Now() + kRunTimeout;
    std::string out;
    bool training = false;
    while (!training) {
      std::optional<std::string> line = first.read_line(deadline);
      ASSERT_TRUE(line.has_value()) << "no progress line:\n" << out;
      out += *line + "\n";
      training = line->rfind("epoch 1/1 [", 0) == 0;
    }
    ASSERT_TRUE(first.signal(SIGTERM));
    out += first.read_stdout(absl::Now() + absl::Seconds(30));
    ASSERT_EQ(first.wait_exit_code(absl::Now() + kExitTimeout), 143) << out;
    const std::string saved =
        absl::StrCat("during epoch 1/1: saved ", run_dir, "/checkpoints/ckpt-");
    const size_t at = out.find(saved);
    ASSERT_NE(at, std::string::npos) << out;
    const std::string number = out.substr(at + saved.size(), out.find(';', at) - at - saved.size());
    ASSERT_TRUE(absl::SimpleAtoi(number, &saved_steps)) << out;
  }
  ASSERT_GT(saved_steps, 0);
  ASSERT_LT(saved_steps, kSteps);
  Ran second = run(argv);
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_THAT(second.out, HasSubstr(absl::StrCat("steps done, starting at epoch 1 at step ",
                                                 saved_steps + 1, " of ", kSteps)));
  const nlohmann::json summary = read_json(run_dir + "/summary.json");
  EXPECT_EQ(summary["steps"], kSteps) << summary.dump(2);
  EXPECT_EQ(summary["optimizer_iterations"], kSteps) << summary.dump(2);
}

// wide_deep writes config.json too, with what rebuilds its data, so that
// psflow eval evaluates its checkpoints (AUC included) as training did.
TEST(ResumeCliTest, WideDeepRunsAreEvaluable) {
  const std::string run_dir = fresh_dir("psflow-resume-wide-deep");
  Ran train =
      run({PSFLOW_BINARY_PATH, "train", "--model", "wide_deep", "--num-ps", "2", "--num-workers",
           "1", "--epochs", "1", "--batch-size", "1024", "--run-dir", run_dir});
  ASSERT_EQ(train.code, 0) << train.out << train.err;
  const nlohmann::json config = read_json(run_dir + "/config.json");
  EXPECT_EQ(config["model"], "wide_deep") << config.dump(2);
  Ran eval = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", run_dir, "--once"});
  ASSERT_EQ(eval.code, 0) << eval.out << eval.err;
  const std::vector<nlohmann::json> metrics = read_metrics(run_dir);
  ASSERT_EQ(metrics.size(), 1u);
  const nlohmann::json summary = read_json(run_dir + "/summary.json");
  // The default placement and partitioner balance the 2 ps tasks.
  const std::vector<int64_t> ps_bytes = summary["ps_bytes"].get<std::vector<int64_t>>();
  ASSERT_EQ(ps_bytes.size(), 2u) << summary.dump(2);
  EXPECT_LE(std::max(ps_bytes[0], ps_bytes[1]), 1.5 * std::min(ps_bytes[0], ps_bytes[1]))
      << summary.dump(2);
  EXPECT_EQ(metrics[0]["step"], summary["optimizer_iterations"]);
  EXPECT_NEAR(metrics[0]["test_auc"].get<double>(), summary["test_auc"].get<double>(), 1e-6);
  EXPECT_NEAR(metrics[0]["test_accuracy"].get<double>(), summary["test_accuracy"].get<double>(),
              1e-6);
}

// psflow eval on a directory without config.json says which file is
// missing and why.
TEST(ResumeCliTest, EvalNamesAMissingConfigAndWhy) {
  const std::string root = fresh_dir("psflow-eval-no-config");
  Ran absent = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", root + "/absent", "--once"});
  EXPECT_EQ(absent.code, 2);
  EXPECT_THAT(absent.err, HasSubstr("the run directory " + root + "/absent does not exist"));

  std::filesystem::create_directories(root + "/empty");
  Ran empty = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", root + "/empty", "--once"});
  EXPECT_EQ(empty.code, 2);
  EXPECT_THAT(empty.err, HasSubstr(root + "/empty/config.json does not exist: " + root +
                                   "/empty holds no psflow train run"));

  // A finished run of an older psflow: no waiting for a file that never comes.
  std::filesystem::create_directories(root + "/old/checkpoints");
  std::ofstream(root + "/old/summary.json") << "{}";
  Ran old = run({PSFLOW_BINARY_PATH, "eval", "--run-dir", root + "/old", "--timeout", "300"});
  EXPECT_EQ(old.code, 2);
  EXPECT_THAT(old.err, HasSubstr(root + "/old/config.json does not exist, although " + root +
                                 "/old holds a training run (summary.json, checkpoints/)"));
}

}  // namespace
}  // namespace psflow::internal
