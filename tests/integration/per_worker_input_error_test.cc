// Per-worker inputs that cannot be built, on real worker processes
// (LocalCluster: 1 ps, 2 workers): closures that use them fail with a
// closure input error (TF's ClosureInputError), keeping the input's code,
// distinguishable from a step's own failure; steps that use only healthy
// inputs succeed beside them, before and after the error is reported.
#include <memory>
#include <string>
#include <vector>

#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/remote_value.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

class PerWorkerInputErrorTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 2;

  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = kWorkers;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
    healthy_ =
        ok_value(coordinator_->create_per_worker_dataset(
                     "examples/range_by_worker", Structure::tuple({int64_t{1000}, int64_t{1}})))
            .iter();
  }

  // Steps over the healthy iterator: all succeed.
  void expect_healthy_steps_succeed(int n) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < n; ++i) {
      results.push_back(ok_value(coordinator_->schedule("examples/next_element", healthy_)));
    }
    absl::Status joined = coordinator_->join();
    ASSERT_TRUE(joined.ok()) << joined;
    for (const RemoteValue& r : results) EXPECT_TRUE(r.fetch().ok()) << r.fetch().status();
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
  PerWorkerIterator healthy_;
};

TEST_F(PerWorkerInputErrorTest, FailingDatasetFunctionIsAnInputError) {
  PerWorkerIterator broken =
      ok_value(coordinator_->create_per_worker_dataset("testing/failing_dataset")).iter();
  expect_healthy_steps_succeed(4);  // The broken input exists, unused.
  RemoteValue step = ok_value(coordinator_->schedule("examples/next_element", broken));
  absl::Status joined = coordinator_->join();
  EXPECT_TRUE(is_closure_input_error(joined)) << joined;
  EXPECT_TRUE(absl::IsInvalidArgument(joined)) << joined;  // The input's own code.
  EXPECT_NE(joined.message().find("testing/failing_dataset cannot be built"),
            std::string_view::npos)
      << joined;
  const absl::Status fetched = step.fetch().status();
  EXPECT_TRUE(is_closure_input_error(fetched)) << fetched;
  // Reported once; healthy inputs keep working.
  expect_healthy_steps_succeed(4);
}

TEST_F(PerWorkerInputErrorTest, FailingResourceFunctionIsAnInputError) {
  PerWorkerResource broken =
      ok_value(coordinator_->create_per_worker_resource("testing/failing_resource"));
  PerWorkerResource fine =
      ok_value(coordinator_->create_per_worker_resource("testing/worker_state"));
  RemoteValue good = ok_value(coordinator_->schedule("testing/use_resource", fine));
  EXPECT_TRUE(good.fetch().ok()) << good.fetch().status();
  RemoteValue step = ok_value(coordinator_->schedule("testing/use_resource", broken));
  const absl::Status fetched = step.fetch().status();
  EXPECT_TRUE(is_closure_input_error(fetched)) << fetched;
  EXPECT_TRUE(absl::IsFailedPrecondition(fetched)) << fetched;
  absl::Status joined = coordinator_->join();
  EXPECT_TRUE(is_closure_input_error(joined)) << joined;
  RemoteValue again = ok_value(coordinator_->schedule("testing/use_resource", fine));
  EXPECT_TRUE(again.fetch().ok()) << again.fetch().status();
  expect_healthy_steps_succeed(4);
}

TEST_F(PerWorkerInputErrorTest, DatasetFunctionOnlyOnTheCoordinatorIsAnInputError) {
  // Registered in this (coordinator) process only: the worker binaries do
  // not have it, as a function defined after the workers started.
  ASSERT_TRUE(
      DatasetRegistry::global()
          .register_dataset("testing/coordinator_only_dataset",
                            [](const DatasetContext&, const Structure&) -> absl::StatusOr<Dataset> {
                              return Dataset::range(10);
                            })
          .ok());
  PerWorkerIterator only_here =
      ok_value(coordinator_->create_per_worker_dataset("testing/coordinator_only_dataset")).iter();
  RemoteValue step = ok_value(coordinator_->schedule("examples/next_element", only_here));
  const absl::Status fetched = step.fetch().status();
  EXPECT_TRUE(is_closure_input_error(fetched)) << fetched;
  EXPECT_TRUE(absl::IsNotFound(fetched)) << fetched;
  EXPECT_NE(fetched.message().find("testing/coordinator_only_dataset"), std::string_view::npos)
      << fetched;
  EXPECT_TRUE(is_closure_input_error(coordinator_->join()));
  expect_healthy_steps_succeed(4);
}

TEST_F(PerWorkerInputErrorTest, StepErrorsAndEndOfDataAreNotInputErrors) {
  RemoteValue failed = ok_value(coordinator_->schedule("testing/fail", "the step's own error"));
  absl::Status joined = coordinator_->join();
  EXPECT_TRUE(absl::IsInvalidArgument(joined)) << joined;
  EXPECT_FALSE(is_closure_input_error(joined)) << joined;
  EXPECT_FALSE(is_closure_input_error(failed.fetch().status()));
  // Running out of data is the step's OUT_OF_RANGE, not an input error.
  PerWorkerIterator short_data =
      ok_value(coordinator_->create_per_worker_dataset("examples/range_by_worker",
                                                       Structure::tuple({int64_t{2}, int64_t{1}})))
          .iter();
  for (int i = 0; i < 3 * kWorkers; ++i) {
    if (!coordinator_->schedule("examples/next_element", short_data).ok()) break;
  }
  joined = coordinator_->join();
  EXPECT_TRUE(absl::IsOutOfRange(joined)) << joined;
  EXPECT_FALSE(is_closure_input_error(joined)) << joined;
}

}  // namespace
}  // namespace psflow::internal
