// PsRecovery against real ps processes (LocalCluster, 2 ps): a killed ps
// is told apart from other errors, every ps goes back to the latest
// checkpoint and training goes on; a ps that stays down, a used-up limit
// and a restore that fails part-way give clear errors.
#include "psflow/ps_recovery.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/optimizer.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPs1[] = "/job:ps/replica:0/task:1";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// A cluster of two ps and one worker (the chief is this process), a model of two variables,
// one per ps, with an SGD optimizer whose iterations live on ps 0, and a
// checkpoint manager in a fresh directory.
class PsRecoveryTest : public ::testing::Test {
 protected:
  void start(int max_restarts) {
    static std::atomic<int> counter{0};
    dir_ = (fs::path(::testing::TempDir()) /
            absl::StrCat("psflow_ps_recovery_", ::getpid(), "_", counter.fetch_add(1)))
               .string();
    fs::remove_all(dir_);
    LocalClusterOptions options;
    options.num_ps = 2;
    options.num_workers = 1;  // The strategy wants one; no closure runs.
    options.max_restarts = max_restarts;
    options.binary_path = PSFLOW_BINARY_PATH;
    absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    StrategyScope scope = strategy_->scope();
    w0_ = ok_value(create_variable(Tensor::from_vector<float>({1, 2, 3, 4}, {4}), {.name = "w0"}));
    w1_ = ok_value(create_variable(Tensor::from_vector<float>({10, 20}, {2}), {.name = "w1"}));
    OptimizerConfig sgd;
    sgd.kind = OptimizerConfig::Kind::kSgd;
    optimizer_ = ok_value(Optimizer::create(sgd, 0.5));
    Checkpoint checkpoint = ok_value(Checkpoint::create({{"w0", w0_}, {"w1", w1_}}, *optimizer_));
    manager_ = ok_value(CheckpointManager::create(checkpoint, dir_ + "/ckpts", 3));
  }

  void TearDown() override {
    if (cluster_ != nullptr) cluster_->stop();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // One SGD step with gradient 1 everywhere: every value falls by 0.5.
  absl::Status step() const {
    return optimizer_->apply_gradients({{Tensor::from_vector<float>({1, 1, 1, 1}, {4}), w0_},
                                        {Tensor::from_vector<float>({1, 1}, {2}), w1_}});
  }

  int64_t iterations() const {
    return ok_value(optimizer_->iterations().read_value()).scalar_value<int64_t>();
  }

  // Kills ps 1 and waits for the cluster to start it again.
  void kill_ps1_and_wait_for_its_restart() {
    ASSERT_TRUE(cluster_->signal_task("ps", 1, SIGKILL).ok());
    ASSERT_TRUE(cluster_->wait_for_restart("ps", 1, 1, absl::Seconds(30)).ok());
  }

  std::string dir_;
  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  ShardedVariable w0_, w1_;
  std::optional<Optimizer> optimizer_;
  std::optional<CheckpointManager> manager_;
};

TEST_F(PsRecoveryTest, EveryPsGoesBackToTheLatestCheckpointAndTrainingGoesOn) {
  start(/*max_restarts=*/3);
  const std::string log = dir_ + ".log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  PsRecoveryOptions options;
  options.timeout = absl::Seconds(60);
  options.out = out;
  absl::StatusOr<PsRecovery> recovery =
      PsRecovery::create(strategy_->cluster_spec(), *manager_, options);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  // There was no checkpoint: create() saved one at step 0.
  EXPECT_THAT(manager_->checkpoints(), ElementsAre(HasSubstr("ckpt-0")));

  ASSERT_TRUE(step().ok());
  ASSERT_TRUE(step().ok());
  const std::string saved = ok_value(manager_->save());
  // A third step the checkpoint does not have: ps 0 will hold it when ps 1
  // is lost, and must give it up.
  ASSERT_TRUE(step().ok());
  ASSERT_EQ(iterations(), 3);

  kill_ps1_and_wait_for_its_restart();
  const absl::Status error = step();
  ASSERT_FALSE(error.ok());

  absl::StatusOr<PsRecovery::Restored> restored = recovery->recover(error);
  std::fclose(out);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_THAT(restored->restarted, ElementsAre(kPs1));
  EXPECT_EQ(restored->checkpoint, saved);
  EXPECT_EQ(restored->iterations, 2);
  EXPECT_EQ(recovery->recoveries(), 1);
  // Both ps hold the values of step 2, including the survivor.
  EXPECT_EQ(ok_value(w0_.read_value()), Tensor::from_vector<float>({0, 1, 2, 3}, {4}));
  EXPECT_EQ(ok_value(w1_.read_value()), Tensor::from_vector<float>({9, 19}, {2}));
  EXPECT_EQ(iterations(), 2);

  ASSERT_TRUE(step().ok());
  EXPECT_EQ(iterations(), 3);
  EXPECT_EQ(ok_value(w1_.read_value()), Tensor::from_vector<float>({8.5f, 18.5f}, {2}));
  EXPECT_THAT(read_file(log), HasSubstr(absl::StrCat("ps recovery 1: ", kPs1, " restarted (")));
}

TEST_F(PsRecoveryTest, AnErrorThatIsNotAPsFaultComesBackUnchanged) {
  start(/*max_restarts=*/0);
  absl::StatusOr<PsRecovery> recovery = PsRecovery::create(strategy_->cluster_spec(), *manager_);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  ASSERT_TRUE(step().ok());
  const absl::Status error = absl::InvalidArgumentError("a bad batch");
  EXPECT_EQ(recovery->recover(error).status(), error);
  // Nothing was restored: the step after the checkpoint stays.
  EXPECT_EQ(iterations(), 1);
  EXPECT_EQ(ok_value(w0_.read_value()), Tensor::from_vector<float>({0.5f, 1.5f, 2.5f, 3.5f}, {4}));
  EXPECT_EQ(recovery->recoveries(), 0);
  EXPECT_EQ(recovery->num_ps_tasks(), 2);

  const absl::Status ok = recovery->recover(absl::OkStatus()).status();
  EXPECT_EQ(ok.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ok.message(), HasSubstr("it got OK"));
}

// A link cut past the keepalive: the step fails with UNAVAILABLE naming the
// ps, which comes back as the same process with its variables (and part of
// the failed step's updates). Every ps goes back to the checkpoint, as for a
// restart; an error naming no reachable-ps fault is returned unchanged.
TEST_F(PsRecoveryTest, APsThatWasUnreachableAndIsBackIsRestoredToo) {
  start(/*max_restarts=*/0);
  absl::StatusOr<PsRecovery> recovery = PsRecovery::create(strategy_->cluster_spec(), *manager_);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  ASSERT_TRUE(step().ok());
  const std::string saved = ok_value(manager_->save());
  ASSERT_TRUE(step().ok());
  ASSERT_EQ(iterations(), 2);

  // Errors that are not about reaching a monitored ps change nothing.
  const absl::Status not_reach = absl::InvalidArgumentError(absl::StrCat(kPs1, ": bad shape"));
  EXPECT_EQ(recovery->recover(not_reach).status(), not_reach);
  const absl::Status other_task =
      absl::UnavailableError("/job:ps/replica:0/task:12 (10.0.0.9:2222): failed to connect");
  EXPECT_EQ(recovery->recover(other_task).status(), other_task);
  EXPECT_EQ(iterations(), 2);

  const absl::Status cut = absl::UnavailableError(
      absl::StrCat(kPs1, " (10.77.0.3:2222): failed to connect to all addresses"));
  absl::StatusOr<PsRecovery::Restored> restored = recovery->recover(cut);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_TRUE(restored->restarted.empty());
  EXPECT_THAT(restored->unreachable, ElementsAre(kPs1));
  EXPECT_EQ(restored->checkpoint, saved);
  EXPECT_EQ(restored->iterations, 1);
  EXPECT_EQ(iterations(), 1);
  EXPECT_EQ(ok_value(w1_.read_value()), Tensor::from_vector<float>({9.5f, 19.5f}, {2}));
  EXPECT_EQ(recovery->recoveries(), 1);
}

TEST_F(PsRecoveryTest, APsThatStaysDownIsADeadlineNamingItAndTheError) {
  start(/*max_restarts=*/0);
  PsRecoveryOptions options;
  options.timeout = absl::Seconds(1);
  absl::StatusOr<PsRecovery> recovery =
      PsRecovery::create(strategy_->cluster_spec(), *manager_, options);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  ASSERT_TRUE(cluster_->signal_task("ps", 1, SIGKILL).ok());
  const absl::Status status =
      recovery->recover(absl::UnavailableError("the step lost its ps")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(status.message(), HasSubstr(kPs1));
  EXPECT_THAT(status.message(), HasSubstr("the step lost its ps"));
  EXPECT_EQ(recovery->recoveries(), 0);
}

TEST_F(PsRecoveryTest, APsLossBeyondMaxRecoveriesIsUnavailable) {
  start(/*max_restarts=*/3);
  PsRecoveryOptions options;
  options.max_recoveries = 0;
  absl::StatusOr<PsRecovery> recovery =
      PsRecovery::create(strategy_->cluster_spec(), *manager_, options);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  kill_ps1_and_wait_for_its_restart();
  const absl::Status status = recovery->recover(step()).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(status.message(), HasSubstr(absl::StrCat(kPs1, " restarted")));
  EXPECT_THAT(status.message(), HasSubstr("0 recoveries allowed are used up"));
}

// A restore that fails (here: a damaged checkpoint file) leaves the lost
// task unrestored; the next recover() restores it although nothing has
// restarted since.
TEST_F(PsRecoveryTest, ARestoreThatFailedIsDoneAgainByTheNextRecover) {
  start(/*max_restarts=*/3);
  absl::StatusOr<PsRecovery> recovery = PsRecovery::create(strategy_->cluster_spec(), *manager_);
  ASSERT_TRUE(recovery.ok()) << recovery.status();
  const std::string checkpoint = manager_->latest_checkpoint().value_or("");
  const std::string file = checkpoint + "/ps-1.safetensors";
  const std::string good = read_file(file);
  ASSERT_FALSE(good.empty());

  kill_ps1_and_wait_for_its_restart();
  const absl::Status error = step();
  ASSERT_FALSE(error.ok());
  std::string bad = good;
  bad[bad.size() - 1] ^= 0x5a;
  write_file(file, bad);
  const absl::Status failed = recovery->recover(error).status();
  EXPECT_FALSE(failed.ok());
  EXPECT_THAT(failed.message(), HasSubstr("ps-1.safetensors"));
  EXPECT_EQ(recovery->recoveries(), 0);

  write_file(file, good);
  absl::StatusOr<PsRecovery::Restored> restored = recovery->recover(error);
  ASSERT_TRUE(restored.ok()) << restored.status();
  EXPECT_THAT(restored->restarted, ElementsAre(kPs1));
  EXPECT_EQ(ok_value(w1_.read_value()), Tensor::from_vector<float>({10, 20}, {2}));
  EXPECT_EQ(iterations(), 0);
  ASSERT_TRUE(step().ok());
}

TEST(PsRecoveryOptionsTest, BadOptionsAndClustersWithoutPsAreRefusedByName) {
  // Options are checked before any task is contacted.
  const ClusterSpec spec({{"chief", {"127.0.0.1:1"}}, {"ps", {"127.0.0.1:2"}}});
  Checkpoint checkpoint =
      ok_value(Checkpoint::create({{"v", ok_value(create_variable(Tensor::scalar<float>(1)))}}));
  const std::string dir = ::testing::TempDir() + "/psflow_ps_recovery_options";
  CheckpointManager manager = ok_value(CheckpointManager::create(checkpoint, dir, 1));

  PsRecoveryOptions zero;
  zero.timeout = absl::ZeroDuration();
  absl::Status s = PsRecovery::create(spec, manager, zero).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("PsRecoveryOptions::timeout 0"));

  PsRecoveryOptions negative;
  negative.max_recoveries = -1;
  s = PsRecovery::create(spec, manager, negative).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("PsRecoveryOptions::max_recoveries -1"));

  s = PsRecovery::create(ClusterSpec({{"chief", {"127.0.0.1:1"}}}), manager).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("no"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace psflow::internal
