// The staggered worker start (TF's TF_COORDINATOR_SCHEDULE_START_DELAY and
// _MAX) on real worker processes: worker i takes its first closure only
// delay * i after the coordinator starts, capped by the maximum.
#include <memory>
#include <set>
#include <vector>

#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

class StartDelayTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;

  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = kWorkers;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  }

  // The workers that ran `n` steps of 20 ms each.
  std::set<int64_t> workers_running(ClusterCoordinator& coordinator, int n) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < n; ++i) {
      results.push_back(ok_value(coordinator.schedule("testing/worker_index_after", 0.02)));
    }
    EXPECT_TRUE(coordinator.join().ok());
    std::set<int64_t> workers;
    for (const RemoteValue& r : results) workers.insert(ok_value(r.fetch()).int_value());
    return workers;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
};

TEST_F(StartDelayTest, LaterWorkersWaitTheirDelay) {
  ClusterCoordinatorOptions options;
  // Far longer than the test: only worker 0 may take closures.
  options.schedule_start_delay = absl::Minutes(10);
  auto coordinator = ok_value(ClusterCoordinator::create(*strategy_, options));
  EXPECT_EQ(workers_running(*coordinator, 30), std::set<int64_t>({0}));
  // Destroying the coordinator cuts the waits short (the test would hang
  // for 20 minutes otherwise).
}

TEST_F(StartDelayTest, TheMaximumCapsTheDelay) {
  ClusterCoordinatorOptions options;
  options.schedule_start_delay = absl::Minutes(10);
  options.schedule_start_delay_max = absl::Milliseconds(50);
  auto coordinator = ok_value(ClusterCoordinator::create(*strategy_, options));
  // 60 steps of 20 ms: worker 0 alone would need 1.2 s; the others start
  // after 50 ms and take some.
  EXPECT_EQ(workers_running(*coordinator, 60), std::set<int64_t>({0, 1, 2}));
}

TEST_F(StartDelayTest, NegativeDelaysAreRefused) {
  ClusterCoordinatorOptions options;
  options.schedule_start_delay = absl::Seconds(-1);
  absl::StatusOr<std::unique_ptr<ClusterCoordinator>> coordinator =
      ClusterCoordinator::create(*strategy_, options);
  EXPECT_TRUE(absl::IsInvalidArgument(coordinator.status())) << coordinator.status();
}

}  // namespace
}  // namespace psflow::internal
