// A training program of your own on psflow's public API: linear regression
// on synthetic data, trained asynchronously by the workers of a local
// cluster, the weights sharded over two ps tasks and updated there by SGD,
// a checkpoint every --steps-per-checkpoint steps, and the run surviving a
// ps task that is killed midway (--kill-ps-at), where TensorFlow would stop.
//
//   build/examples/custom_training_loop --steps 600 --kill-ps-at 300
//
// Every process of the cluster runs this same binary (TF's "same binary for
// all tasks"): LocalCluster starts it as each ps and worker task, and main()
// first lets run_task_if_started_as_one() serve the task; only the
// coordinator goes on past it. Under Kubernetes or Slurm the same binary
// takes its role from TF_CONFIG instead (`<binary> server` for the tasks,
// and the coordinator with TFConfigClusterResolver).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/function_registry.h"
#include "psflow/local_cluster.h"
#include "psflow/main.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/ps_recovery.h"
#include "psflow/remote_value.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "psflow/worker_context.h"

namespace {

using namespace psflow;  // NOLINT: an example, kept short.

constexpr int kDim = 16;
constexpr int kBatch = 64;
constexpr double kLearningRate = 0.05;
constexpr float kTrueBias = 0.5f;

// The model the data comes from: y = x . w_true + 0.5 + noise.
float true_weight(int i) { return 0.25f * static_cast<float>(i % 5) - 0.5f; }

OptimizerConfig sgd() {
  OptimizerConfig config;
  config.kind = OptimizerConfig::Kind::kSgd;
  return config;
}

// One SGD step on a batch drawn from `seed`, run on a worker. Arguments:
// (w handle, b handle, iterations handle, seed). Returns the batch's mean
// squared error before the step.
PSFLOW_FUNCTION(linear_regression_step, ctx, args) {
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable w, ctx.variable(args[0]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable b, ctx.variable(args[1]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable iterations, ctx.variable(args[2]));
  // The coordinator's optimizer, rebuilt around its `iterations`.
  PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer,
                          Optimizer::create(sgd(), kLearningRate, {.iterations = iterations}));
  PSFLOW_ASSIGN_OR_RETURN(Tensor w_value, w.read_value());
  PSFLOW_ASSIGN_OR_RETURN(Tensor b_value, b.read_value());
  const float* weights = w_value.flat<float>().data();
  const float bias = b_value.scalar_value<float>();

  std::mt19937_64 rng(static_cast<uint64_t>(args[3].int_value()));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> dw(kDim, 0.0f);
  float db = 0.0f;
  double loss = 0.0;
  for (int example = 0; example < kBatch; ++example) {
    float x[kDim];
    float target = kTrueBias + 0.01f * normal(rng);
    float prediction = bias;
    for (int i = 0; i < kDim; ++i) {
      x[i] = normal(rng);
      target += x[i] * true_weight(i);
      prediction += x[i] * weights[i];
    }
    const float error = prediction - target;
    loss += static_cast<double>(error) * error;
    for (int i = 0; i < kDim; ++i) dw[i] += 2.0f * error * x[i] / kBatch;
    db += 2.0f * error / kBatch;
  }
  PSFLOW_RETURN_IF_ERROR(
      optimizer.apply_gradients({{Tensor::from_vector(dw, {kDim}), w}, {Tensor::scalar(db), b}}));
  return Structure(loss / kBatch);
}

struct Flags {
  int steps = 600;
  int steps_per_checkpoint = 100;
  int num_workers = 2;
  int kill_ps_at = -1;
  std::string checkpoint_dir;
};

// The coordinator: a local cluster of this binary, the model, and the
// training loop with checkpoints and ps recovery.
absl::Status train(const Flags& flags) {
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = flags.num_workers;
  cluster_options.max_restarts = 3;  // The launcher restarts a lost task.
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> cluster,
                          LocalCluster::start(cluster_options));

  PSFLOW_ASSIGN_OR_RETURN(Partitioner two_shards, fixed_shards_partitioner(2));
  PSFLOW_ASSIGN_OR_RETURN(
      std::unique_ptr<ParameterServerStrategy> strategy,
      ParameterServerStrategy::create(SimpleClusterResolver(cluster->cluster_spec(), "chief", 0),
                                      two_shards));
  ShardedVariable w, b;
  std::optional<Optimizer> optimizer;
  {
    StrategyScope scope = strategy->scope();
    PSFLOW_ASSIGN_OR_RETURN(w, create_variable(Tensor(DType::kFloat32, {kDim}), {.name = "w"}));
    PSFLOW_ASSIGN_OR_RETURN(b, create_variable(Tensor::scalar(0.0f), {.name = "b"}));
    PSFLOW_ASSIGN_OR_RETURN(optimizer, Optimizer::create(sgd(), kLearningRate));
  }
  std::printf("w: %zu parts on %s and %s; b on %s\n", w.num_parts(),
              w.variables()[0].device().c_str(), w.variables()[1].device().c_str(),
              b.variables()[0].device().c_str());

  PSFLOW_ASSIGN_OR_RETURN(Checkpoint checkpoint,
                          Checkpoint::create({{"w", w}, {"b", b}}, *optimizer));
  PSFLOW_ASSIGN_OR_RETURN(CheckpointManager manager,
                          CheckpointManager::create(checkpoint, flags.checkpoint_dir, 3));
  PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> resumed, manager.restore_or_initialize());
  int64_t step = 0;
  if (resumed.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(step, load_checkpoint_iterations(*resumed));
    std::printf("resumed from %s at step %lld\n", resumed->c_str(), static_cast<long long>(step));
  }
  PsRecoveryOptions recovery_options;
  recovery_options.out = stdout;
  PSFLOW_ASSIGN_OR_RETURN(PsRecovery recovery,
                          PsRecovery::create(strategy->cluster_spec(), manager, recovery_options));
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<ClusterCoordinator> coordinator,
                          ClusterCoordinator::create(*strategy));

  const absl::Time start = absl::Now();
  bool killed = false;
  while (step < flags.steps) {
    const int64_t end = std::min<int64_t>(step + flags.steps_per_checkpoint, flags.steps);
    std::vector<RemoteValue> losses;
    absl::Status status;
    for (int64_t s = step; s < end && status.ok(); ++s) {
      absl::StatusOr<RemoteValue> loss = coordinator->schedule(
          "linear_regression_step",
          RemoteStructure::tuple({w.handle().to_structure(), b.handle().to_structure(),
                                  optimizer->iterations().handle().to_structure(),
                                  static_cast<int64_t>(s)}));
      status = loss.status();
      if (loss.ok()) losses.push_back(*std::move(loss));
      if (!killed && s == flags.kill_ps_at) {
        std::printf("killing ps 1 at step %lld\n", static_cast<long long>(s));
        std::fflush(stdout);
        PSFLOW_RETURN_IF_ERROR(cluster->signal_task("ps", 1, SIGKILL));
        killed = true;
      }
    }
    if (status.ok()) status = coordinator->join();
    if (!status.ok()) {
      // A ps that restarted: every ps goes back to the latest checkpoint.
      // Anything else ends the run.
      PSFLOW_ASSIGN_OR_RETURN(PsRecovery::Restored restored, recovery.recover(status));
      step = restored.iterations.value_or(0);
      continue;
    }
    double sum = 0;
    for (const RemoteValue& loss : losses) {
      PSFLOW_ASSIGN_OR_RETURN(Structure value, loss.fetch());
      sum += value.float_value();
    }
    step = end;
    PSFLOW_ASSIGN_OR_RETURN(std::string saved, manager.save());
    std::printf("step %lld/%d  loss %.5f  (%s)\n", static_cast<long long>(step), flags.steps,
                sum / static_cast<double>(losses.size()), saved.c_str());
    std::fflush(stdout);
  }

  PSFLOW_ASSIGN_OR_RETURN(Tensor w_value, w.read_value());
  PSFLOW_ASSIGN_OR_RETURN(Tensor b_value, b.read_value());
  PSFLOW_ASSIGN_OR_RETURN(Tensor iterations, optimizer->iterations().read_value());
  double worst = std::abs(b_value.scalar_value<float>() - kTrueBias);
  for (int i = 0; i < kDim; ++i) {
    worst =
        std::max(worst, static_cast<double>(std::abs(w_value.flat<float>()[i] - true_weight(i))));
  }
  std::printf(
      "done: %lld optimizer steps in %.1f s, %d ps recoveries; largest parameter error %.4f\n",
      static_cast<long long>(iterations.scalar_value<int64_t>()),
      absl::ToDoubleSeconds(absl::Now() - start), recovery.recoveries(), worst);
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  // A ps or worker task of the cluster below: serve it and exit.
  if (std::optional<int> code = psflow::run_task_if_started_as_one(argc, argv)) return *code;

  Flags flags;
  CLI::App app("Linear regression on psflow: a training program of your own.");
  app.add_option("--steps", flags.steps, "Training steps (closures)")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--steps-per-checkpoint", flags.steps_per_checkpoint, "Steps between checkpoints")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--num-workers", flags.num_workers, "Worker tasks")->check(CLI::Range(1, 64));
  app.add_option("--kill-ps-at", flags.kill_ps_at,
                 "Kill ps task 1 when this step is scheduled, to watch the run recover");
  app.add_option("--checkpoint-dir", flags.checkpoint_dir,
                 "Where checkpoints go; a rerun resumes from them (default: a fresh directory)");
  CLI11_PARSE(app, argc, argv);
  if (flags.checkpoint_dir.empty()) {
    flags.checkpoint_dir =
        (std::filesystem::temp_directory_path() / absl::StrCat("psflow-example-", ::getpid()))
            .string();
    std::filesystem::remove_all(flags.checkpoint_dir);
  }
  const absl::Status status = train(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
