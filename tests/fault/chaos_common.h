// Fault injection for the chaos tests: training on a real local cluster
// while a killer thread SIGKILLs worker tasks (restarted by the launcher).
#ifndef PSFLOW_TESTS_FAULT_CHAOS_COMMON_H_
#define PSFLOW_TESTS_FAULT_CHAOS_COMMON_H_

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/local_cluster.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/step_observer.h"
#include "train/trainer.h"
#include "train/wide_deep.h"

namespace psflow::internal::testing {

struct ChaosRun {
  absl::StatusOr<TrainSummary> summary;
  int kills = 0;
};

// Counts the steps completed across epochs, for a killer thread to read.
class StepCounter final : public StepObserver {
 public:
  void on_steps(int64_t done, double /*mean_loss*/) override {
    // `done` restarts with each epoch.
    total_.fetch_add(done > last_ ? done - last_ : done);
    last_ = done;
  }
  int64_t total() const { return total_.load(); }

 private:
  int64_t last_ = 0;  // The training thread's only.
  std::atomic<int64_t> total_{0};
};

// Trains `options` on 2 ps + 2 workers while killing worker (k % 2) every
// `interval`, and only once `min_steps_between_kills` steps completed since
// the previous kill; workers are restarted by the launcher (ps tasks are
// never killed here). The step condition keeps the schedule meaningful on a
// slow build (sanitizers): without it a step slower than `interval` could
// be killed on every worker it is retried on, which the coordinator rightly
// reports as a closure that kills workers.
inline ChaosRun train_while_killing_workers(TrainOptions options, absl::Duration interval,
                                            int64_t min_steps_between_kills = 5) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = 2;
  cluster_options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  cluster_options.max_restarts = 1000;
  cluster_options.restart_backoff = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(cluster_options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {cluster.status(), 0};
  StepCounter steps;
  options.step_observer = &steps;
  absl::Notification done;
  std::atomic<int> kills{0};
  std::thread killer([&] {
    // Pacing the faults, not synchronising: every wait ends early when
    // training is over. Workers are killed in turn, each only once it is
    // back from its previous death, so that one of them always serves.
    int restarts[2] = {0, 0};
    int64_t steps_at_last_kill = 0;
    while (!done.WaitForNotificationWithTimeout(interval)) {
      while (steps.total() - steps_at_last_kill < min_steps_between_kills &&
             !done.WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
      }
      if (done.HasBeenNotified()) break;
      const int victim = kills.load() % 2;
      if (!(*cluster)->signal_task("worker", victim, SIGKILL).ok()) continue;
      steps_at_last_kill = steps.total();
      ++kills;
      ++restarts[victim];
      while (!done.HasBeenNotified() &&
             !(*cluster)
                  ->wait_for_restart("worker", victim, restarts[victim], absl::Milliseconds(200))
                  .ok()) {
      }
    }
  });
  options.out = nullptr;
  ChaosRun run{train((*cluster)->cluster_spec(), options), 0};
  done.Notify();
  killer.join();
  run.kills = kills.load();
  return run;
}

// A training run on a cluster: train, or a model's of its own.
using TrainFunction =
    std::function<absl::StatusOr<TrainSummary>(const ClusterSpec&, const TrainOptions&)>;

// train_model of a WideDeepModel with `extra`, as a TrainFunction.
inline TrainFunction wide_deep_train(WideDeepOptions extra = {}) {
  return [extra = std::move(extra)](const ClusterSpec& spec,
                                    const TrainOptions& o) -> absl::StatusOr<TrainSummary> {
    WideDeepModel model(extra);
    return train_model(spec, o, model);
  };
}

// The names of the checkpoints written at the end of epochs `first_epoch`
// to `last_epoch` (both included): "ckpt-<k * steps_per_epoch>".
inline std::vector<std::string> epoch_checkpoints(int64_t steps_per_epoch, int first_epoch,
                                                  int last_epoch) {
  std::vector<std::string> names;
  for (int k = first_epoch; k <= last_epoch; ++k) {
    names.push_back("ckpt-" + std::to_string(k * steps_per_epoch));
  }
  return names;
}

// Trains `options` (ps recovery on; run_dir must be set) with `train` on 2
// ps + 2 workers and kills ps (k % 2) once the k-th name of
// `after_checkpoints` exists in <run_dir>/checkpoints and `delay` more has
// passed (so that some steps complete after that checkpoint and are rolled
// back); the launcher restarts it.
inline ChaosRun train_while_killing_ps(TrainOptions options,
                                       std::vector<std::string> after_checkpoints,
                                       absl::Duration delay,
                                       const TrainFunction& train_run = train) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = 2;
  cluster_options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  cluster_options.max_restarts = 100;
  cluster_options.restart_backoff = absl::Milliseconds(50);
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(cluster_options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {cluster.status(), 0};
  options.ps_recovery = true;
  absl::Notification done;
  std::atomic<int> kills{0};
  std::thread killer([&] {
    const absl::Time deadline = absl::Now() + absl::Seconds(600);
    int restarts[2] = {0, 0};
    for (const std::string& name : after_checkpoints) {
      const std::string path = options.run_dir + "/checkpoints/" + name;
      while (!std::filesystem::exists(path) && absl::Now() < deadline &&
             !done.WaitForNotificationWithTimeout(absl::Milliseconds(10))) {
      }
      // Never kill without the checkpoint the kill is meant to follow.
      if (!std::filesystem::exists(path)) return;
      if (done.WaitForNotificationWithTimeout(delay)) return;
      const int victim = kills.load() % 2;
      if (!(*cluster)->signal_task("ps", victim, SIGKILL).ok()) return;
      ++kills;
      ++restarts[victim];
      while (!done.HasBeenNotified() && absl::Now() < deadline &&
             !(*cluster)
                  ->wait_for_restart("ps", victim, restarts[victim], absl::Milliseconds(200))
                  .ok()) {
      }
    }
  });
  ChaosRun run{train_run((*cluster)->cluster_spec(), options), 0};
  done.Notify();
  killer.join();
  run.kills = kills.load();
  return run;
}

// Trains `options` on 2 ps + 2 workers and SIGSTOPs worker 1 once
// `pause_after` has passed, for `pause_for`, then SIGCONTs it. The worker
// is never killed: `run.kills` counts the pauses (0 or 1) and
// `paused_worker_restarts` how often the launcher restarted it (expect 0).
struct PauseRun {
  ChaosRun run;
  int paused_worker_restarts = -1;
};
inline PauseRun train_while_pausing_a_worker(TrainOptions options, absl::Duration pause_after,
                                             absl::Duration pause_for) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = 2;
  cluster_options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  absl::StatusOr<std::unique_ptr<LocalCluster>> cluster = LocalCluster::start(cluster_options);
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return {{cluster.status(), 0}, -1};
  absl::Notification done;
  std::atomic<int> pauses{0};
  std::thread pauser([&] {
    if (done.WaitForNotificationWithTimeout(pause_after)) return;
    if (!(*cluster)->signal_task("worker", 1, SIGSTOP).ok()) return;
    ++pauses;
    // The pause ends after `pause_for` even when training ended first.
    (void)done.WaitForNotificationWithTimeout(pause_for);
    (void)(*cluster)->signal_task("worker", 1, SIGCONT);
  });
  PauseRun out;
  out.run.summary = train((*cluster)->cluster_spec(), options);
  done.Notify();
  pauser.join();
  out.run.kills = pauses.load();
  out.paused_worker_restarts = (*cluster)->restart_count("worker", 1).value_or(-1);
  return out;
}

// 1 ps + 2 workers that the launcher restarts up to `max_restarts` times
// (after 20 ms), with a strategy and a coordinator made with `options`:
// the short chaos tests' cluster.
struct ChaosCluster {
  std::unique_ptr<LocalCluster> cluster;
  std::unique_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<ClusterCoordinator> coordinator;
};
inline ChaosCluster start_chaos_cluster(int max_restarts, ClusterCoordinatorOptions options = {}) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 1;
  cluster_options.num_workers = 2;
  cluster_options.binary_path = PSFLOW_TESTING_BINARY_PATH;
  cluster_options.max_restarts = max_restarts;
  cluster_options.restart_backoff = absl::Milliseconds(20);
  ChaosCluster c;
  c.cluster = ok_value(LocalCluster::start(cluster_options));
  c.strategy = ok_value(ParameterServerStrategy::create(
      SimpleClusterResolver(c.cluster->cluster_spec(), "chief", 0)));
  c.coordinator = ok_value(ClusterCoordinator::create(*c.strategy, options));
  return c;
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_TESTS_FAULT_CHAOS_COMMON_H_
