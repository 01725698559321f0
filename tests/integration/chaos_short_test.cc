// The short chaos run inside `make test` (the long ones: tests/fault,
// `make chaos`): training finishes while workers are killed, every step is
// applied exactly once, and accuracy stays at the no-fault level.
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "../fault/chaos_common.h"
#include "absl/strings/str_cat.h"
#include "base/test_util.h"
#include "gmock/gmock.h"
#include "nlohmann/json.hpp"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/strategy.h"
#include "psflow/variable.h"
#include "train/wide_deep.h"
#include "wide_deep_small.h"

namespace psflow::internal {
namespace {

using ::testing::HasSubstr;

TEST(ChaosShortTest, TrainingSurvivesWorkerKillsWithEveryStepAppliedOnce) {
  TrainOptions options;
  options.epochs = 1;
  options.batch_size = 128;
  testing::ChaosRun run = testing::train_while_killing_workers(options, absl::Milliseconds(700));
  ASSERT_TRUE(run.summary.ok()) << run.summary.status();
  EXPECT_GE(run.kills, 1) << "no worker was killed: the run proves nothing";
  const int64_t steps = 60000 / 128;
  EXPECT_EQ(run.summary->steps, steps);
  // Each step's update reached the ps exactly once, retries included.
  EXPECT_EQ(run.summary->optimizer_iterations, steps);
  // One fault-free epoch of this configuration reaches about 0.83.
  EXPECT_GT(run.summary->test_accuracy, 0.78);
}

// TF treats the loss of a ps as fatal; so does psflow by default: training
// stops with UNAVAILABLE naming the lost task (recovery from checkpoints is
// a rerun of the coordinator on the same run directory).
TEST(ChaosShortTest, LosingAPsStopsTrainingNamingIt) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = 2;
  cluster_options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  std::unique_ptr<LocalCluster> cluster = ok_value(LocalCluster::start(cluster_options));
  TrainOptions options;
  options.epochs = 5;
  options.batch_size = 256;
  options.out = nullptr;
  options.run_dir = ::testing::TempDir() + "/psflow-chaos-ps-loss";
  std::filesystem::remove_all(options.run_dir);
  absl::Notification done;
  std::thread killer([&] {
    // Once epoch 1's checkpoint exists, training is in epoch 2.
    const absl::Time deadline = absl::Now() + absl::Seconds(120);
    while (!std::filesystem::exists(options.run_dir + "/checkpoints/ckpt-234") &&
           absl::Now() < deadline && !done.HasBeenNotified()) {
      done.WaitForNotificationWithTimeout(absl::Milliseconds(10));
    }
    (void)cluster->signal_task("ps", 1, SIGKILL);
  });
  absl::StatusOr<TrainSummary> summary = train(cluster->cluster_spec(), options);
  done.Notify();
  killer.join();
  ASSERT_FALSE(summary.ok()) << "training finished although ps 1 was killed";
  EXPECT_TRUE(absl::IsUnavailable(summary.status()) || absl::IsDeadlineExceeded(summary.status()))
      << summary.status();
  EXPECT_NE(summary.status().message().find("/job:ps/replica:0/task:1"), std::string_view::npos)
      << summary.status();
}

// Beyond TF: with recovery on, losing a ps mid-epoch costs the steps since
// the last checkpoint, not the run. Every ps goes back to that checkpoint,
// the lost steps are trained again, and the end state is that of a run
// without the fault: every step applied exactly once.
TEST(ChaosShortTest, LosingAPsWithRecoveryRollsBackAndFinishes) {
  TrainOptions options;
  options.epochs = 2;
  options.batch_size = 256;
  options.run_dir = ::testing::TempDir() + "/psflow-chaos-ps-recovery";
  std::filesystem::remove_all(options.run_dir);
  const std::string log = options.run_dir + ".log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  options.out = out;
  const int64_t steps_per_epoch = 60000 / 256;
  // Killed 300 ms into epoch 2 (an epoch takes a few seconds here).
  testing::ChaosRun run = testing::train_while_killing_ps(
      options, testing::epoch_checkpoints(steps_per_epoch, 1, 1), absl::Milliseconds(300));
  std::fclose(out);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status();
  ASSERT_EQ(run.kills, 1);
  EXPECT_EQ(run.summary->ps_recoveries, 1);
  EXPECT_GE(run.summary->rolled_back_steps, 0);
  EXPECT_LT(run.summary->rolled_back_steps, steps_per_epoch);
  EXPECT_EQ(run.summary->steps, 2 * steps_per_epoch);
  EXPECT_EQ(run.summary->optimizer_iterations, 2 * steps_per_epoch);
  // Two fault-free epochs of this configuration reach about 0.85.
  EXPECT_GT(run.summary->test_accuracy, 0.80);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("ps recovery 1: /job:ps/replica:0/task:0 restarted"), std::string::npos)
      << text;
  EXPECT_NE(text.find(absl::StrCat(run.summary->rolled_back_steps,
                                   " completed steps rolled back, training again from epoch 2")),
            std::string::npos)
      << text;
}

// The same for the wide & deep recommendation model: its embedding tables
// (sharded over both ps) and dense layers are checkpointed every epoch, and
// a killed ps costs the steps since the last one.
TEST(ChaosShortTest, WideDeepWithRecoverySurvivesALostPs) {
  TrainOptions options = testing::small_wide_deep_run();
  options.run_dir = ::testing::TempDir() + "/psflow-chaos-wide-deep-recovery";
  std::filesystem::remove_all(options.run_dir);
  const std::string log = options.run_dir + ".log";
  std::FILE* out = std::fopen(log.c_str(), "w");
  ASSERT_NE(out, nullptr);
  options.out = out;
  const WideDeepOptions extra = testing::small_wide_deep_data();
  const int64_t steps_per_epoch = 30000 / 128;
  // Killed 200 ms into epoch 2 (an epoch takes about a second here).
  testing::ChaosRun run =
      testing::train_while_killing_ps(options, testing::epoch_checkpoints(steps_per_epoch, 1, 1),
                                      absl::Milliseconds(200), testing::wide_deep_train(extra));
  std::fclose(out);
  std::ifstream in(log);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(run.summary.ok()) << run.summary.status() << "\n" << text;
  ASSERT_EQ(run.kills, 1);
  EXPECT_EQ(run.summary->ps_recoveries, 1);
  EXPECT_LT(run.summary->rolled_back_steps, steps_per_epoch);
  EXPECT_EQ(run.summary->steps, 3 * steps_per_epoch);
  EXPECT_EQ(run.summary->optimizer_iterations, 3 * steps_per_epoch);
  EXPECT_NE(text.find("ps recovery 1: /job:ps/replica:0/task:0 restarted"), std::string::npos)
      << text;
  // The bound a trained model passes and an untrained one misses
  // (WideDeepTrainingTest): what was restored kept its training.
  std::ifstream summary_file(options.run_dir + "/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  EXPECT_GT(summary["test_auc"].get<double>(), 0.78) << summary.dump(2);
  EXPECT_EQ(summary["ps_recoveries"], 1);
}

// What counter_after_kills saw: the counter the closures incremented and
// how many workers were actually killed (with none, an exact counter
// proves nothing).
struct KilledCounter {
  int64_t counter = -1;
  int kills = 0;
};

// Kills the worker that `marker` names (the one mid-closure) every 400 ms,
// at most `kills` times, until `done`; returns how many it killed.
int kill_marked_workers(LocalCluster& cluster, const ShardedVariable& marker, int kills,
                        const absl::Notification& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  int restarts[2] = {0, 0};
  int killed = 0;
  for (int k = 0; k < kills; ++k) {
    // Pacing the faults: the wait ends early when the closures are done.
    if (done.WaitForNotificationWithTimeout(absl::Milliseconds(400))) break;
    absl::StatusOr<Tensor> m = marker.read_value();
    if (!m.ok() || m->scalar_value<int64_t>() < 0) continue;
    const int victim = static_cast<int>(m->scalar_value<int64_t>());
    if (!cluster.signal_task("worker", victim, SIGKILL).ok()) continue;
    ++killed;
    ++restarts[victim];
    while (!done.HasBeenNotified() && absl::Now() < deadline &&
           !cluster.wait_for_restart("worker", victim, restarts[victim], absl::Milliseconds(200))
                .ok()) {
    }
    if (absl::Now() >= deadline) break;  // No kill without the last restart.
  }
  return killed;
}

// Schedules `closures` closures of `function` (args: `first`, then
// `marker`'s handle, then 50 ms of work) on the chaos cluster `c` while
// kill_marked_workers kills at most `kills` workers mid-closure; every
// closure must succeed. Returns the kills.
int run_under_kills(testing::ChaosCluster& c, const std::string& function, Structure first,
                    const ShardedVariable& marker, int closures, int kills) {
  const RemoteStructure args =
      RemoteStructure::tuple({std::move(first), marker.handle().to_structure(), int64_t{50}});
  std::vector<RemoteValue> results;
  for (int i = 0; i < closures; ++i) {
    results.push_back(ok_value(c.coordinator->schedule(function, args)));
  }
  absl::Notification done;
  int killed = 0;
  std::thread killer([&] { killed = kill_marked_workers(*c.cluster, marker, kills, done); });
  const absl::Status joined = c.coordinator->join();
  done.Notify();
  killer.join();
  EXPECT_TRUE(joined.ok()) << joined;
  for (const RemoteValue& r : results) EXPECT_TRUE(r.fetch().ok()) << r.fetch().status();
  return killed;
}

// Runs `closures` closures of testing/increment_then_work (50 ms each) on
// 1 ps + 2 workers while killing a worker that is mid-closure every
// 400 ms (at most `kills` times).
KilledCounter counter_after_kills(bool exactly_once, int closures, int kills) {
  ClusterCoordinatorOptions coordinator_options;
  coordinator_options.exactly_once = exactly_once;
  coordinator_options.max_worker_failures_per_closure = 100;
  testing::ChaosCluster c = testing::start_chaos_cluster(100, coordinator_options);
  ShardedVariable counter, marker;
  {
    StrategyScope scope = c.strategy->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
    marker = ok_value(create_variable(Tensor::scalar<int64_t>(-1), {.name = "marker"}));
  }
  const int killed = run_under_kills(c, "testing/increment_then_work",
                                     counter.handle().to_structure(), marker, closures, kills);
  return {ok_value(counter.read_value()).scalar_value<int64_t>(), killed};
}

// Dynamic tables keep the exactly-once of dense variables: with workers
// killed after their closure's update, each row of the table moved by one
// SGD step per closure, no more.
TEST(ChaosShortTest, DynamicTableRowsMoveOncePerClosureUnderRepeatedKills) {
  constexpr int kClosures = 60;
  ClusterCoordinatorOptions coordinator_options;
  coordinator_options.max_worker_failures_per_closure = 100;
  testing::ChaosCluster c = testing::start_chaos_cluster(100, coordinator_options);
  DynamicEmbeddingOptions o;
  o.dim = 4;
  o.seed = 11;
  o.initializer = DynamicEmbeddingInitializer::kZeros;
  o.optimizer.kind = OptimizerConfig::Kind::kSgd;
  const DynamicEmbedding table =
      ok_value(DynamicEmbedding::get_variable(*c.strategy, "chaos_rows", o));
  ShardedVariable marker;
  {
    StrategyScope scope = c.strategy->scope();
    marker = ok_value(create_variable(Tensor::scalar<int64_t>(-1), {.name = "de_marker"}));
  }
  const int killed = run_under_kills(c, "testing/embedding_update_then_work", table.handle(),
                                     marker, kClosures, 4);
  EXPECT_GE(killed, 1) << "no worker was killed: the exact rows prove nothing";
  const Tensor rows = ok_value(table.lookup(Tensor::from_vector<int64_t>({1, 2, 3}, {3})));
  for (float v : rows.flat<float>()) EXPECT_EQ(v, -static_cast<float>(kClosures));
  const DynamicEmbeddingStats stats = ok_value(table.stats());
  EXPECT_EQ(stats.rows, 3);
  EXPECT_EQ(stats.created, 3);
  // One ps task holds every key (the chaos cluster has one): one apply per
  // closure, retries skipped.
  EXPECT_EQ(stats.applies, kClosures);
}

// (e) of the chaos suite: a counter incremented once per closure equals the
// number of closures exactly while workers are killed mid-closure; the same
// faults with TF's at-least-once delivery add more (so the test can fail).
TEST(ChaosShortTest, CounterEqualsClosuresUnderRepeatedKills) {
  constexpr int kClosures = 120;
  const KilledCounter exactly_once = counter_after_kills(/*exactly_once=*/true, kClosures, 6);
  EXPECT_GE(exactly_once.kills, 1) << "no worker was killed: the exact count proves nothing";
  EXPECT_EQ(exactly_once.counter, kClosures);
  const KilledCounter at_least_once = counter_after_kills(/*exactly_once=*/false, kClosures, 6);
  EXPECT_GE(at_least_once.kills, 1) << "no worker was killed";
  EXPECT_GT(at_least_once.counter, kClosures);
}

// Without PSFLOW_ENABLE_FAULT_FUNCTIONS=1 in the workers' environment (a
// production worker) the poison function refuses to act: one call must not
// be able to kill a worker.
TEST(ChaosShortTest, TheWorkerKillingFunctionOnlyActsWhereFaultTestsAreEnabled) {
  ASSERT_EQ(::unsetenv("PSFLOW_ENABLE_FAULT_FUNCTIONS"), 0);
  testing::ChaosCluster c = testing::start_chaos_cluster(0);
  absl::StatusOr<RemoteValue> poison = c.coordinator->schedule("testing/kill_own_worker", {});
  ASSERT_TRUE(poison.ok()) << poison.status();
  const absl::Status fetched = poison->fetch().status();
  EXPECT_EQ(fetched.code(), absl::StatusCode::kFailedPrecondition) << fetched;
  EXPECT_THAT(std::string(fetched.message()), HasSubstr("PSFLOW_ENABLE_FAULT_FUNCTIONS=1"));
  EXPECT_EQ(c.coordinator->join(), fetched);  // an application error, reported once
  // Both workers are still up: a closure runs on each.
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(c.cluster->signal_task("worker", i, 0).ok()) << "worker " << i;
  }
  absl::StatusOr<RemoteValue> after = c.coordinator->schedule("testing/worker_index", {});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->fetch().ok());
}

// (f) of the chaos suite: a closure that kills every worker it runs on is
// failed after max_worker_failures_per_closure attempts instead of looping;
// the error is reported once and the restarted workers take work again.
TEST(ChaosShortTest, PoisonClosureIsFailedAfterTheRetryBound) {
  // The workers (children of this process) inherit it.
  ASSERT_EQ(::setenv("PSFLOW_ENABLE_FAULT_FUNCTIONS", "1", 1), 0);
  ClusterCoordinatorOptions options;
  options.max_worker_failures_per_closure = 3;
  testing::ChaosCluster c = testing::start_chaos_cluster(20, options);
  LocalCluster* cluster = c.cluster.get();
  ClusterCoordinator* coordinator = c.coordinator.get();
  absl::StatusOr<RemoteValue> poison = coordinator->schedule("testing/kill_own_worker", {});
  ASSERT_TRUE(poison.ok()) << poison.status();
  const absl::Status fetched = poison->fetch().status();
  EXPECT_TRUE(absl::IsUnavailable(fetched)) << fetched;
  EXPECT_NE(fetched.message().find("testing/kill_own_worker"), std::string_view::npos) << fetched;
  EXPECT_NE(fetched.message().find("3"), std::string_view::npos) << fetched;
  EXPECT_THAT(std::string(fetched.message()), HasSubstr("max_worker_failures_per_closure = 3"));
  EXPECT_EQ(coordinator->join(), fetched);  // reported once ...
  // ... then usable again: the restarted workers take closures.
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<RemoteValue> r = coordinator->schedule("testing/worker_index", {});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->fetch().ok()) << r->fetch().status();
  }
  EXPECT_TRUE(coordinator->join().ok());
  // One worker death per attempt, no more (the launcher counts a death
  // once it has seen it: wait, bounded, for the last one).
  int restarts = 0;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  do {
    restarts = 0;
    for (int w = 0; w < 2; ++w) {
      restarts += cluster->restart_count("worker", w).value_or(0);
      if (restarts < 3) (void)cluster->wait_for_restart("worker", w, 2, absl::Milliseconds(20));
    }
  } while (restarts < 3 && absl::Now() < deadline);
  EXPECT_EQ(restarts, 3);
}

// (b) of the chaos suite, short: a worker paused (SIGSTOP) mid-closure for
// longer than worker_timeout (10 s here; `make chaos` pauses one for 30 s
// under the default 20 s) loses its closure to the other worker; resumed
// (SIGCONT), its stale run adds nothing, and it takes work again without
// having been restarted.
TEST(ChaosShortTest, AWorkerPausedPastTheTimeoutLosesItsClosureAndComesBack) {
  ClusterCoordinatorOptions options;
  options.worker_timeout = absl::Seconds(10);
  testing::ChaosCluster c = testing::start_chaos_cluster(0, options);
  LocalCluster* cluster = c.cluster.get();
  ParameterServerStrategy* strategy = c.strategy.get();
  ClusterCoordinator* coordinator = c.coordinator.get();
  ShardedVariable counter, marker;
  {
    StrategyScope scope = strategy->scope();
    counter = ok_value(create_variable(Tensor::scalar<int64_t>(0), {.name = "counter"}));
    marker = ok_value(create_variable(Tensor::scalar<int64_t>(-1), {.name = "marker"}));
  }
  constexpr int kClosures = 60;
  const RemoteStructure args = RemoteStructure::tuple(
      {counter.handle().to_structure(), marker.handle().to_structure(), int64_t{50}});
  std::vector<RemoteValue> results;
  for (int i = 0; i < kClosures; ++i) {
    results.push_back(ok_value(coordinator->schedule("testing/increment_then_work", args)));
  }
  // Pause a worker that has started a closure.
  int victim = -1;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (int round = 0; round < 1000000 && victim < 0 && absl::Now() < deadline; ++round) {
    absl::StatusOr<Tensor> m = marker.read_value();
    ASSERT_TRUE(m.ok()) << m.status();
    victim = static_cast<int>(m->scalar_value<int64_t>());
  }
  ASSERT_GE(victim, 0);
  ASSERT_TRUE(cluster->signal_task("worker", victim, SIGSTOP).ok());
  const absl::Time paused_at = absl::Now();
  const absl::Status joined = coordinator->join();  // Waits out the timeout.
  const absl::Duration waited = absl::Now() - paused_at;
  ASSERT_TRUE(cluster->signal_task("worker", victim, SIGCONT).ok());
  ASSERT_TRUE(joined.ok()) << joined;
  for (const RemoteValue& r : results) EXPECT_TRUE(r.fetch().ok()) << r.fetch().status();
  EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), kClosures);
  // Given up after worker_timeout (10 s), not the default 20 s.
  EXPECT_LT(waited, absl::Seconds(18)) << "the paused worker was not given up in time";
  // Back: it answers a probe and takes closures again, same process. The
  // coordinator probes it on its own schedule, so closures go to the other
  // worker until then: bounded by time (and count), not by a count of quick
  // closures alone.
  bool took_work = false;
  const absl::Time back_deadline = absl::Now() + absl::Seconds(60);
  for (int round = 0; round < 1000000 && !took_work && absl::Now() < back_deadline; ++round) {
    absl::StatusOr<RemoteValue> r = coordinator->schedule("testing/worker_index", {});
    ASSERT_TRUE(r.ok()) << r.status();
    absl::StatusOr<Structure> v = r->fetch();
    ASSERT_TRUE(v.ok()) << v.status();
    took_work = (*v)[0].int_value() == victim;
  }
  EXPECT_TRUE(took_work);
  EXPECT_EQ(cluster->restart_count("worker", victim).value_or(-1), 0);
  // Its stale run, resumed, made no second update.
  EXPECT_EQ(ok_value(counter.read_value()).scalar_value<int64_t>(), kClosures);
}

// A worker process that replaced one the coordinator knew is told so: its
// restart salt is set (and per-worker datasets it rebuilds mix it into
// their seeds, so that they do not replay the old order), while the worker
// that never restarted keeps 0 and its fault-free reproducibility.
TEST(ChaosShortTest, ARestartedWorkerKnowsItReplacedTheOldProcess) {
  testing::ChaosCluster c = testing::start_chaos_cluster(1);
  LocalCluster* cluster = c.cluster.get();
  ClusterCoordinator* coordinator = c.coordinator.get();
  // Until both workers have answered once, unsalted.
  bool seen[2] = {false, false};
  bool salted[2] = {false, false};
  auto run_round = [&] {
    std::vector<RemoteValue> results;
    for (int i = 0; i < 20; ++i) {
      absl::StatusOr<RemoteValue> r = coordinator->schedule("testing/worker_recoveries", {});
      ASSERT_TRUE(r.ok()) << r.status();
      results.push_back(*r);
    }
    ASSERT_TRUE(coordinator->join().ok());
    for (const RemoteValue& r : results) {
      const Structure v = ok_value(r.fetch());
      const int64_t w = v[0].int_value();
      seen[w] = true;
      salted[w] = v[2].bool_value();
    }
  };
  // Each round runs 20 closures; the caps bound the loops by count as well
  // as by time.
  constexpr int kMaxRounds = 1000;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  for (int round = 0; round < kMaxRounds && !(seen[0] && seen[1]) && absl::Now() < deadline;
       ++round) {
    ASSERT_NO_FATAL_FAILURE(run_round());
  }
  ASSERT_TRUE(seen[0] && seen[1]);
  EXPECT_FALSE(salted[0]);
  EXPECT_FALSE(salted[1]);
  ASSERT_TRUE(cluster->signal_task("worker", 1, SIGKILL).ok());
  ASSERT_TRUE(cluster->wait_for_restart("worker", 1, 1, absl::Seconds(30)).ok());
  const absl::Time salted_deadline = absl::Now() + absl::Seconds(60);
  for (int round = 0; round < kMaxRounds && !salted[1] && absl::Now() < salted_deadline; ++round) {
    ASSERT_NO_FATAL_FAILURE(run_round());
  }
  EXPECT_TRUE(salted[1]);
  EXPECT_FALSE(salted[0]);
}

}  // namespace
}  // namespace psflow::internal
