// `psflow server --check-config`: checks TF_CONFIG and the flags as the
// server would (and the credentials it is given), prints what it found and
// exits, without binding or waiting.
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::test_environment;
using ::psflow::internal::testing::TestProcess;
using ::testing::HasSubstr;

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

Outcome check_config(const std::string& tf_config, std::vector<std::string> flags = {}) {
  std::vector<std::string> argv = {PSFLOW_BINARY_PATH, "server", "--check-config"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::map<std::string, std::string> env;
  if (!tf_config.empty()) env["TF_CONFIG"] = tf_config;
  TestProcess process(argv, test_environment(env));
  Outcome outcome;
  if (process.pid() <= 0) return outcome;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  outcome.out = process.read_stdout(deadline);
  outcome.err = process.read_stderr(deadline);
  outcome.exit_code = process.wait_exit_code(deadline);
  return outcome;
}

// A cluster as the TFJob operator writes it, with loopback addresses.
constexpr char kCluster[] =
    R"({"chief": ["127.0.0.3:2222"], "ps": ["127.0.0.4:2222", "127.0.0.5:2222"],)"
    R"( "worker": ["127.0.0.6:2222", "127.0.0.7:2222"]})";

std::string tf_config(const std::string& cluster, const std::string& type, int index) {
  return absl::StrCat(R"({"cluster": )", cluster, R"(, "task": {"type": ")", type,
                      R"(", "index": )", index, R"(}, "environment": "cloud"})");
}

TEST(ServerCheckConfigTest, AGoodConfigPrintsTheTaskAndItsAddress) {
  const Outcome ps = check_config(tf_config(kCluster, "ps", 1));
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_EQ(ps.out,
            "TF_CONFIG ok: this task is ps:1 of {chief: 1, ps: 2, worker: 2}; it would listen on "
            "127.0.0.5:2222 (the spec's loopback address)\n");
  const Outcome worker = check_config(tf_config(kCluster, "worker", 0));
  EXPECT_EQ(worker.exit_code, 0) << worker.err;
  EXPECT_THAT(worker.out, HasSubstr("this task is worker:0 of"));
  EXPECT_THAT(worker.out, HasSubstr("it would listen on 127.0.0.6:2222"));
}

TEST(ServerCheckConfigTest, TheChiefsConfigIsCheckedToo) {
  const Outcome chief = check_config(tf_config(kCluster, "chief", 0));
  EXPECT_EQ(chief.exit_code, 0) << chief.err;
  EXPECT_EQ(chief.out,
            "TF_CONFIG ok: this task is chief:0 of {chief: 1, ps: 2, worker: 2}; it is the "
            "coordinator: run it with `psflow train`, which listens on no port\n");
}

Outcome run_psflow(std::vector<std::string> argv) {
  argv.insert(argv.begin(), PSFLOW_BINARY_PATH);
  TestProcess process(argv, test_environment({}));
  Outcome outcome;
  if (process.pid() <= 0) return outcome;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  outcome.out = process.read_stdout(deadline);
  outcome.err = process.read_stderr(deadline);
  outcome.exit_code = process.wait_exit_code(deadline);
  return outcome;
}

// The credentials a task is given are loaded and checked as the server
// would, and must name the task.
TEST(ServerCheckConfigTest, ChecksTheCredentials) {
  std::string base = ::testing::TempDir() + "/check_config_tls_XXXXXX";
  ASSERT_NE(::mkdtemp(base.data()), nullptr);
  const std::string certs = base + "/certs";
  const Outcome made = run_psflow({"certs", "--cluster-spec", kCluster, "--out", certs});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string config = tf_config(kCluster, "ps", 1);

  const Outcome good = check_config(config, {"--tls-dir", certs});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_THAT(good.out, HasSubstr("it would listen on 127.0.0.5:2222"));
  EXPECT_THAT(good.out,
              HasSubstr(absl::StrCat("\ncredentials ok: ", certs, "/ps-1.crt names ps/1")));
  EXPECT_THAT(good.out, HasSubstr("valid until"));

  const Outcome chief = check_config(tf_config(kCluster, "chief", 0), {"--tls-dir", certs});
  EXPECT_EQ(chief.exit_code, 0) << chief.err;
  EXPECT_THAT(chief.out, HasSubstr("names chief/0"));

  // Another task's pair: the key matches and the CA signed it, but the CN
  // names ps/0.
  const Outcome other =
      check_config(config, {"--tls-ca", certs + "/ca.crt", "--tls-cert", certs + "/ps-0.crt",
                            "--tls-key", certs + "/ps-0.key"});
  EXPECT_EQ(other.exit_code, 2) << other.out;
  EXPECT_THAT(other.err, HasSubstr(R"(names task "ps/0")"));
  EXPECT_THAT(other.err, HasSubstr(R"(this task is "ps/1")"));
  EXPECT_TRUE(other.out.empty()) << other.out;

  const Outcome mismatched =
      check_config(config, {"--tls-ca", certs + "/ca.crt", "--tls-cert", certs + "/ps-1.crt",
                            "--tls-key", certs + "/ps-0.key"});
  EXPECT_EQ(mismatched.exit_code, 2) << mismatched.out;
  EXPECT_THAT(mismatched.err, HasSubstr("does not match the certificate"));

  const Outcome missing = check_config(config, {"--tls-dir", base + "/absent"});
  EXPECT_EQ(missing.exit_code, 2) << missing.out;
  EXPECT_THAT(missing.err, HasSubstr(base + "/absent/ca.crt"));
  EXPECT_THAT(missing.err, HasSubstr("psflow certs"));
  std::filesystem::remove_all(base);
}

// It binds nothing: the task's port may be held by another socket.
TEST(ServerCheckConfigTest, BindsNoPort) {
  const int holder = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(holder, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(holder, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(holder, 1), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(holder, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string ps = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
  const Outcome outcome = check_config(
      tf_config(absl::StrCat(R"({"ps": [")", ps, R"("], "worker": ["127.0.0.1:1"]})"), "ps", 0));
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr(absl::StrCat("it would listen on ", ps)));
  ::close(holder);
}

// Kubernetes names do not resolve here: with --bind the spec's names are
// not resolved, so the structure is still checked and the line says where
// the task would listen. Without it, the name that does not resolve is the
// error.
TEST(ServerCheckConfigTest, NamesThatDoNotResolveHereNeedBind) {
  const std::string cluster =
      R"({"chief": ["job-chief-0.ns.svc.invalid:2222"], "ps": ["job-ps-0.ns.svc.invalid:2222"],)"
      R"( "worker": ["job-worker-0.ns.svc.invalid:2222"]})";
  const Outcome bound = check_config(tf_config(cluster, "ps", 0), {"--bind", "0.0.0.0:2222"});
  EXPECT_EQ(bound.exit_code, 0) << bound.err;
  EXPECT_EQ(bound.out,
            "TF_CONFIG ok: this task is ps:0 of {chief: 1, ps: 1, worker: 1}; it would listen on "
            "0.0.0.0:2222 (the bind address given)\n");
  const Outcome unbound = check_config(tf_config(cluster, "ps", 0));
  EXPECT_EQ(unbound.exit_code, 2);
  EXPECT_THAT(unbound.err, HasSubstr("'job-ps-0.ns.svc.invalid' does not resolve here"));
  EXPECT_THAT(unbound.err, HasSubstr("--bind"));
  EXPECT_TRUE(unbound.out.empty()) << unbound.out;
}

TEST(ServerCheckConfigTest, FlagsOverrideTfConfig) {
  const Outcome outcome =
      check_config("", {"--cluster-json", kCluster, "--job", "worker", "--task", "1"});
  EXPECT_EQ(outcome.exit_code, 0) << outcome.err;
  EXPECT_THAT(outcome.out, HasSubstr("configuration ok: this task is worker:1 of"));
  EXPECT_THAT(outcome.out, HasSubstr("it would listen on 127.0.0.7:2222"));
}

// Each kind of bad configuration: exit 2, the error on stderr, nothing on
// stdout.
TEST(ServerCheckConfigTest, EachKindOfBadConfigIsAnError) {
  struct Case {
    std::string name;
    std::string tf_config;
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"malformed JSON", R"({"cluster": )", {}, "TF_CONFIG"},
      {"no TF_CONFIG", "", {}, "no cluster: set TF_CONFIG"},
      {"no task type", absl::StrCat(R"({"cluster": )", kCluster, "}"), {}, "no task type"},
      {"no task index",
       absl::StrCat(R"({"cluster": )", kCluster, R"(, "task": {"type": "ps"}})"),
       {},
       "no task index"},
      {"index out of range",
       tf_config(kCluster, "ps", 2),
       {},
       "The `task_id` 2 exceeds the maximum id of ps"},
      {"unknown task type", tf_config(kCluster, "foobar", 0), {}, "Unrecognized task_type: foobar"},
      {"unknown job",
       tf_config(R"({"ps": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"],)"
                 R"( "trainer": ["127.0.0.1:3"]})",
                 "ps", 0),
       {},
       "Disallowed task type found in cluster spec"},
      {"two chiefs",
       tf_config(R"({"chief": ["127.0.0.1:1", "127.0.0.1:2"],)"
                 R"( "ps": ["127.0.0.1:3"], "worker": ["127.0.0.1:4"]})",
                 "ps", 0),
       {},
       "There must be at most one 'chief' job"},
      {"no ps",
       tf_config(R"({"chief": ["127.0.0.1:1"], "worker": ["127.0.0.1:2"]})", "worker", 0),
       {},
       "There must be at least one ps"},
      {"no worker",
       tf_config(R"({"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]})", "ps", 0),
       {},
       "There must be at least one worker"},
      {"task type missing from the cluster",
       tf_config(R"({"chief": ["127.0.0.1:1"], "ps": ["127.0.0.1:2"]})", "worker", 0),
       {},
       "`task_type` 'worker' not found in cluster_spec"},
      {"address without a port",
       tf_config(R"({"ps": ["127.0.0.1"], "worker": ["127.0.0.1:2"]})", "ps", 0),
       {},
       "invalid task address '127.0.0.1'"},
      {"job list of numbers",
       tf_config(R"({"ps": [1], "worker": ["127.0.0.1:2"]})", "ps", 0),
       {},
       "TF_CONFIG"},
      {"bad flag value",
       tf_config(kCluster, "ps", 0),
       {"--result-cache-mib", "100000"},
       "--result-cache-mib 100000 is out of range"},
      {"malformed --bind",
       tf_config(kCluster, "ps", 0),
       {"--bind", "0.0.0.0"},
       "invalid task address '0.0.0.0'"},
  };
  for (const Case& c : cases) {
    const Outcome outcome = check_config(c.tf_config, c.flags);
    EXPECT_EQ(outcome.exit_code, 2) << c.name << ": " << outcome.out << outcome.err;
    EXPECT_THAT(outcome.err, HasSubstr(c.message)) << c.name;
    EXPECT_TRUE(outcome.out.empty()) << c.name << ": " << outcome.out;
  }
}

}  // namespace
}  // namespace psflow::internal
