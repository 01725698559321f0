// Per-worker datasets, iterators and resources on real worker processes
// (LocalCluster: 1 ps, 2 workers): the workers' objects are released once
// the coordinator drops every handle (batched, as TFF disposes values),
// over many rounds back to the baseline; closures keep what they use; a
// released handle is refused; the release RPC validates what it receives.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/remote_executor.h"
#include "psflow/strategy.h"
#include "psflow/v1/task.grpc.pb.h"
#include "rpc/channel.h"
#include "rpc/grpc_status.h"

namespace psflow::internal {
namespace {

class PerWorkerReleaseTest : public ::testing::Test {
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
    ClusterCoordinatorOptions coordinator_options;
    // Smaller than a round's releases, so that full batches go out between
    // joins too.
    coordinator_options.per_worker_dispose_batch_size = 3;
    coordinator_ = ok_value(ClusterCoordinator::create(*strategy_, coordinator_options));
    for (int i = 0; i < kWorkers; ++i) {
      workers_.push_back(ok_value(
          RemoteExecutor::create(ok_value(cluster_->cluster_spec().task_address("worker", i)))));
    }
  }

  // Iterators and resources held by all workers together.
  RemoteExecutorStats objects() {
    RemoteExecutorStats total;
    for (const auto& worker : workers_) {
      const RemoteExecutorStats s = ok_value(worker->stats());
      total.per_worker_iterators += s.per_worker_iterators;
      total.per_worker_resources += s.per_worker_resources;
    }
    return total;
  }

  std::unique_ptr<LocalCluster> cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
  std::vector<std::unique_ptr<RemoteExecutor>> workers_;
};

TEST_F(PerWorkerReleaseTest, IteratorsReturnToBaselineOverManyRounds) {
  const RemoteExecutorStats baseline = objects();
  PerWorkerDataset dataset = ok_value(coordinator_->create_per_worker_dataset(
      "examples/range_by_worker", Structure::tuple({int64_t{1000}, int64_t{1}})));
  constexpr int kRounds = 25;
  int64_t most_held = 0;
  for (int round = 0; round < kRounds; ++round) {
    // A fresh iterator each epoch, as a training loop makes one.
    PerWorkerIterator iterator = dataset.iter();
    std::vector<RemoteValue> results;
    for (int i = 0; i < 2 * kWorkers; ++i) {
      results.push_back(ok_value(coordinator_->schedule("examples/next_element", iterator)));
    }
    ASSERT_TRUE(coordinator_->join().ok()) << "round " << round;
    for (const RemoteValue& r : results) ASSERT_TRUE(r.fetch().ok());
    // The live iterator is held (at least on the workers that ran a step),
    // and the released ones do not pile up.
    const int64_t held = objects().per_worker_iterators - baseline.per_worker_iterators;
    EXPECT_GE(held, 1) << "round " << round;
    EXPECT_LE(held, 2 * kWorkers) << "round " << round << ": iterators of earlier rounds kept";
    most_held = std::max(most_held, held);
  }
  // The last round's iterator went at the end of its scope; join sends it.
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(objects().per_worker_iterators, baseline.per_worker_iterators);
  EXPECT_GE(most_held, 1);
}

TEST_F(PerWorkerReleaseTest, ResourcesReturnToBaselineOverManyRounds) {
  const RemoteExecutorStats baseline = objects();
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    PerWorkerResource resource =
        ok_value(coordinator_->create_per_worker_resource("testing/worker_state"));
    for (int i = 0; i < 2 * kWorkers; ++i) {
      (void)ok_value(coordinator_->schedule("testing/use_resource", resource));
    }
    ASSERT_TRUE(coordinator_->join().ok()) << "round " << round;
    EXPECT_GE(objects().per_worker_resources - baseline.per_worker_resources, 1);
    EXPECT_LE(objects().per_worker_resources - baseline.per_worker_resources, 2 * kWorkers);
  }
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_EQ(objects().per_worker_resources, baseline.per_worker_resources);
}

TEST_F(PerWorkerReleaseTest, QueuedClosuresKeepTheirIteratorAfterTheHandleGoes) {
  const RemoteExecutorStats baseline = objects();
  std::vector<RemoteValue> results;
  {
    PerWorkerIterator iterator =
        ok_value(coordinator_->create_per_worker_dataset(
                     "examples/range_by_worker", Structure::tuple({int64_t{1000}, int64_t{1}})))
            .iter();
    for (int i = 0; i < 20; ++i) {
      results.push_back(ok_value(coordinator_->schedule("examples/next_element", iterator)));
    }
  }  // The last handle goes while its closures are queued or running.
  ASSERT_TRUE(coordinator_->join().ok());
  // Each worker read its own shard in order: no closure saw a fresh
  // (rebuilt) iterator, which would repeat the shard's first element.
  std::vector<std::vector<int64_t>> seen(kWorkers);
  for (const RemoteValue& r : results) {
    const Structure v = ok_value(r.fetch());
    seen[v[0].int_value()].push_back(v[1].tensor().flat<int64_t>()[0]);
  }
  for (int w = 0; w < kWorkers; ++w) {
    for (size_t i = 0; i < seen[w].size(); ++i) {
      EXPECT_EQ(seen[w][i], w + static_cast<int64_t>(i) * kWorkers) << "worker " << w;
    }
  }
  EXPECT_EQ(objects().per_worker_iterators, baseline.per_worker_iterators);
}

TEST_F(PerWorkerReleaseTest, ReleasedHandleIsRefused) {
  Structure kept_handle;
  {
    PerWorkerIterator iterator =
        ok_value(coordinator_->create_per_worker_dataset(
                     "examples/range_by_worker", Structure::tuple({int64_t{10}, int64_t{1}})))
            .iter();
    kept_handle = iterator.handle();
    (void)ok_value(coordinator_->schedule("examples/next_element", iterator));
    ASSERT_TRUE(coordinator_->join().ok());
  }
  ASSERT_TRUE(coordinator_->join().ok());
  absl::StatusOr<RemoteValue> late = coordinator_->schedule("examples/next_element", kept_handle);
  EXPECT_TRUE(absl::IsFailedPrecondition(late.status())) << late.status();
  EXPECT_NE(late.status().message().find("released"), std::string_view::npos) << late.status();
  // The coordinator stays usable.
  ASSERT_TRUE(coordinator_->join().ok());
}

TEST_F(PerWorkerReleaseTest, DestroyingTheCoordinatorReleasesItsObjects) {
  const RemoteExecutorStats baseline = objects();
  PerWorkerIterator iterator =
      ok_value(coordinator_->create_per_worker_dataset(
                   "examples/range_by_worker", Structure::tuple({int64_t{100}, int64_t{1}})))
          .iter();
  for (int i = 0; i < 4 * kWorkers; ++i) {
    (void)ok_value(coordinator_->schedule("examples/next_element", iterator));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  EXPECT_GT(objects().per_worker_iterators, baseline.per_worker_iterators);
  coordinator_.reset();  // The iterator handle outlives it.
  EXPECT_EQ(objects().per_worker_iterators, baseline.per_worker_iterators);
}

TEST_F(PerWorkerReleaseTest, DisposePerWorkerValidatesItsInput) {
  PerWorkerIterator iterator =
      ok_value(coordinator_->create_per_worker_dataset(
                   "examples/range_by_worker", Structure::tuple({int64_t{100}, int64_t{1}})))
          .iter();
  for (int i = 0; i < 4 * kWorkers; ++i) {
    (void)ok_value(coordinator_->schedule("examples/next_element", iterator));
  }
  ASSERT_TRUE(coordinator_->join().ok());
  const RemoteExecutorStats before = objects();
  ASSERT_GT(before.per_worker_iterators, 0);
  const std::string id = iterator.handle()["psflow_per_worker_iterator"].string_value();
  auto stub = v1::ExecutorService::NewStub(
      create_channel(ok_value(cluster_->cluster_spec().task_address("worker", 0))));
  const auto dispose = [&](const std::vector<std::string>& ids) {
    grpc::ClientContext context;
    configure_context(context, absl::Now() + absl::Seconds(30));
    v1::DisposePerWorkerRequest request;
    for (const std::string& i : ids) request.add_ids(i);
    v1::DisposePerWorkerResponse response;
    return from_grpc_status(stub->DisposePerWorker(&context, request, &response));
  };
  // A bad id anywhere refuses the whole request: the good id is kept.
  absl::Status empty_id = dispose({id, ""});
  EXPECT_TRUE(absl::IsInvalidArgument(empty_id)) << empty_id;
  absl::Status long_id = dispose({id, std::string(300, 'x')});
  EXPECT_TRUE(absl::IsInvalidArgument(long_id)) << long_id;
  absl::Status too_many = dispose(std::vector<std::string>(100001, "x"));
  EXPECT_TRUE(absl::IsInvalidArgument(too_many)) << too_many;
  EXPECT_EQ(objects().per_worker_iterators, before.per_worker_iterators);
  // Unknown ids are late releases: fine. The worker is still up and its
  // iterator still usable.
  EXPECT_TRUE(dispose({"no-such-id"}).ok());
  EXPECT_EQ(objects().per_worker_iterators, before.per_worker_iterators);
  for (int i = 0; i < 2 * kWorkers; ++i) {
    (void)ok_value(coordinator_->schedule("examples/next_element", iterator));
  }
  EXPECT_TRUE(coordinator_->join().ok());
}

}  // namespace
}  // namespace psflow::internal
