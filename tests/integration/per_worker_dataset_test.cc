// Per-worker datasets on 5 real worker processes: each worker reads its own
// shard, chosen by its worker index inside the dataset function.
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/per_worker.h"
#include "psflow/strategy.h"

namespace psflow::internal {
namespace {

class PerWorkerDatasetTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 5;

  void SetUp() override {
    LocalClusterOptions options;
    options.num_ps = 1;
    options.num_workers = kWorkers;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    cluster_ = ok_value(LocalCluster::start(options));
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_));
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
};

TEST_F(PerWorkerDatasetTest, EachWorkerReadsTheShardOfItsIndex) {
  constexpr int64_t kElements = 100;
  PerWorkerDataset dataset = ok_value(coordinator_->create_per_worker_dataset(
      "examples/range_by_worker", Structure::tuple({kElements, int64_t{2}})));
  PerWorkerIterator iterator = dataset.iter();
  std::vector<RemoteValue> results;
  // Each worker holds 10 batches of 2: 10 closures cannot exhaust one.
  for (int i = 0; i < 10; ++i) {
    results.push_back(ok_value(coordinator_->schedule("examples/next_element", iterator)));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  std::set<int64_t> seen;
  for (const RemoteValue& r : results) {
    Structure v = ok_value(r.fetch());
    const int64_t worker = v[0].int_value();
    ASSERT_TRUE(worker >= 0 && worker < kWorkers);
    const Tensor& batch = v[1].tensor();
    ASSERT_EQ(batch.num_elements(), 2);
    for (int64_t x : batch.flat<int64_t>()) {
      EXPECT_EQ(x % kWorkers, worker) << "element " << x << " read on worker " << worker;
      EXPECT_TRUE(seen.insert(x).second) << "element " << x << " read twice";
    }
  }
  EXPECT_EQ(seen.size(), 20u);
}

TEST_F(PerWorkerDatasetTest, ExhaustedIteratorIsOutOfRange) {
  // 5 elements over 5 workers: one batch of 1 per worker, then the end.
  PerWorkerIterator iterator =
      ok_value(coordinator_->create_per_worker_dataset("examples/range_by_worker",
                                                       Structure::tuple({int64_t{5}, int64_t{1}})))
          .iter();
  // More reads than elements: some worker must run out.
  for (int i = 0; i < 6 * kWorkers; ++i) {
    if (!coordinator_->schedule("examples/next_element", iterator).ok()) break;
  }
  absl::Status joined = coordinator_->join();
  EXPECT_TRUE(absl::IsOutOfRange(joined)) << joined;
}

TEST_F(PerWorkerDatasetTest, UnseededShufflesDifferBetweenWorkers) {
  PerWorkerIterator iterator =
      ok_value(coordinator_->create_per_worker_dataset("examples/shuffled_range", int64_t{50}))
          .iter();
  std::map<int64_t, Tensor> first_batch;
  for (int round = 0; round < 20 && first_batch.size() < 2; ++round) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < kWorkers; ++i) {
      results.push_back(ok_value(coordinator_->schedule("examples/next_element", iterator)));
    }
    // A worker holds one batch (all 50 elements): a second read of the same
    // worker fails with OUT_OF_RANGE, which join reports; keep the others.
    (void)coordinator_->join();
    for (const RemoteValue& r : results) {
      absl::StatusOr<Structure> v = r.fetch();
      if (v.ok()) first_batch.emplace((*v)[0].int_value(), (*v)[1].tensor());
    }
    iterator =
        ok_value(coordinator_->create_per_worker_dataset("examples/shuffled_range", int64_t{50}))
            .iter();
  }
  ASSERT_GE(first_batch.size(), 2u);
  const Tensor& a = first_batch.begin()->second;
  const Tensor& b = std::next(first_batch.begin())->second;
  EXPECT_FALSE(a == b) << "two workers shuffled 50 elements identically";
}

TEST_F(PerWorkerDatasetTest, UnknownDatasetFunctionIsNamed) {
  absl::StatusOr<PerWorkerDataset> ds =
      coordinator_->create_per_worker_dataset("examples/range_by_wroker");
  EXPECT_TRUE(absl::IsNotFound(ds.status())) << ds.status();
  EXPECT_NE(ds.status().message().find("examples/range_by_worker"), std::string_view::npos);
}

}  // namespace
}  // namespace psflow::internal
