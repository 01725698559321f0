// A lost ps is a ps failure, with TF's code, against real processes
// (LocalCluster, 1 ps + 1 worker): a ps that came back empty after a
// restart, and a ps that stays down, both give UNAVAILABLE naming the task,
// to the closures that use them (on the worker) and to the coordinator's
// own variable operations, so that callers can branch on the code as TF's
// do on UnavailableError. A variable that a ps holding others lacks stays
// NOT_FOUND: that is a caller's mistake, not a lost ps.
#include <signal.h>

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "rpc/channel.h"
#include "test_process.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

constexpr char kPs0[] = "/job:ps/replica:0/task:0";

class PsFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = 1;
    options.max_restarts = 1;  // ps 0 comes back once (empty), then stays down.
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
    StrategyScope scope = strategy_->scope();
    counter_ = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
  }

  void TearDown() override {
    coordinator_.reset();
    if (cluster_ != nullptr) cluster_->stop();
  }

  // The status of one scheduled examples/increment of counter_.
  absl::Status increment() const {
    absl::StatusOr<RemoteValue> r = coordinator_->schedule(
        "examples/increment", RemoteStructure::tuple({counter_.handle().to_structure()}));
    if (!r.ok()) return r.status();
    return r->fetch().status();
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
  ShardedVariable counter_;
};

TEST_F(PsFailureTest, APsThatCameBackEmptyOrStaysDownIsUnavailableNamingIt) {
  ASSERT_TRUE(increment().ok());
  ASSERT_TRUE(coordinator_->join().ok());

  // Killed and started again by the cluster: it holds nothing any more.
  ASSERT_TRUE(cluster_->signal_task("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(cluster_->wait_for_restart("ps", 0, 1, absl::Seconds(30)).ok());
  // The new process may not answer yet (wait_for_restart's contract); a
  // closure run before it listens would see "connection refused" instead
  // of the empty ps this case is about.
  const std::string ps0_address = ok_value(cluster_->cluster_spec().task_address("ps", 0));
  ASSERT_TRUE(wait_for_healthy(ps0_address, kPs0, absl::Now() + absl::Seconds(30)).ok());
  const absl::Status in_closure = increment();
  EXPECT_EQ(in_closure.code(), absl::StatusCode::kUnavailable) << in_closure;
  EXPECT_THAT(std::string(in_closure.message()), HasSubstr(kPs0));
  // The helpful message is kept: what happened and how to restore.
  EXPECT_THAT(std::string(in_closure.message()), HasSubstr("no variable named 'counter'"));
  EXPECT_THAT(std::string(in_closure.message()), HasSubstr("PsRecovery"));
  // join() reports the closure's error once, with the same code (TF's
  // join raises UnavailableError on a ps failure).
  const absl::Status joined = coordinator_->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnavailable) << joined;
  const absl::Status on_coordinator = counter_.read_value().status();
  EXPECT_EQ(on_coordinator.code(), absl::StatusCode::kUnavailable) << on_coordinator;
  EXPECT_THAT(std::string(on_coordinator.message()), HasSubstr(kPs0));

  // Killed for good (max_restarts is used up): down, likewise.
  const pid_t pid = ok_value(cluster_->pid("ps", 0));
  ASSERT_TRUE(cluster_->signal_task("ps", 0, SIGKILL).ok());
  ASSERT_TRUE(testing::wait_for_process_exit(pid, absl::Now() + absl::Seconds(30)));
  const absl::Status down = increment();
  EXPECT_EQ(down.code(), absl::StatusCode::kUnavailable) << down;
  EXPECT_THAT(std::string(down.message()), HasSubstr(kPs0));
  EXPECT_EQ(coordinator_->join().code(), absl::StatusCode::kUnavailable);
  const absl::Status down_on_coordinator = counter_.read_value().status();
  EXPECT_EQ(down_on_coordinator.code(), absl::StatusCode::kUnavailable) << down_on_coordinator;
  EXPECT_THAT(std::string(down_on_coordinator.message()), HasSubstr(kPs0));
}

TEST_F(PsFailureTest, AVariableMissingFromAPsThatHoldsOthersStaysNotFound) {
  ShardedVariable missing = ok_value(ShardedVariable::from_handle(
      VariableHandle{"m", DType::kInt64, {}, {{"ps", 0, "no_such_variable", {}, 0}}},
      strategy_->client_lookup()));
  const absl::Status status = missing.read_value().status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("holds 1 others"));
}

}  // namespace
}  // namespace psflow::internal
