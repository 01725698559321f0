// The psflow program's other subcommands, run as real processes.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tensorboard/event.pb.h"
#include "test_process.h"
#include "train/event_writer.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

TEST(CliTest, VersionPrintsTheVersion) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "version"}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_EQ(out, absl::StrCat("psflow ", std::string(version()), "\n"));
}

TEST(CliTest, HelpListsTheSubcommands) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "--help"}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  for (const char* command : {"train", "server", "local-cluster", "version"}) {
    EXPECT_THAT(out, HasSubstr(command));
  }
}

TEST(CliTest, NoSubcommandIsAnError) {
  TestProcess psflow({PSFLOW_BINARY_PATH}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_NE(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_FALSE(err.empty());
}

// The main job, short: one epoch of the mlp on the real Fashion-MNIST
// files, 1 ps + 2 workers as processes, and the summary it writes.
TEST(CliTest, TrainOneEpochOnFashionMnist) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-one-epoch";
  std::filesystem::remove_all(run_dir);
  // 937 steps at 10 per closure (the default): the last closure runs the
  // remaining 7.
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "2",
                      "--epochs", "1", "--batch-size", "64", "--run-dir", run_dir},
                     test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << psflow.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("ps 0 127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("worker 1 127.0.0.1:"));
  EXPECT_THAT(out, HasSubstr("epoch 1/1: train loss"));
  // Chief, ps and workers over mutual TLS, with a CA made for this run.
  EXPECT_THAT(out, HasSubstr("mTLS: on (fresh CA for this run)"));
  for (const char* task : {"ps-0", "worker-0", "worker-1"}) {
    std::ifstream log(run_dir + "/logs/" + task + ".log");
    const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_THAT(text, HasSubstr("mTLS on (certificate ")) << task;
  }
  std::ifstream file(run_dir + "/summary.json");
  ASSERT_TRUE(file.good()) << "no summary.json in " << run_dir;
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["epochs"], 1);
  EXPECT_EQ(summary["num_workers"], 2);
  EXPECT_EQ(summary["num_ps"], 1);
  EXPECT_EQ(summary["steps"], 60000 / 64);
  EXPECT_EQ(summary["optimizer_iterations"], 60000 / 64);
  // Every option of the run, and the invocation that trained it.
  EXPECT_EQ(summary["steps_per_execution"], 10);
  // The default partitioner (TF's tutorial MinSizePartitioner over the ps
  // count) as resolved for the run; the invocation keeps the flag as given.
  EXPECT_EQ(summary["partitioner"], "min_size:262144:1");
  EXPECT_EQ(summary["invocations"][0]["options"]["partitioner"], "auto");
  EXPECT_EQ(summary["placement"], "fewest_bytes");
  // The bytes on each ps, as the chief logged them at start: the mlp's
  // float32 parameters (784x256 + 256 + 256x10 + 10) and the int64
  // iterations.
  constexpr int64_t kMlpBytes = (784 * 256 + 256 + 256 * 10 + 10) * 4 + 8;
  EXPECT_EQ(summary["ps_bytes"], nlohmann::json::array({kMlpBytes})) << summary.dump(2);
  EXPECT_THAT(out, HasSubstr("ps bytes: ps/0 795.0 KiB\n"));
  EXPECT_EQ(summary["data_dir"], "");
  EXPECT_EQ(summary["ps_recovery"], false);
  ASSERT_EQ(summary["invocations"].size(), 1u) << summary.dump(2);
  EXPECT_EQ(summary["invocations"][0]["ended"], "complete");
  EXPECT_EQ(summary["invocations"][0]["options"]["num_workers"], 2);
  EXPECT_EQ(summary["invocations"][0]["options"]["steps_per_execution"], 10);
  EXPECT_EQ(summary["invocations"][0]["options"]["epochs"], 1);
  EXPECT_THAT(out, HasSubstr("937/937 steps"));
  EXPECT_GT(summary["examples_per_sec"].get<double>(), 0.0);
  // One epoch of this model reaches about 0.83; a broken gradient, update
  // or evaluation stays near chance (0.1).
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.78) << summary.dump(2);
  EXPECT_LT(summary["test_loss"].get<double>(), 0.7) << summary.dump(2);
  // TensorBoard's event file sits beside it.
  bool has_events = false;
  for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) has_events = true;
  }
  EXPECT_TRUE(has_events) << "no events.out.tfevents.* in " << run_dir;
}

// The same job on the local synchronous strategy: 2 replicas as threads, no
// ps or worker process, the same summary.
TEST(CliTest, TrainMirroredOneEpochOnFashionMnist) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-mirrored";
  std::filesystem::remove_all(run_dir);
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--strategy", "mirrored", "--replicas", "2",
                      "--epochs", "1", "--batch-size", "64", "--run-dir", run_dir},
                     test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string out = psflow.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << psflow.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("2 synchronous replicas"));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("local cluster")));
  std::ifstream file(run_dir + "/summary.json");
  ASSERT_TRUE(file.good()) << "no summary.json in " << run_dir;
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["strategy"], "mirrored");
  EXPECT_EQ(summary["replicas"], 2);
  EXPECT_EQ(summary["num_ps"], 0);
  EXPECT_EQ(summary["steps"], 60000 / 64);
  // The parameter-server run of the same length reaches about 0.83 too.
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.78) << summary.dump(2);
}

// As the chief of a TF_CONFIG cluster whose tasks never come up: it waits
// within --startup-timeout, then names each missing task.
TEST(CliTest, TrainAsChiefNamesTasksThatNeverStarted) {
  TestProcess psflow(
      {PSFLOW_BINARY_PATH, "train", "--startup-timeout", "1"},
      test_environment({{"TF_CONFIG",
                         R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],
                                         "ps": ["127.0.0.1:3"]},
                             "task": {"type": "chief", "index": 0}})"}}));
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(60));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 1);
  EXPECT_THAT(err, HasSubstr("/job:ps/replica:0/task:0"));
  EXPECT_THAT(err, HasSubstr("/job:worker/replica:0/task:0"));
  EXPECT_THAT(err, HasSubstr("--startup-timeout"));
}

// Kill the coordinator (and with it its local cluster) mid-epoch, rerun it
// on the same run directory: it resumes from the last checkpoint, at the
// epoch the optimizer's iterations give, and finishes.
TEST(CliTest, TrainResumesAfterTheCoordinatorIsKilledMidEpoch) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-resume";
  std::filesystem::remove_all(run_dir);
  const std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "train", "--num-ps",  "1",
                                         "--num-workers",    "1",     "--epochs",  "2",
                                         "--batch-size",     "128",   "--run-dir", run_dir};
  {
    TestProcess first(argv, test_environment());
    ASSERT_GT(first.pid(), 0);
    // The first progress line of epoch 2 comes after epoch 1's checkpoint.
    bool in_epoch_two = false;
    const absl::Time deadline = absl::Now() + absl::Seconds(300);
    while (!in_epoch_two) {
      std::optional<std::string> line = first.read_line(deadline);
      ASSERT_TRUE(line.has_value()) << "the first run ended before epoch 2";
      in_epoch_two = line->rfind("epoch 2/2 [", 0) == 0;
    }
    // A second process on the same run directory is refused, naming the
    // holder, before it starts any task.
    TestProcess intruder(argv, test_environment());
    ASSERT_GT(intruder.pid(), 0);
    EXPECT_EQ(intruder.wait_exit_code(absl::Now() + absl::Seconds(30)), 1);
    EXPECT_THAT(intruder.read_stderr(absl::Now() + absl::Seconds(5)),
                HasSubstr(absl::StrCat("is in use by another psflow train (pid ", first.pid(),
                                       " on host ")));
    ASSERT_TRUE(first.signal(SIGKILL));
    ASSERT_TRUE(first.wait(absl::Now() + absl::Seconds(30)).has_value());
  }
  EXPECT_FALSE(std::filesystem::exists(run_dir + "/summary.json"));
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoints/ckpt-468"));

  TestProcess second(argv, test_environment());
  ASSERT_GT(second.pid(), 0);
  const std::string out = second.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(second.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << second.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("ckpt-468: 468 steps done, starting at epoch 2"));
  // The killed run's lock went with it.
  EXPECT_THAT(out, HasSubstr("took over the run directory's lock from pid "));
  EXPECT_THAT(out, ::testing::Not(HasSubstr("epoch 1/2:")));
  EXPECT_THAT(out, HasSubstr("epoch 2/2:"));
  std::ifstream file(run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(file);
  // The model's steps: the checkpoint's and this run's (epoch 2).
  EXPECT_EQ(summary["restored_steps"], 468);
  EXPECT_EQ(summary["steps"], 936);
  EXPECT_EQ(summary["optimizer_iterations"], 936);
  // The whole run: epoch 1 of the killed invocation (kept in
  // run_record.json when it ended) and epoch 2 of this one.
  ASSERT_EQ(summary["history"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(summary["history"][0]["epoch"], 1);
  EXPECT_EQ(summary["history"][0]["invocation"], 0);
  EXPECT_EQ(summary["history"][0]["end_step"], 468);
  EXPECT_EQ(summary["history"][1]["epoch"], 2);
  EXPECT_EQ(summary["history"][1]["steps"], 468);
  EXPECT_EQ(summary["history"][1]["end_step"], 936);
  EXPECT_EQ(summary["history"][1]["invocation"], 1);
  ASSERT_EQ(summary["invocations"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(summary["invocations"][0]["ended"], "lost");  // SIGKILL says nothing
  EXPECT_EQ(summary["invocations"][0]["epochs"], nlohmann::json::array({1}));
  EXPECT_EQ(summary["invocations"][1]["ended"], "complete");
  EXPECT_EQ(summary["invocations"][1]["first_step"], 468);
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.8) << summary.dump(2);
  EXPECT_TRUE(std::filesystem::exists(run_dir + "/checkpoints/ckpt-936"));

  // A third run has nothing left to do: it says so and leaves the run's
  // records as they were (it used to overwrite summary.json with 0 steps).
  const auto read_all = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const auto event_files = [&run_dir] {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(run_dir)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("events.out.tfevents.", 0) == 0) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  };
  const std::string summary_before = read_all(run_dir + "/summary.json");
  const std::string record_before = read_all(run_dir + "/run_record.json");
  const std::vector<std::string> events_before = event_files();
  TestProcess third(argv, test_environment());
  ASSERT_GT(third.pid(), 0);
  const std::string third_out = third.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(third.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << third_out << third.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(third_out,
              HasSubstr("is already complete: 2 epochs, 936 steps; nothing was trained"));
  EXPECT_THAT(third_out, ::testing::Not(HasSubstr("epoch 2/2:")));
  EXPECT_EQ(read_all(run_dir + "/summary.json"), summary_before);
  EXPECT_EQ(read_all(run_dir + "/run_record.json"), record_before);
  EXPECT_EQ(event_files(), events_before);
}

// Every scalar of every TensorBoard event file in `dir`: tag -> the steps
// it was written at, file by file in the order they were written.
struct Scalars {
  std::vector<std::map<std::string, std::vector<int64_t>>> files;
};
Scalars read_scalars(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
      paths.push_back(entry.path().string());
    }
  }
  // Named by their creation second: two in one second sort by host alike,
  // so order them by their first record's wall time instead.
  std::vector<std::pair<double, std::map<std::string, std::vector<int64_t>>>> files;
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    const std::string content((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    absl::StatusOr<std::vector<std::string>> records = parse_tfrecords(content);
    EXPECT_TRUE(records.ok()) << path << ": " << records.status();
    std::map<std::string, std::vector<int64_t>> steps;
    double first_time = 0;
    for (const std::string& record : records.value_or(std::vector<std::string>())) {
      tensorboard::Event event;
      EXPECT_TRUE(event.ParseFromString(record));
      if (first_time == 0) first_time = event.wall_time();
      for (const auto& v : event.summary().value()) steps[v.tag()].push_back(event.step());
    }
    files.emplace_back(first_time, std::move(steps));
  }
  std::sort(files.begin(), files.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  Scalars out;
  for (auto& [time, steps] : files) out.files.push_back(std::move(steps));
  return out;
}

// A resume with another --batch-size used to end at once with a line of
// zeros (the checkpoint's steps read as steps of the new size): it is
// refused before any task starts, naming both sizes and the fix. With the
// same size it trains on, and the run's records go on: summary.json holds
// both invocations' epochs, TensorBoard's steps (per epoch and every 100
// steps) go on from the first invocation's.
TEST(CliTest, TrainResumesOnlyWithTheBatchSizeItWasTrainedWith) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-resume-batch";
  std::filesystem::remove_all(run_dir);
  const auto argv = [&run_dir](const char* epochs, const char* batch) {
    return std::vector<std::string>{PSFLOW_BINARY_PATH, "train", "--num-ps",  "1",
                                    "--num-workers",    "1",     "--epochs",  epochs,
                                    "--batch-size",     batch,   "--run-dir", run_dir};
  };
  {
    TestProcess first(argv("1", "600"), test_environment());  // 100 steps an epoch
    ASSERT_GT(first.pid(), 0);
    const std::string out = first.read_stdout(absl::Now() + absl::Seconds(300));
    ASSERT_EQ(first.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
        << out << first.read_stderr(absl::Now() + absl::Seconds(1));
  }
  {
    TestProcess other(argv("2", "300"), test_environment());
    ASSERT_GT(other.pid(), 0);
    const std::string out = other.read_stdout(absl::Now() + absl::Seconds(60));
    const std::string err = other.read_stderr(absl::Now() + absl::Seconds(5));
    EXPECT_EQ(other.wait_exit_code(absl::Now() + absl::Seconds(30)), 2)
        << out << err;  // a usage error
    EXPECT_THAT(err, HasSubstr("(ckpt-100) was trained with --batch-size 600"));
    EXPECT_THAT(err, HasSubstr("cannot resume with --batch-size 300"));
    EXPECT_THAT(err, HasSubstr("resume with --batch-size 600, or use another --run-dir"));
    EXPECT_THAT(out, ::testing::Not(HasSubstr("local cluster")));
  }
  TestProcess second(argv("2", "600"), test_environment());
  ASSERT_GT(second.pid(), 0);
  const std::string out = second.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(second.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << second.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("ckpt-100: 100 steps done, starting at epoch 2"));
  EXPECT_THAT(out, HasSubstr("epoch 2/2: "));
  EXPECT_THAT(out, ::testing::ContainsRegex("100/100 steps .* ETA [0-9]+:[0-9][0-9]"));
  std::ifstream file(run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["steps"], 200);
  ASSERT_EQ(summary["history"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(summary["history"][0]["end_step"], 100);
  EXPECT_EQ(summary["history"][1]["end_step"], 200);
  ASSERT_EQ(summary["invocations"].size(), 2u) << summary.dump(2);
  EXPECT_EQ(summary["invocations"][0]["ended"], "complete");
  EXPECT_EQ(summary["invocations"][0]["options"]["epochs"], 1);
  EXPECT_EQ(summary["invocations"][1]["ended"], "complete");
  EXPECT_EQ(summary["invocations"][1]["options"]["epochs"], 2);
  EXPECT_EQ(summary["invocations"][1]["first_epoch"], 2);

  const Scalars scalars = read_scalars(run_dir);
  ASSERT_EQ(scalars.files.size(), 2u);
  for (const char* tag : {"train/loss", "test/accuracy", "step/loss", "step/learning_rate",
                          "step/examples_per_sec"}) {
    ASSERT_TRUE(scalars.files[0].contains(tag)) << tag;
    ASSERT_TRUE(scalars.files[1].contains(tag)) << tag;
    EXPECT_EQ(scalars.files[0].at(tag), std::vector<int64_t>{100}) << tag;
    EXPECT_EQ(scalars.files[1].at(tag), std::vector<int64_t>{200}) << tag;
  }
}

// `psflow train --ps-recovery` survives a ps killed mid-epoch: the launcher
// restarts it (10 restarts allowed by default with --ps-recovery), every ps
// is restored from the last checkpoint, the rollback is printed and
// counted in summary.json, and the run ends as a fault-free one would.
TEST(CliTest, TrainWithPsRecoverySurvivesAKilledPs) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-ps-recovery";
  std::filesystem::remove_all(run_dir);
  TestProcess train({PSFLOW_BINARY_PATH, "train", "--ps-recovery", "--num-ps", "2", "--num-workers",
                     "2", "--epochs", "2", "--batch-size", "256", "--run-dir", run_dir},
                    test_environment());
  ASSERT_GT(train.pid(), 0);
  std::string out;
  pid_t ps1 = 0;
  bool in_epoch_two = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(300);
  while (!in_epoch_two) {
    std::optional<std::string> line = train.read_line(deadline);
    ASSERT_TRUE(line.has_value()) << "training ended before epoch 2:\n" << out;
    out += *line + "\n";
    if (line->rfind("ps 1 ", 0) == 0) {
      const std::string::size_type pid_at = line->find("pid=");
      ASSERT_NE(pid_at, std::string::npos) << "no pid= on the ps 1 line:\n" << out;
      ps1 = std::stoi(line->substr(pid_at + 4));
    }
    in_epoch_two = line->rfind("epoch 2/2 [", 0) == 0;
  }
  ASSERT_GT(ps1, 0) << out;
  ASSERT_EQ(::kill(ps1, SIGKILL), 0);
  out += train.read_stdout(deadline);
  ASSERT_EQ(train.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << out << train.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(out, HasSubstr("ps recovery 1: /job:ps/replica:0/task:1 restarted"));
  EXPECT_THAT(out, HasSubstr("restored all 2 ps tasks from"));
  EXPECT_THAT(out, HasSubstr("ps recoveries: 1;"));
  std::ifstream file(run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(file);
  EXPECT_EQ(summary["ps_recoveries"], 1);
  EXPECT_EQ(summary["steps"], 2 * (60000 / 256));
  EXPECT_EQ(summary["optimizer_iterations"], 2 * (60000 / 256));
  EXPECT_GT(summary["test_accuracy"].get<double>(), 0.8) << summary.dump(2);
  // The default placement and partitioner balance the 2 ps tasks.
  const std::vector<int64_t> ps_bytes = summary["ps_bytes"].get<std::vector<int64_t>>();
  ASSERT_EQ(ps_bytes.size(), 2u) << summary.dump(2);
  EXPECT_LE(std::max(ps_bytes[0], ps_bytes[1]), 1.5 * std::min(ps_bytes[0], ps_bytes[1]))
      << summary.dump(2);
}

// wide_deep takes --ps-recovery like the classifiers, with the same checks.
TEST(CliTest, WideDeepChecksThePsRecoveryFlags) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--model", "wide_deep", "--ps-recovery",
                      "--ps-recovery-timeout", "0"},
                     test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("--ps-recovery-timeout 0 is out of range"));
}

// The sidecar evaluator started before training: it waits for the run,
// evaluates each checkpoint as it appears from the files alone, and exits
// when training is done; on the last checkpoint it measures exactly what
// training reported.
TEST(CliTest, EvalBesideTrainingEvaluatesEveryCheckpoint) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-eval-beside";
  std::filesystem::remove_all(run_dir);
  TestProcess eval({PSFLOW_BINARY_PATH, "eval", "--run-dir", run_dir, "--timeout", "300"},
                   test_environment());
  ASSERT_GT(eval.pid(), 0);
  TestProcess train({PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "1", "--epochs",
                     "2", "--batch-size", "256", "--run-dir", run_dir},
                    test_environment());
  ASSERT_GT(train.pid(), 0);
  train.read_stdout(absl::Now() + absl::Seconds(300));
  ASSERT_EQ(train.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << train.read_stderr(absl::Now() + absl::Seconds(1));
  const std::string eval_out = eval.read_stdout(absl::Now() + absl::Seconds(120));
  ASSERT_EQ(eval.wait_exit_code(absl::Now() + absl::Seconds(30)), 0)
      << eval_out << eval.read_stderr(absl::Now() + absl::Seconds(1));
  EXPECT_THAT(eval_out, HasSubstr("2 checkpoint(s) evaluated"));

  std::ifstream metrics_file(run_dir + "/eval/metrics.jsonl");
  std::vector<nlohmann::json> metrics;
  std::string line;
  while (std::getline(metrics_file, line)) metrics.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(metrics.size(), 2u);
  EXPECT_EQ(metrics[0]["step"], 234);
  EXPECT_EQ(metrics[1]["step"], 468);
  std::ifstream summary_file(run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  EXPECT_DOUBLE_EQ(metrics[1]["test_accuracy"].get<double>(),
                   summary["test_accuracy"].get<double>());
  EXPECT_GT(metrics[1]["test_accuracy"].get<double>(), 0.75);
}

TEST(CliTest, TrainRejectsABadOptionByName) {
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--batch-size", "0"}, test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("--batch-size 0"));
  // The placement and partitioner flags name the bad value and the forms
  // they accept.
  for (const auto& [flag, value, accepted] :
       {std::tuple{"--placement", "roundrobin", "use fewest_bytes"},
        std::tuple{"--partitioner", "automatic", "use auto, none, fixed:<shards>"}}) {
    TestProcess bad({PSFLOW_BINARY_PATH, "train", flag, value}, test_environment());
    ASSERT_GT(bad.pid(), 0);
    const std::string said = bad.read_stderr(absl::Now() + absl::Seconds(30));
    EXPECT_EQ(bad.wait_exit_code(absl::Now() + absl::Seconds(30)), 2) << flag;
    EXPECT_THAT(said, HasSubstr(absl::StrCat(flag, " '", value, "'")));
    EXPECT_THAT(said, HasSubstr(accepted));
  }
}

TEST(CliTest, TrainNamesTheMissingDataset) {
  const std::string run_dir = ::testing::TempDir() + "/psflow-train-no-data";
  TestProcess psflow({PSFLOW_BINARY_PATH, "train", "--num-ps", "1", "--num-workers", "1",
                      "--data-dir", "/nonexistent/fashion", "--run-dir", run_dir},
                     test_environment());
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(60));
  // A usage error, found before any task starts.
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("dataset-fashion-mnist"));
}

TEST(CliTest, TrainWithTfConfigOfAWorkerPointsToServer) {
  TestProcess psflow(
      {PSFLOW_BINARY_PATH, "train"},
      test_environment({{"TF_CONFIG",
                         R"({"cluster": {"worker": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]},
                             "task": {"type": "worker", "index": 0}})"}}));
  ASSERT_GT(psflow.pid(), 0);
  const std::string err = psflow.read_stderr(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(psflow.wait_exit_code(absl::Now() + absl::Seconds(30)), 2);
  EXPECT_THAT(err, HasSubstr("psflow server"));
}

}  // namespace
}  // namespace psflow::internal
