// Every command refuses bad input before it starts anything or writes
// anything, with a message naming the flag and the fix and exit status 2;
// and a task's log says what it does.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "launcher/port_reservation.h"
#include "rpc/channel.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;
using ::testing::Not;

struct Outcome {
  int exit_code = -1;
  std::string err;
};

// Runs `args` to its end (each case here ends within seconds).
Outcome run(const std::vector<std::string>& args,
            const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {PSFLOW_BINARY_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  TestProcess process(argv, test_environment(env));
  Outcome outcome;
  if (process.pid() <= 0) return outcome;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  outcome.err = process.read_stderr(deadline);
  outcome.exit_code = process.wait_exit_code(deadline);
  return outcome;
}

// A fresh path under the test's temporary directory, not created.
std::string fresh_dir(const std::string& name) {
  const std::string dir = ::testing::TempDir() + "/psflow-input-checks-" + name;
  std::filesystem::remove_all(dir);
  return dir;
}

TEST(InputChecksCliTest, ParseErrorsAreUsageErrors) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"train", "--no-such-flag"},
           {"train", "--num-workers", "300"},
           {"train", "--epochs", "many"},
           {"server", "--job", "chief"},
           {"local-cluster", "--max-restarts", "-1"},
           {"eval"},
           {"no-such-command"},
       }) {
    const Outcome outcome = run(args);
    EXPECT_EQ(outcome.exit_code, 2) << absl::StrJoin(args, " ") << ": " << outcome.err;
    EXPECT_FALSE(outcome.err.empty()) << absl::StrJoin(args, " ");
  }
}

TEST(InputChecksCliTest, ANegativeSeedIsRefused) {
  const std::string run_dir = fresh_dir("seed");
  const Outcome outcome = run({"train", "--seed", "-3", "--run-dir", run_dir});
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("--seed"));
  EXPECT_FALSE(std::filesystem::exists(run_dir));
}

TEST(InputChecksCliTest, AnUnknownModelListsEveryModel) {
  const Outcome outcome = run({"train", "--model", "resnet"});
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("--model 'resnet'"));
  for (const char* model : {"mlp", "logreg", "wide_deep"}) {
    EXPECT_THAT(outcome.err, HasSubstr(model));
  }
}

// No task starts and nothing is written (no run directory, no logs/).
TEST(InputChecksCliTest, TrainRefusesAClusterWithoutPsOrWorkersBeforeStarting) {
  for (const char* flag : {"--num-ps", "--num-workers"}) {
    const std::string run_dir = fresh_dir("zero-tasks");
    const Outcome outcome = run({"train", flag, "0", "--run-dir", run_dir});
    EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
    EXPECT_THAT(outcome.err, HasSubstr(absl::StrCat(flag, " 0")));
    EXPECT_THAT(outcome.err, Not(HasSubstr("starting a local cluster")));
    EXPECT_FALSE(std::filesystem::exists(run_dir)) << flag;
  }
}

TEST(InputChecksCliTest, TrainChecksTheDataBeforeStarting) {
  const std::string run_dir = fresh_dir("no-data");
  const Outcome outcome =
      run({"train", "--data-dir", "/nonexistent/fashion", "--run-dir", run_dir});
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("/nonexistent/fashion/train-images-idx3-ubyte.gz is missing"));
  EXPECT_THAT(outcome.err, HasSubstr("--data-dir"));
  EXPECT_FALSE(std::filesystem::exists(run_dir));

  const Outcome wide_deep = run({"train", "--model", "wide_deep", "--data-dir",
                                 "/nonexistent/clicks.svm", "--run-dir", run_dir});
  EXPECT_EQ(wide_deep.exit_code, 2) << wide_deep.err;
  EXPECT_THAT(wide_deep.err, HasSubstr("/nonexistent/clicks.svm is missing"));
  EXPECT_FALSE(std::filesystem::exists(run_dir));
}

TEST(InputChecksCliTest, TrainRefusesARunDirectoryItCannotWrite) {
  const std::string dir = fresh_dir("unwritable");
  std::filesystem::create_directories(dir);
  const std::string file = dir + "/a-file";
  std::ofstream(file) << "not a directory";
  const Outcome outcome = run({"train", "--run-dir", file + "/run"});
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.err, HasSubstr("--run-dir"));
  EXPECT_THAT(outcome.err, HasSubstr("is not a directory"));
  EXPECT_THAT(outcome.err, Not(HasSubstr("starting a local cluster")));
}

TEST(InputChecksCliTest, FlagsTheModeWouldIgnoreAreRefused) {
  const std::string run_dir = fresh_dir("ignored-flags");
  const std::string tf_config =
      R"({"cluster": {"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"], "ps": ["127.0.0.1:3"]},
          "task": {"type": "chief", "index": 0}})";
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"train", "--strategy", "mirrored", "--num-ps", "3"}, {}, "--num-ps configures"},
           {{"train", "--strategy", "mirrored", "--num-workers", "3"}, {}, "--num-workers"},
           {{"train", "--strategy", "mirrored", "--max-restarts", "2"}, {}, "--max-restarts"},
           {{"train", "--replicas", "4"}, {}, "--replicas is the replica count"},
           {{"train", "--num-workers", "4"}, {{"TF_CONFIG", tf_config}}, "from TF_CONFIG"},
           {{"train", "--strategy", "mirrored"}, {{"TF_CONFIG", tf_config}}, "TF_CONFIG is set"},
       }) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--run-dir", run_dir});
    const Outcome outcome = run(args, c.env);
    EXPECT_EQ(outcome.exit_code, 2) << absl::StrJoin(c.args, " ") << ": " << outcome.err;
    EXPECT_THAT(outcome.err, HasSubstr(c.says)) << absl::StrJoin(c.args, " ");
    EXPECT_FALSE(std::filesystem::exists(run_dir)) << absl::StrJoin(c.args, " ");
  }
}

// TensorFlow's rules at once, with TensorFlow's message, rather than after
// --startup-timeout of waiting for the tasks.
TEST(InputChecksCliTest, AChiefChecksItsClusterBeforeWaitingForIt) {
  const std::string run_dir = fresh_dir("chief-rules");
  for (const auto& [cluster, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})",
            "There must be at least one ps."},
           {R"({"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]})",
            "There must be at least one worker."},
       }) {
    const absl::Time start = absl::Now();
    const Outcome outcome =
        run({"train", "--startup-timeout", "60", "--run-dir", run_dir},
            {{"TF_CONFIG", absl::StrCat(R"({"cluster": )", cluster,
                                        R"(, "task": {"type": "chief", "index": 0}})")}});
    EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
    EXPECT_THAT(outcome.err, HasSubstr(message));
    EXPECT_THAT(outcome.err, Not(HasSubstr("waiting for")));
    EXPECT_LT(absl::Now() - start, absl::Seconds(30));
    EXPECT_FALSE(std::filesystem::exists(run_dir));
  }
}

// A ps and a worker serving where the chief's TF_CONFIG names the other:
// the chief names the mismatch instead of failing later with UNIMPLEMENTED.
TEST(InputChecksCliTest, AChiefNamesSwappedPsAndWorkerAddresses) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok() && worker.ok());
  const auto tf_config = [](const std::string& ps_address, const std::string& worker_address,
                            const std::string& task) {
    return absl::StrCat(R"({"cluster": {"chief": ["127.0.0.1:1"], "ps": [")", ps_address,
                        R"("], "worker": [")", worker_address, R"("]}, "task": )", task, "}");
  };
  std::vector<std::unique_ptr<TestProcess>> servers;
  for (const char* job : {"ps", "worker"}) {
    servers.push_back(std::make_unique<TestProcess>(
        std::vector<std::string>{PSFLOW_BINARY_PATH, "server", "--reuse-port"},
        test_environment(
            {{"TF_CONFIG", tf_config(ps->address(), worker->address(),
                                     absl::StrCat(R"({"type": ")", job, R"(", "index": 0})"))}})));
    ASSERT_GT(servers.back()->pid(), 0);
  }
  const std::string run_dir = fresh_dir("swapped");
  const Outcome outcome = run({"train", "--startup-timeout", "30", "--run-dir", run_dir},
                              {{"TF_CONFIG", tf_config(worker->address(), ps->address(),
                                                       R"({"type": "chief", "index": 0})")}});
  EXPECT_EQ(outcome.exit_code, 2) << outcome.err;
  EXPECT_THAT(outcome.err,
              HasSubstr(absl::StrCat("ps:0 at ", worker->address(), " answers as worker:0")));
  EXPECT_THAT(outcome.err, HasSubstr("the TF_CONFIG addresses of ps and worker look swapped"));
  EXPECT_THAT(outcome.err, Not(HasSubstr("UNIMPLEMENTED")));
  for (auto& server : servers) {
    ASSERT_TRUE(server->signal(SIGTERM));
    EXPECT_EQ(server->wait_exit_code(absl::Now() + absl::Seconds(15)), 143);
  }
}

TEST(InputChecksCliTest, OtherCommandsCheckTheirFlagsToo) {
  const std::string log_dir = fresh_dir("local-cluster-logs");
  const Outcome empty =
      run({"local-cluster", "--num-ps", "0", "--num-workers", "0", "--log-dir", log_dir});
  EXPECT_EQ(empty.exit_code, 2) << empty.err;
  EXPECT_THAT(empty.err, HasSubstr("no cluster"));
  EXPECT_FALSE(std::filesystem::exists(log_dir));

  const Outcome host = run({"local-cluster", "--host", "10.9.9.9"});
  EXPECT_EQ(host.exit_code, 2) << host.err;
  EXPECT_THAT(host.err, HasSubstr("--host 10.9.9.9 is not a loopback address"));

  const Outcome eval = run({"eval", "--run-dir", fresh_dir("eval"), "--timeout", "0"});
  EXPECT_EQ(eval.exit_code, 2) << eval.err;
  EXPECT_THAT(eval.err, HasSubstr("--timeout 0"));
}

// A task says at the default level where it serves, as what, and who
// connected; never a line per call.
TEST(InputChecksCliTest, AServersLogNamesItsRoleAddressAndConnections) {
  absl::StatusOr<PortReservation> ps = PortReservation::reserve("127.0.0.1");
  absl::StatusOr<PortReservation> worker = PortReservation::reserve("127.0.0.1");
  ASSERT_TRUE(ps.ok() && worker.ok());
  TestProcess server(
      {PSFLOW_BINARY_PATH, "server", "--reuse-port", "--job", "ps", "--task", "0", "--cluster-json",
       absl::StrCat(R"({"ps": [")", ps->address(), R"("], "worker": [")", worker->address(),
                    R"("]})")},
      test_environment({{"PSFLOW_LOG_LEVEL", ""}}));
  ASSERT_GT(server.pid(), 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(wait_for_healthy(ps->address(), "/job:ps/replica:0/task:0", deadline).ok());
  // Many calls on one connection: one line.
  const std::shared_ptr<grpc::Channel> channel = create_channel(ps->address());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(get_status(channel, ps->address(), "ps", 0, deadline).ok());
  }
  ASSERT_TRUE(server.signal(SIGTERM));
  EXPECT_EQ(server.wait_exit_code(absl::Now() + absl::Seconds(15)), 143);
  const std::string log = server.read_stderr(absl::Now() + absl::Seconds(5));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("serving /job:ps/replica:0/task:0 at ", ps->address(),
                                          " as a ps (holds variables")));
  EXPECT_THAT(log, HasSubstr(absl::StrCat("pid ", server.pid(), ", incarnation ")));
  const std::vector<std::string> connected =
      absl::StrSplit(log, "/job:ps/replica:0/task:0: a client connected from ");
  EXPECT_EQ(connected.size(), 2u) << log;
  EXPECT_THAT(log, HasSubstr("(first call: GetStatus)"));
}

TEST(InputChecksCliTest, ABadLogLevelIsWarnedAboutAndDocumented) {
  const Outcome outcome = run({"version"}, {{"PSFLOW_LOG_LEVEL", "verbose"}});
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_THAT(outcome.err, HasSubstr("PSFLOW_LOG_LEVEL='verbose' is not a log level"));
  EXPECT_THAT(outcome.err, HasSubstr("debug, info"));
  EXPECT_THAT(run({"version"}, {{"PSFLOW_LOG_LEVEL", "WARNING"}}).err, Not(HasSubstr("W ")));

  TestProcess help({PSFLOW_BINARY_PATH, "server", "--help"}, test_environment());
  ASSERT_GT(help.pid(), 0);
  const std::string out = help.read_stdout(absl::Now() + absl::Seconds(30));
  EXPECT_EQ(help.wait_exit_code(absl::Now() + absl::Seconds(30)), 0);
  EXPECT_THAT(out, HasSubstr("PSFLOW_LOG_LEVEL"));
  EXPECT_THAT(out, HasSubstr("warning or error (or 0 to 3; any case)"));
}

}  // namespace
}  // namespace psflow::internal
