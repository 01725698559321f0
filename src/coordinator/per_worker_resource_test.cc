// Per-worker resources with in-process workers: one copy per worker, built
// once on first use, rebuilt after a worker loses its resources (a
// restart), typed access, and the errors users meet.
#include "psflow/per_worker_resource.h"

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/coordinator_test_util.h"
#include "coordinator/in_process_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/status_macros.h"
#include "psflow/worker_context.h"

namespace psflow::internal {
namespace {

using ::psflow::internal::testing::make_coordinator;
using ::testing::HasSubstr;

// What the test resource holds: who built it, with which args, and how
// often closures used it.
struct Counter {
  int64_t built_on = -1;
  int64_t start = 0;
  int64_t uses = 0;
};

absl::Mutex g_mu;
std::map<int, int> g_builds ABSL_GUARDED_BY(g_mu);  // Worker index -> builds.
std::atomic<int> g_failures_left{0};

PSFLOW_RESOURCE_FUNCTION(pwr_test_counter, ctx, args) {
  if (g_failures_left.fetch_sub(1) > 0) return absl::UnavailableError("no backend yet");
  {
    absl::MutexLock lock(&g_mu);
    ++g_builds[ctx.worker_index];
  }
  auto counter = std::make_shared<Counter>();
  counter->built_on = ctx.worker_index;
  counter->start = args.kind() == Structure::Kind::kInt ? args.int_value() : 0;
  return WorkerResource::of(std::move(counter));
}

PSFLOW_RESOURCE_FUNCTION(pwr_test_empty, ctx, args) { return WorkerResource(); }

// (running worker, worker that built the resource, start + uses so far).
PSFLOW_FUNCTION(pwr_test_use, ctx, args) {
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<Counter> c, ctx.resource<Counter>(args));
  ++c->uses;
  return Structure::tuple(
      {static_cast<int64_t>(ctx.worker_index()), c->built_on, c->start + c->uses});
}

// Asks for the resource as the wrong type.
PSFLOW_FUNCTION(pwr_test_wrong_type, ctx, args) {
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<std::string> s, ctx.resource<std::string>(args));
  return Structure(*s);
}

PSFLOW_FUNCTION(pwr_test_untyped, ctx, args) {
  PSFLOW_ASSIGN_OR_RETURN(WorkerResource r, ctx.resource(args));
  return Structure(r.get<Counter>() != nullptr);
}

class PerWorkerResourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::MutexLock lock(&g_mu);
    g_builds.clear();
    g_failures_left = 0;
  }
  static std::map<int, int> builds() {
    absl::MutexLock lock(&g_mu);
    return g_builds;
  }
};

TEST(WorkerResourceTest, TypedAccessChecksTheExactType) {
  WorkerResource empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_EQ(empty.type(), typeid(void));
  EXPECT_EQ(empty.get<int>(), nullptr);

  WorkerResource r = WorkerResource::make<std::string>("abc");
  EXPECT_FALSE(r.empty());
  EXPECT_EQ(r.type(), typeid(std::string));
  ASSERT_NE(r.get<std::string>(), nullptr);
  EXPECT_EQ(*r.get<std::string>(), "abc");
  EXPECT_NE(r.get<const std::string>(), nullptr);
  EXPECT_EQ(r.get<int>(), nullptr);
  // Copies share the object.
  WorkerResource copy = r;
  *copy.get<std::string>() += "d";
  EXPECT_EQ(*r.get<std::string>(), "abcd");
}

TEST_F(PerWorkerResourceTest, EachWorkerBuildsItsOwnCopyOnce) {
  constexpr int kWorkers = 3;
  auto c = make_coordinator(kWorkers);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource counter,
                              c->create_per_worker_resource("pwr_test_counter", 100));
  EXPECT_EQ(counter.resource_fn(), "pwr_test_counter");
  EXPECT_TRUE(PerWorkerResource::is_handle(counter.handle()));
  EXPECT_TRUE(builds().empty()) << "built before any closure asked for it";

  std::vector<RemoteValue> results;
  for (int i = 0; i < 60; ++i) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue r, c->schedule("pwr_test_use", counter));
    results.push_back(r);
  }
  ASSERT_TRUE(c->join().ok());
  std::map<int64_t, int64_t> last_use;
  for (const RemoteValue& r : results) {
    PSFLOW_ASSERT_OK_AND_ASSIGN(Structure v, r.fetch());
    // Each closure saw the copy its own worker built.
    EXPECT_EQ(v[0].int_value(), v[1].int_value());
    // A worker's uses count up from the args, one per closure, in order.
    int64_t& last = last_use.try_emplace(v[0].int_value(), 100).first->second;
    EXPECT_EQ(v[2].int_value(), last + 1);
    last = v[2].int_value();
  }
  int64_t total = 0;
  for (const auto& [worker, last] : last_use) total += last - 100;
  EXPECT_EQ(total, 60);
  for (const auto& [worker, count] : builds()) EXPECT_EQ(count, 1) << "worker " << worker;
  EXPECT_EQ(builds().size(), last_use.size());
}

TEST_F(PerWorkerResourceTest, EveryCreateMakesANewResource) {
  auto c = make_coordinator(1);
  ASSERT_NE(c, nullptr);
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource a,
                              c->create_per_worker_resource("pwr_test_counter", 0));
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource b,
                              c->create_per_worker_resource("pwr_test_counter", 50));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a1, c->schedule("pwr_test_use", a));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue b1, c->schedule("pwr_test_use", b));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a2, c->schedule("pwr_test_use", a));
  // A copy of the handle names the same resource.
  PerWorkerResource a_copy = a;
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue a3, c->schedule("pwr_test_use", a_copy.handle()));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ((*a1.fetch())[2].int_value(), 1);
  EXPECT_EQ((*b1.fetch())[2].int_value(), 51);
  EXPECT_EQ((*a2.fetch())[2].int_value(), 2);
  EXPECT_EQ((*a3.fetch())[2].int_value(), 3);
  EXPECT_EQ(builds().at(0), 2);
}

TEST_F(PerWorkerResourceTest, AWorkerThatLostItsResourcesRebuildsThem) {
  // A worker restart loses WorkerResources; clear() does the same in process.
  auto worker = std::make_unique<InProcessWorker>(0, FunctionRegistry::global());
  InProcessWorker* raw = worker.get();
  std::vector<std::unique_ptr<WorkerConnection>> workers;
  workers.push_back(std::move(worker));
  PSFLOW_ASSERT_OK_AND_ASSIGN(std::unique_ptr<ClusterCoordinator> c,
                              internal::create_coordinator(std::move(workers)));
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource r,
                              c->create_per_worker_resource("pwr_test_counter"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue first, c->schedule("pwr_test_use", r));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue second, c->schedule("pwr_test_use", r));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ((*second.fetch())[2].int_value(), 2);
  raw->resources().clear();  // The coordinator is idle: no closure uses it.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue after, c->schedule("pwr_test_use", r));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ((*after.fetch())[2].int_value(), 1);
  EXPECT_EQ(builds().at(0), 2);
}

TEST_F(PerWorkerResourceTest, AFailedBuildIsTriedAgainByTheNextUse) {
  auto c = make_coordinator(1);
  ASSERT_NE(c, nullptr);
  g_failures_left = 1;
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource r,
                              c->create_per_worker_resource("pwr_test_counter"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue failed, c->schedule("pwr_test_use", r));
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(joined.message(),
              HasSubstr("building per-worker resource 'pwr_test_counter' on worker 0: "
                        "no backend yet"));
  EXPECT_EQ(failed.fetch().status(), joined);
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue ok, c->schedule("pwr_test_use", r));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ((*ok.fetch())[2].int_value(), 1);
  EXPECT_EQ(builds().at(0), 1);
}

TEST_F(PerWorkerResourceTest, ErrorsNameTheResourceAndTheFix) {
  auto c = make_coordinator(1);
  ASSERT_NE(c, nullptr);
  const absl::StatusOr<PerWorkerResource> unknown =
      c->create_per_worker_resource("pwr_test_countr");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(unknown.status().message(), HasSubstr("Did you mean 'pwr_test_counter'?"));
  EXPECT_THAT(unknown.status().message(), HasSubstr("PSFLOW_RESOURCE_FUNCTION"));

  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource r,
                              c->create_per_worker_resource("pwr_test_counter"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue wrong, c->schedule("pwr_test_wrong_type", r));
  const absl::Status wrong_type = c->join();
  EXPECT_EQ(wrong_type.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(wrong_type.message(),
              HasSubstr("Per-worker resource 'pwr_test_counter' on worker 0"));
  EXPECT_EQ(wrong.fetch().status(), wrong_type);
  // Untyped access gives the object back.
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue untyped, c->schedule("pwr_test_untyped", r));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ(*untyped.fetch(), Structure(true));

  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue malformed, c->schedule("pwr_test_use", 3));
  const absl::Status bad_handle = c->join();
  EXPECT_EQ(bad_handle.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad_handle.message(), HasSubstr("Expected a per-worker resource"));

  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource empty,
                              c->create_per_worker_resource("pwr_test_empty"));
  PSFLOW_ASSERT_OK_AND_ASSIGN(RemoteValue e, c->schedule("pwr_test_untyped", empty));
  const absl::Status empty_error = c->join();
  EXPECT_EQ(empty_error.code(), absl::StatusCode::kInternal);
  EXPECT_THAT(empty_error.message(), HasSubstr("'pwr_test_empty'"));
}

TEST_F(PerWorkerResourceTest, ConcurrentFirstUsesBuildOnce) {
  WorkerResources resources;
  std::atomic<bool> cancelled{false};
  PSFLOW_ASSERT_OK_AND_ASSIGN(PerWorkerResource r, PerWorkerResource::create("pwr_test_counter"));
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<Counter>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      WorkerContext ctx(2, 1, resources, cancelled, 3);
      absl::StatusOr<std::shared_ptr<Counter>> c = ctx.resource<Counter>(r.handle());
      if (c.ok()) seen[t] = *c;
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& c : seen) {
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c, seen[0]);
    EXPECT_EQ(c->built_on, 2);
  }
  EXPECT_EQ(builds().at(2), 1);
}

}  // namespace
}  // namespace psflow::internal
