// The coordinator's scheduling semantics against real worker and ps
// processes (LocalCluster, 2 ps + 3 workers): what src/coordinator/
// *_test.cc show with in-process workers (empty join, a queue bound of 2,
// RemoteValue chaining, the application-error model), over gRPC.
//
// Closures are held on their workers by testing/hold, a gate made of ps
// variables (src/functions/examples.cc): the test waits (bounded) until a
// closure has arrived and opens the gate by assigning a variable, so
// nothing synchronises with sleeps.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "base/test_util.h"
#include "coordinator/coordinator_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/per_worker_resource.h"
#include "psflow/strategy.h"
#include "psflow/v1/task.grpc.pb.h"
#include "psflow/variable.h"
#include "rpc/channel.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

using psflow::internal::testing::kTestTimeout;  // coordinator/coordinator_test_util.h

// How long a test watches for something that must not happen (join staying
// blocked); never used to wait for something to happen. 100 ms here, not
// coordinator_test_util.h's testing::kNegativeCheck (50 ms, for in-process
// workers): real processes over gRPC get the longer watch.
constexpr absl::Duration kNegativeCheck = absl::Milliseconds(100);
constexpr absl::string_view kCancelled =
    "The corresponding function is cancelled. Please reschedule the function.";

int64_t read_int(const ShardedVariable& v) {
  return ok_value(v.read_value()).scalar_value<int64_t>();
}

// Polls `v` (one ps read per turn) until it equals `target`, for at most
// kTestTimeout; whether it did.
bool await_value(const ShardedVariable& v, int64_t target) {
  const absl::Time deadline = absl::Now() + kTestTimeout;
  while (absl::Now() < deadline) {
    absl::StatusOr<Tensor> t = v.read_value();
    if (t.ok() && t->scalar_value<int64_t>() == target) return true;
  }
  return false;
}

class CoordinatorSemanticsTest : public ::testing::Test {
 protected:
  static constexpr int kWorkers = 3;

  static void SetUpTestSuite() {
    LocalClusterOptions options;
    options.num_ps = 2;
    options.num_workers = kWorkers;
    options.binary_path = PSFLOW_TESTING_BINARY_PATH;
    auto cluster = LocalCluster::start(options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = cluster->release();
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(cluster_, nullptr);
    strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(cluster_->cluster_spec(), "chief", 0)));
  }

  // A coordinator over the first `num_workers` worker processes only (the
  // ps tasks are all there), so that a test controls which workers are busy.
  std::unique_ptr<ClusterCoordinator> coordinator(int num_workers,
                                                  ClusterCoordinatorOptions options = {}) {
    const ClusterSpec& full = cluster_->cluster_spec();
    std::map<std::string, ClusterSpec::Tasks> jobs = full.as_map();
    ClusterSpec::Tasks workers;
    for (int i = 0; i < num_workers; ++i) workers[i] = jobs.at("worker").at(i);
    jobs["worker"] = workers;
    subset_strategy_ = ok_value(ParameterServerStrategy::create(
        SimpleClusterResolver(ClusterSpec(std::move(jobs)), "chief", 0)));
    return ok_value(ClusterCoordinator::create(*subset_strategy_, options));
  }

  ShardedVariable int_variable(const std::string& name, int64_t value = 0) {
    StrategyScope scope = strategy_->scope();
    return ok_value(create_variable(Tensor::scalar<int64_t>(value), {.name = name}));
  }

  static LocalCluster* cluster_;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  std::unique_ptr<ParameterServerStrategy> subset_strategy_;
};

LocalCluster* CoordinatorSemanticsTest::cluster_ = nullptr;

// A gate of ps variables for testing/hold.
struct HoldGate {
  ShardedVariable arrived, gate, cancel_seen;
  // testing/hold's args: hold until opened, then return `value` (or fail
  // with `fail` when non-empty).
  Structure args(Structure value, const std::string& fail = "") const {
    Structure::Fields fields{{"arrived", arrived.handle().to_structure()},
                             {"gate", gate.handle().to_structure()},
                             {"cancel_seen", cancel_seen.handle().to_structure()},
                             {"value", std::move(value)}};
    if (!fail.empty()) fields["fail"] = fail;
    return Structure::dict(std::move(fields));
  }
  absl::Status open() const { return gate.assign(Tensor::scalar<int64_t>(1)); }
};

TEST_F(CoordinatorSemanticsTest, JoinOnAnEmptyQueueReturnsAtOnce) {
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_));
  const absl::Time start = absl::Now();
  EXPECT_TRUE(c->join().ok());
  EXPECT_TRUE(ok_value(c->done()));
  EXPECT_TRUE(c->join().ok());
  // "At once": no closure, no worker call; generous for a loaded machine.
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
}

TEST_F(CoordinatorSemanticsTest, QueueBoundTwoWithManySchedulesFromOneThread) {
  ClusterCoordinatorOptions options;
  options.max_queued_closures = 2;
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_, options));
  ShardedVariable counter = int_variable("bound_two_counter");
  const RemoteStructure increment_args = RemoteStructure::tuple({counter.handle().to_structure()});
  constexpr int kSchedules = 200;
  std::vector<RemoteValue> sums;
  std::vector<RemoteValue> increments;
  // schedule() blocks while 2 closures wait; the workers must drain the
  // queue for this thread to go on (a deadlock ends with the ctest timeout).
  for (int i = 0; i < kSchedules; ++i) {
    if (i % 4 == 0) {
      increments.push_back(ok_value(c->schedule("examples/increment", increment_args)));
    } else {
      sums.push_back(ok_value(c->schedule("testing/add", Structure::tuple({i, 1000}))));
    }
  }
  ASSERT_TRUE(c->join().ok());
  int expected = 0;
  for (int i = 0; i < kSchedules; ++i) {
    if (i % 4 == 0) continue;
    EXPECT_EQ(ok_value(sums[expected++].fetch()), Structure(int64_t{i + 1000})) << i;
  }
  for (const RemoteValue& r : increments) {
    const int64_t worker = ok_value(r.fetch()).int_value();
    EXPECT_TRUE(worker >= 0 && worker < kWorkers) << worker;
  }
  EXPECT_EQ(read_int(counter), kSchedules / 4);
  EXPECT_TRUE(ok_value(c->done()));
}

TEST_F(CoordinatorSemanticsTest, ChainedRemoteValueRunsAfterItsInputAndGetsItsValue) {
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_));
  HoldGate g{int_variable("chain_arrived"), int_variable("chain_gate"),
             int_variable("chain_cancel_seen")};
  RemoteValue first = ok_value(c->schedule("testing/hold", g.args(Structure(int64_t{5}))));
  ASSERT_TRUE(await_value(g.arrived, 1)) << "the first closure never started";
  RemoteValue dependent = ok_value(c->schedule("testing/add", RemoteStructure::tuple({first, 10})));
  RemoteValue nested = ok_value(c->schedule(
      "testing/echo",
      RemoteStructure::dict({{"a", dependent}, {"b", RemoteStructure::list({first, 1})}})));
  // The waiting closures hold no worker: independent work still runs.
  RemoteValue independent = ok_value(c->schedule("testing/add", Structure::tuple({1, 2})));
  ASSERT_TRUE(independent.wait(kTestTimeout));
  EXPECT_EQ(ok_value(independent.fetch()), Structure(int64_t{3}));
  EXPECT_FALSE(dependent.is_ready());
  EXPECT_FALSE(nested.is_ready());
  EXPECT_FALSE(ok_value(c->done()));

  ASSERT_TRUE(g.open().ok());
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ(ok_value(first.fetch()), Structure(int64_t{5}));
  EXPECT_EQ(ok_value(dependent.fetch()), Structure(int64_t{15}));
  EXPECT_EQ(ok_value(nested.fetch()),
            Structure::dict({{"a", int64_t{15}}, {"b", Structure::list({int64_t{5}, 1})}}));
}

TEST_F(CoordinatorSemanticsTest, LongChainWithQueueBoundTwo) {
  ClusterCoordinatorOptions options;
  options.max_queued_closures = 2;
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_, options));
  RemoteValue value = ok_value(c->schedule("testing/add", Structure::tuple({0, 1})));
  std::vector<RemoteValue> all{value};
  for (int i = 1; i < 100; ++i) {
    value = ok_value(c->schedule("testing/add", RemoteStructure::tuple({value, 1})));
    all.push_back(value);
  }
  ASSERT_TRUE(c->join().ok());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(ok_value(all[i].fetch()), Structure(static_cast<int64_t>(i + 1)));
  }
}

TEST_F(CoordinatorSemanticsTest, FailedInputGivesTheLaterClosureAnInputError) {
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_));
  HoldGate g{int_variable("input_arrived"), int_variable("input_gate"),
             int_variable("input_cancel_seen")};
  RemoteValue failing =
      ok_value(c->schedule("testing/hold", g.args(Structure(), "bad input step")));
  ASSERT_TRUE(await_value(g.arrived, 1));
  RemoteValue dependent =
      ok_value(c->schedule("testing/add", RemoteStructure::tuple({1, failing})));
  ASSERT_TRUE(g.open().ok());

  ASSERT_TRUE(dependent.wait(kTestTimeout));
  const absl::Status input_error = dependent.fetch().status();
  EXPECT_EQ(input_error.code(), absl::StatusCode::kInvalidArgument) << input_error;
  EXPECT_TRUE(is_closure_input_error(input_error)) << input_error;
  EXPECT_THAT(input_error.message(), HasSubstr("Input args[1] of function 'testing/add'"));
  EXPECT_THAT(input_error.message(), HasSubstr(absl::StrCat("closure ", failing.closure_id(),
                                                            " (function 'testing/hold') ended with "
                                                            "INVALID_ARGUMENT: bad input step")));
  // The first error is the input's own, reported once.
  const absl::Status joined = c->join();
  EXPECT_EQ(joined.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(joined.message(), "bad input step");
  EXPECT_FALSE(is_closure_input_error(joined));
  EXPECT_TRUE(c->join().ok());

  // An input that failed before the dependent was scheduled: the same.
  RemoteValue late = ok_value(c->schedule("testing/echo", RemoteStructure::dict({{"x", failing}})));
  const absl::Status late_joined = c->join();
  EXPECT_TRUE(is_closure_input_error(late_joined)) << late_joined;
  EXPECT_THAT(late_joined.message(), HasSubstr("Input args['x'] of function 'testing/echo'"));
  EXPECT_EQ(late.fetch().status(), late_joined);
  EXPECT_TRUE(c->join().ok());
}

// The error model exactly as TF states it, on 2 worker processes: worker A
// runs a long step, worker B a step that fails, two steps wait in the
// queue. The failure cancels the queued steps ("... Please reschedule"),
// the long step is asked to stop but finishes and keeps its value, join
// reports the error once and only after nothing runs, and then 3 new steps
// join cleanly.
TEST_F(CoordinatorSemanticsTest, ErrorModelWithRealWorkers) {
  for (int64_t bound : {int64_t{0}, int64_t{2}}) {
    SCOPED_TRACE(absl::StrCat("max_queued_closures = ", bound));
    ClusterCoordinatorOptions options;
    if (bound > 0) options.max_queued_closures = bound;
    std::unique_ptr<ClusterCoordinator> c = coordinator(2, options);
    const std::string tag = absl::StrCat("em", bound, "_");
    HoldGate long_gate{int_variable(tag + "long_arrived"), int_variable(tag + "long_gate"),
                       int_variable(tag + "long_cancel_seen")};
    HoldGate fail_gate{int_variable(tag + "fail_arrived"), int_variable(tag + "fail_gate"),
                       int_variable(tag + "fail_cancel_seen")};
    ShardedVariable steps = int_variable(tag + "steps");
    const RemoteStructure step_args = RemoteStructure::tuple({steps.handle().to_structure()});

    RemoteValue long_step =
        ok_value(c->schedule("testing/hold", long_gate.args(Structure("long done"))));
    ASSERT_TRUE(await_value(long_gate.arrived, 1)) << "the long step never started";
    RemoteValue failing =
        ok_value(c->schedule("testing/hold", fail_gate.args(Structure(), "step failed: NaN")));
    ASSERT_TRUE(await_value(fail_gate.arrived, 1)) << "the failing step never started";
    RemoteValue queued1 = ok_value(c->schedule("examples/increment", step_args));
    RemoteValue queued2 = ok_value(c->schedule("examples/increment", step_args));

    ASSERT_TRUE(fail_gate.open().ok());
    // The failure cancels the queued closures at once, while the long step
    // still runs.
    ASSERT_TRUE(queued1.wait(kTestTimeout));
    ASSERT_TRUE(queued2.wait(kTestTimeout));
    for (const RemoteValue& q : {queued1, queued2}) {
      EXPECT_EQ(q.fetch().status().code(), absl::StatusCode::kCancelled);
      EXPECT_EQ(q.fetch().status().message(), kCancelled);
    }
    EXPECT_FALSE(long_step.is_ready());
    // The long step was asked to stop (CancelFunction reached its worker).
    ASSERT_TRUE(await_value(long_gate.cancel_seen, 1));

    // join() reports only once nothing runs: it stays blocked on the long step.
    absl::Notification join_returned;
    absl::Status join_status;
    bool long_step_ready_at_join = false;
    std::thread joiner([&] {
      join_status = c->join();
      long_step_ready_at_join = long_step.is_ready();
      join_returned.Notify();
    });
    EXPECT_FALSE(join_returned.WaitForNotificationWithTimeout(kNegativeCheck));
    ASSERT_TRUE(long_gate.open().ok());
    const bool returned = join_returned.WaitForNotificationWithTimeout(kTestTimeout);
    joiner.join();  // Bounded: testing/hold gives up after 60 s.
    ASSERT_TRUE(returned);
    EXPECT_EQ(join_status.code(), absl::StatusCode::kInvalidArgument) << join_status;
    EXPECT_EQ(join_status.message(), "step failed: NaN");
    EXPECT_TRUE(long_step_ready_at_join);

    // The long step finished and its value is fetchable; the failing
    // closure's value is its error; the queued steps never ran.
    EXPECT_EQ(ok_value(long_step.fetch()), Structure("long done"));
    EXPECT_EQ(failing.fetch().status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(read_int(steps), 0);

    // Reported once; then 3 new steps join cleanly.
    EXPECT_TRUE(c->join().ok());
    EXPECT_TRUE(ok_value(c->done()));
    std::vector<RemoteValue> more;
    for (int i = 0; i < 3; ++i)
      more.push_back(ok_value(c->schedule("examples/increment", step_args)));
    EXPECT_TRUE(c->join().ok());
    for (const RemoteValue& r : more) EXPECT_TRUE(r.fetch().ok()) << r.fetch().status();
    EXPECT_EQ(read_int(steps), 3);
  }
}

// TF's create_per_worker_resource over worker processes: every worker
// builds its own copy of the resource (testing/worker_state), exactly once,
// the first time one of its closures asks; a second resource is a second
// copy per worker.
TEST_F(CoordinatorSemanticsTest, PerWorkerResourceIsBuiltOncePerWorker) {
  std::unique_ptr<ClusterCoordinator> c = ok_value(ClusterCoordinator::create(*strategy_));
  const PerWorkerResource state = ok_value(c->create_per_worker_resource("testing/worker_state"));
  // worker -> (build number, uses seen in order).
  std::map<int64_t, std::pair<int64_t, std::vector<int64_t>>> seen;
  for (int round = 0; round < 20 && seen.size() < static_cast<size_t>(kWorkers); ++round) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < 30; ++i) {
      results.push_back(ok_value(c->schedule("testing/use_resource", state)));
    }
    ASSERT_TRUE(c->join().ok());
    for (const RemoteValue& r : results) {
      const Structure v = ok_value(r.fetch());
      const int64_t worker = v[0].int_value();
      EXPECT_EQ(v[1].int_value(), worker) << "a closure saw another worker's copy";
      auto [it, inserted] = seen.try_emplace(worker, v[2].int_value(), std::vector<int64_t>());
      EXPECT_EQ(v[2].int_value(), it->second.first) << "worker " << worker << " built it twice";
      it->second.second.push_back(v[3].int_value());
    }
  }
  ASSERT_EQ(seen.size(), static_cast<size_t>(kWorkers)) << "some worker never ran a closure";
  for (auto& [worker, record] : seen) {
    // The first resource this worker process built.
    EXPECT_EQ(record.first, 1) << "worker " << worker;
    // One copy, used by every closure of this worker, one at a time
    // (results arrive in any order, so compare as a set).
    std::vector<int64_t> uses = record.second;
    std::sort(uses.begin(), uses.end());
    for (size_t i = 0; i < uses.size(); ++i) {
      EXPECT_EQ(uses[i], static_cast<int64_t>(i + 1)) << "worker " << worker;
    }
  }

  // Every create makes a new resource: a second copy on each worker.
  const PerWorkerResource other = ok_value(c->create_per_worker_resource("testing/worker_state"));
  std::map<int64_t, int64_t> other_builds;
  for (int round = 0; round < 20 && other_builds.size() < static_cast<size_t>(kWorkers); ++round) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < 30; ++i) {
      results.push_back(ok_value(c->schedule("testing/use_resource", other)));
    }
    ASSERT_TRUE(c->join().ok());
    for (const RemoteValue& r : results) {
      const Structure v = ok_value(r.fetch());
      other_builds[v[0].int_value()] = v[2].int_value();
    }
  }
  ASSERT_EQ(other_builds.size(), static_cast<size_t>(kWorkers));
  for (const auto& [worker, build] : other_builds) EXPECT_EQ(build, 2) << "worker " << worker;
}

// The result-cache counters of worker `index` (GetExecutorStats).
v1::GetExecutorStatsResponse worker_stats(const LocalCluster& cluster, int index) {
  auto stub = v1::ExecutorService::NewStub(
      create_channel(ok_value(cluster.cluster_spec().task_address("worker", index))));
  grpc::ClientContext context;
  configure_context(context, absl::Now() + absl::Seconds(30));
  v1::GetExecutorStatsResponse response;
  const grpc::Status status =
      stub->GetExecutorStats(&context, v1::GetExecutorStatsRequest(), &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response;
}

// Same-worker chaining: on one worker, every link of a chain finds its
// input in the worker's result cache and travels as a reference (counted
// as a hit); with the shortcut off, none does.
TEST_F(CoordinatorSemanticsTest, ChainOnOneWorkerTravelsByReference) {
  for (bool chaining : {true, false}) {
    SCOPED_TRACE(chaining ? "same_worker_chaining" : "values only");
    ClusterCoordinatorOptions options;
    options.same_worker_chaining = chaining;
    std::unique_ptr<ClusterCoordinator> c = coordinator(1, options);
    const int64_t hits_before = worker_stats(*cluster_, 0).result_ref_hits();
    constexpr int kLinks = 20;
    RemoteValue value = ok_value(c->schedule("testing/add", Structure::tuple({0, 1})));
    for (int i = 1; i < kLinks; ++i) {
      value = ok_value(c->schedule("testing/add",
                                   RemoteStructure::tuple({value, RemoteStructure(Structure(1))})));
    }
    // A nested reference, and one input used twice.
    RemoteValue nested = ok_value(c->schedule(
        "testing/echo", RemoteStructure::dict({{"v", RemoteStructure::list({value, 5, value})}})));
    ASSERT_TRUE(c->join().ok());
    EXPECT_EQ(ok_value(value.fetch()), Structure(int64_t{kLinks}));
    EXPECT_EQ(ok_value(nested.fetch()),
              Structure::dict({{"v", Structure::list({int64_t{kLinks}, 5, int64_t{kLinks}})}}));
    const int64_t hits = worker_stats(*cluster_, 0).result_ref_hits() - hits_before;
    EXPECT_EQ(hits, chaining ? (kLinks - 1) + 2 : 0);
  }
}

// A reference to a result the worker has evicted (more than its 1024
// kept results later) is answered "missing", and the coordinator resends
// the closure with the value: the user sees only the right result.
TEST_F(CoordinatorSemanticsTest, EvictedInputFallsBackToItsValue) {
  ClusterCoordinatorOptions options;
  options.max_in_flight_per_worker = 16;
  std::unique_ptr<ClusterCoordinator> c = coordinator(1, options);
  RemoteValue first = ok_value(c->schedule("testing/add", Structure::tuple({40, 2})));
  ASSERT_TRUE(c->join().ok());
  const v1::GetExecutorStatsResponse before = worker_stats(*cluster_, 0);
  EXPECT_GE(before.cached_results(), 1);
  EXPECT_GT(before.cached_result_bytes(), 0);
  for (int i = 0; i < 1100; ++i) ASSERT_TRUE(c->schedule("testing/echo", i).ok());
  ASSERT_TRUE(c->join().ok());
  EXPECT_LE(worker_stats(*cluster_, 0).cached_results(), 1024);

  RemoteValue dependent = ok_value(c->schedule("testing/add", RemoteStructure::tuple({first, 8})));
  // Then a fresh chain still goes by reference.
  RemoteValue again = ok_value(c->schedule("testing/add", RemoteStructure::tuple({dependent, 1})));
  ASSERT_TRUE(c->join().ok());
  EXPECT_EQ(ok_value(dependent.fetch()), Structure(int64_t{50}));
  EXPECT_EQ(ok_value(again.fetch()), Structure(int64_t{51}));
  const v1::GetExecutorStatsResponse after = worker_stats(*cluster_, 0);
  EXPECT_EQ(after.result_ref_misses() - before.result_ref_misses(), 1);
  EXPECT_EQ(after.result_ref_hits() - before.result_ref_hits(), 1);
}

}  // namespace
}  // namespace psflow::internal
