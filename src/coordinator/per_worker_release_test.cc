// Release of per-worker objects with in-process workers: the registry's
// leases (user handles and the closures that use them), batched release
// at join, and input errors for inputs that cannot be built.
#include <memory>
#include <vector>

#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/in_process_worker.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/per_worker.h"
#include "psflow/status_macros.h"
#include "worker/per_worker_objects.h"

namespace psflow::internal {
namespace {

PSFLOW_DATASET_FUNCTION(pwrel_test_range, ctx, args) { return Dataset::range(1000); }
PSFLOW_DATASET_FUNCTION(pwrel_test_broken, ctx, args) {
  return absl::DataLossError("pwrel_test_broken: the input files are damaged");
}
PSFLOW_FUNCTION(pwrel_test_next, ctx, args) { return ctx.next(args); }

class PerWorkerReleaseUnitTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 2;

  void SetUp() override {
    std::vector<std::unique_ptr<WorkerConnection>> connections;
    for (int i = 0; i < kWorkers; ++i) {
      auto worker = std::make_unique<InProcessWorker>(i, FunctionRegistry::global(), kWorkers);
      workers_.push_back(worker.get());
      connections.push_back(std::move(worker));
    }
    ClusterCoordinatorOptions options;
    options.per_worker_dispose_batch_size = 4;
    absl::StatusOr<std::unique_ptr<ClusterCoordinator>> c =
        create_coordinator(std::move(connections), options);
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = *std::move(c);
  }

  int64_t iterators() {
    int64_t n = 0;
    for (InProcessWorker* w : workers_) n += count_per_worker_objects(w->resources()).iterators;
    return n;
  }

  std::vector<InProcessWorker*> workers_;  // Owned by the coordinator.
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

TEST_F(PerWorkerReleaseUnitTest, IteratorsGoBackToZeroAfterEachJoin) {
  PerWorkerDataset dataset = *coordinator_->create_per_worker_dataset("pwrel_test_range");
  for (int round = 0; round < 30; ++round) {
    {
      PerWorkerIterator it = dataset.iter();
      for (int i = 0; i < 4; ++i) ASSERT_TRUE(coordinator_->schedule("pwrel_test_next", it).ok());
      ASSERT_TRUE(coordinator_->join().ok());
      EXPECT_GE(iterators(), 1);
    }
    ASSERT_TRUE(coordinator_->join().ok());
    EXPECT_EQ(iterators(), 0) << "round " << round;
  }
}

TEST_F(PerWorkerReleaseUnitTest, UnboundDatasetsAreNeverReleased) {
  // PerWorkerDataset::create is bound to no coordinator (documented).
  PerWorkerDataset unbound = *PerWorkerDataset::create("pwrel_test_range");
  {
    PerWorkerIterator it = unbound.iter();
    ASSERT_TRUE(coordinator_->schedule("pwrel_test_next", it).ok());
    ASSERT_TRUE(coordinator_->join().ok());
  }
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(iterators(), 1);
}

TEST_F(PerWorkerReleaseUnitTest, BrokenDatasetIsAnInputErrorWithItsCode) {
  PerWorkerIterator it = coordinator_->create_per_worker_dataset("pwrel_test_broken")->iter();
  absl::StatusOr<RemoteValue> r = coordinator_->schedule("pwrel_test_next", it);
  ASSERT_TRUE(r.ok());
  const absl::Status fetched = r->fetch().status();
  EXPECT_TRUE(is_closure_input_error(fetched)) << fetched;
  EXPECT_TRUE(absl::IsDataLoss(fetched)) << fetched;
  EXPECT_TRUE(is_closure_input_error(coordinator_->join()));
}

TEST(PerWorkerObjectsTest, ReleaseValidationAndLateReleases) {
  WorkerResources resources;
  (void)resources.get_or_create<int>(per_worker_iterator_key("a"));
  EXPECT_TRUE(absl::IsInvalidArgument(validate_per_worker_ids({"a", ""})));
  EXPECT_TRUE(absl::IsInvalidArgument(validate_per_worker_ids({std::string(257, 'x')})));
  EXPECT_TRUE(validate_per_worker_ids({"a", "unknown"}).ok());
  EXPECT_EQ(release_per_worker_objects(resources, {"a", "unknown"}), 1);
  EXPECT_EQ(count_per_worker_objects(resources).iterators, 0);
  EXPECT_TRUE(per_worker_released(resources, "a"));
  EXPECT_FALSE(per_worker_released(resources, "b"));
}

}  // namespace
}  // namespace psflow::internal
