// A training program of your own on psflow's public API: linear regression
// on synthetic data, trained asynchronously by the workers of a cluster, the
// weights sharded over two ps tasks and updated there by SGD, each worker
// reading its own copy of a per-worker dataset, a checkpoint every
// --steps-per-checkpoint steps, and the run surviving a ps task that is
// killed midway (--kill-ps-at), where TensorFlow would stop.
// docs/custom_model.md walks through it.
//
//   build/examples/custom_training_loop --steps 600 --kill-ps-at 300
//   build/examples/custom_training_loop --tf-config-demo
//
// Every process of the cluster runs this same binary (TF's "same binary for
// all tasks"): started as `<binary> server` it is a ps or worker task, and
// main() first lets run_task_if_started_as_one() serve the task; only the
// coordinator goes on past it. Without TF_CONFIG the coordinator starts a
// LocalCluster of this binary; with a TF_CONFIG naming it "chief" it
// coordinates the tasks listed there (Kubernetes, Slurm, hosts of your
// own). --tf-config-demo shows that path on this machine: it starts the
// ps and worker tasks (`<binary> server`, each with its TF_CONFIG), runs
// this binary as their chief with its own TF_CONFIG, then stops the tasks
// and removes its temporary folder.
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/cluster_spec.h"
#include "psflow/dataset.h"
#include "psflow/function_registry.h"
#include "psflow/local_cluster.h"
#include "psflow/main.h"
#include "psflow/optimizer.h"
#include "psflow/partitioners.h"
#include "psflow/per_worker.h"
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
constexpr int64_t kDataSeed = 7;

// The model the data comes from: y = x . w_true + 0.5 + noise.
float true_weight(int i) { return 0.25f * static_cast<float>(i % 5) - 0.5f; }

OptimizerConfig sgd() {
  OptimizerConfig config;
  config.kind = OptimizerConfig::Kind::kSgd;
  return config;
}

// Each worker's own endless stream of examples (x, y), in batches of
// kBatch: TF's dataset_fn for create_per_worker_dataset. Runs on a worker,
// the first time one of its closures reads the iterator. Argument: the
// run's seed, mixed with the worker's index so that workers differ.
PSFLOW_DATASET_FUNCTION(regression_data, ctx, args) {
  const uint64_t seed = ctx.worker_seed(static_cast<uint64_t>(args.int_value()));
  Dataset examples = Dataset::from_generator([seed]() -> Dataset::Generator {
    return [rng = std::mt19937_64(seed),
            normal = std::normal_distribution<float>(
                0.0f, 1.0f)]() mutable -> absl::StatusOr<std::optional<Structure>> {
      std::vector<float> x(kDim);
      float y = kTrueBias + 0.01f * normal(rng);
      for (int i = 0; i < kDim; ++i) {
        x[i] = normal(rng);
        y += x[i] * true_weight(i);
      }
      return Structure::tuple({Tensor::from_vector(x, {kDim}), Tensor::scalar(y)});
    };
  });
  return examples.batch(kBatch, /*drop_remainder=*/true);
}

// One SGD step on the next batch of this worker's dataset, run on a worker.
// Arguments: (w handle, b handle, iterations handle, iterator handle).
// Returns the batch's mean squared error before the step.
PSFLOW_FUNCTION(linear_regression_step, ctx, args) {
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable w, ctx.variable(args[0]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable b, ctx.variable(args[1]));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable iterations, ctx.variable(args[2]));
  // The coordinator's optimizer, rebuilt around its `iterations`.
  PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer,
                          Optimizer::create(sgd(), kLearningRate, {.iterations = iterations}));
  PSFLOW_ASSIGN_OR_RETURN(Structure batch, ctx.next(args[3]));
  const float* x = batch[0].tensor().flat<float>().data();  // [kBatch, kDim]
  const float* y = batch[1].tensor().flat<float>().data();  // [kBatch]
  PSFLOW_ASSIGN_OR_RETURN(Tensor w_value, w.read_value());
  PSFLOW_ASSIGN_OR_RETURN(Tensor b_value, b.read_value());
  const float* weights = w_value.flat<float>().data();
  const float bias = b_value.scalar_value<float>();

  std::vector<float> dw(kDim, 0.0f);
  float db = 0.0f;
  double loss = 0.0;
  for (int example = 0; example < kBatch; ++example) {
    const float* xe = x + example * kDim;
    float prediction = bias;
    for (int i = 0; i < kDim; ++i) prediction += xe[i] * weights[i];
    const float error = prediction - y[example];
    loss += static_cast<double>(error) * error;
    for (int i = 0; i < kDim; ++i) dw[i] += 2.0f * error * xe[i] / kBatch;
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
  bool tf_config_demo = false;
  double demo_timeout_seconds = 300;
};

// The cluster this process coordinates.
struct Cluster {
  std::unique_ptr<LocalCluster> local;  // Null under TF_CONFIG: the tasks are not ours.
  std::unique_ptr<ParameterServerStrategy> strategy;
};

// With TF_CONFIG, the cluster it lists, whose chief this process must be;
// without, a LocalCluster of this binary. Either way the strategy shards
// every variable in two.
absl::StatusOr<Cluster> connect(const Flags& flags) {
  PSFLOW_ASSIGN_OR_RETURN(Partitioner two_shards, fixed_shards_partitioner(2));
  Cluster cluster;
  TFConfigClusterResolver resolver;
  if (resolver.is_configured()) {
    PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> task_type, resolver.task_type());
    if (task_type != "chief") {
      return absl::InvalidArgumentError(absl::StrCat(
          "TF_CONFIG names this task '", task_type.value_or(""),
          "': run ps and worker tasks as `<program> server`, and this program as the chief"));
    }
    PSFLOW_ASSIGN_OR_RETURN(cluster.strategy,
                            ParameterServerStrategy::create(resolver, two_shards));
    std::printf("chief of the TF_CONFIG cluster: %d ps, %d workers\n",
                cluster.strategy->cluster_spec().num_tasks("ps"),
                cluster.strategy->cluster_spec().num_tasks("worker"));
    return cluster;
  }
  LocalClusterOptions cluster_options;
  cluster_options.num_ps = 2;
  cluster_options.num_workers = flags.num_workers;
  cluster_options.max_restarts = 3;  // The launcher restarts a lost task.
  PSFLOW_ASSIGN_OR_RETURN(cluster.local, LocalCluster::start(cluster_options));
  PSFLOW_ASSIGN_OR_RETURN(
      cluster.strategy,
      ParameterServerStrategy::create(
          SimpleClusterResolver(cluster.local->cluster_spec(), "chief", 0), two_shards));
  return cluster;
}

// The coordinator: the model, and the training loop with checkpoints and
// ps recovery. Fails when the loss did not fall.
absl::Status train(const Flags& flags) {
  PSFLOW_ASSIGN_OR_RETURN(Cluster cluster, connect(flags));
  if (flags.kill_ps_at >= 0 && cluster.local == nullptr) {
    return absl::InvalidArgumentError("--kill-ps-at needs the local cluster (no TF_CONFIG)");
  }
  ParameterServerStrategy& strategy = *cluster.strategy;
  ShardedVariable w, b;
  std::optional<Optimizer> optimizer;
  {
    StrategyScope scope = strategy.scope();
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
                          PsRecovery::create(strategy.cluster_spec(), manager, recovery_options));
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<ClusterCoordinator> coordinator,
                          ClusterCoordinator::create(strategy));
  PSFLOW_ASSIGN_OR_RETURN(PerWorkerDataset dataset,
                          coordinator->create_per_worker_dataset("regression_data", kDataSeed));
  const PerWorkerIterator iterator = dataset.iter();

  const absl::Time start = absl::Now();
  bool killed = false;
  std::optional<double> first_loss, last_loss;  // Of the first and last checkpoint interval.
  int intervals = 0;
  while (step < flags.steps) {
    const int64_t end = std::min<int64_t>(step + flags.steps_per_checkpoint, flags.steps);
    std::vector<RemoteValue> losses;
    absl::Status status;
    for (int64_t s = step; s < end && status.ok(); ++s) {
      absl::StatusOr<RemoteValue> loss = coordinator->schedule(
          "linear_regression_step",
          RemoteStructure::tuple({w.handle().to_structure(), b.handle().to_structure(),
                                  optimizer->iterations().handle().to_structure(),
                                  iterator.handle()}));
      status = loss.status();
      if (loss.ok()) losses.push_back(*std::move(loss));
      if (!killed && s == flags.kill_ps_at) {
        std::printf("killing ps 1 at step %lld\n", static_cast<long long>(s));
        std::fflush(stdout);
        PSFLOW_RETURN_IF_ERROR(cluster.local->signal_task("ps", 1, SIGKILL));
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
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Structure> values, coordinator->fetch(losses));
    double sum = 0;
    for (const Structure& value : values) sum += value.float_value();
    const double mean = sum / static_cast<double>(values.size());
    if (!first_loss.has_value()) first_loss = mean;
    last_loss = mean;
    ++intervals;
    step = end;
    PSFLOW_ASSIGN_OR_RETURN(std::string saved, manager.save());
    std::printf("step %lld/%d  loss %.5f  (%s)\n", static_cast<long long>(step), flags.steps, mean,
                saved.c_str());
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
  if (intervals >= 2) {
    if (!(*last_loss < *first_loss)) {
      return absl::InternalError(absl::StrCat("the loss did not fall: ", *first_loss, " at first, ",
                                              *last_loss, " at last"));
    }
    std::printf("loss fell from %.5f to %.5f\n", *first_loss, *last_loss);
  }
  std::printf(
      "done: %lld optimizer steps in %.1f s, %d ps recoveries; largest parameter error %.4f\n",
      static_cast<long long>(iterations.scalar_value<int64_t>()),
      absl::ToDoubleSeconds(absl::Now() - start), recovery.recoveries(), worst);
  return absl::OkStatus();
}

// ---- --tf-config-demo: this program as the chief of a TF_CONFIG cluster ----
//
// What a cluster manager does (Kubernetes' TFJob operator, a Slurm job
// script, you on each host), played on loopback: every task of the cluster
// gets its own TF_CONFIG; the ps and worker tasks run `<program> server`,
// the chief runs `<program>`. LocalCluster starts the ps and worker tasks
// exactly so, on free ports it reserves, and waits until each answers; the
// chief is a child process with its TF_CONFIG. At the end, on failure, on
// SIGINT or SIGTERM and after --demo-timeout, the tasks are stopped and the
// temporary folder (task logs, checkpoints) is removed.

// The TF_CONFIG of one task of `spec`.
std::string tf_config(const ClusterSpec& spec, const std::string& type, int index) {
  return absl::StrCat(R"({"cluster": )", spec.to_json(), R"(, "task": {"type": ")", type,
                      R"(", "index": )", index, "}}");
}

// A child process running this program as the chief. The destructor kills
// and reaps it if it still runs, so no return path leaves it behind; it also
// dies with this process (PR_SET_PDEATHSIG).
class ChiefProcess {
 public:
  // `argv` without the program, which is this executable.
  static absl::StatusOr<ChiefProcess> start(std::vector<std::string> argv,
                                            const std::string& tf_config_json) {
    std::error_code error;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
    if (error) return absl::InternalError(absl::StrCat("/proc/self/exe: ", error.message()));
    argv.insert(argv.begin(), self);
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      if (std::strncmp(*e, "TF_CONFIG=", 10) != 0) env.emplace_back(*e);
    }
    env.push_back("TF_CONFIG=" + tf_config_json);
    // Everything the child needs is built before fork(): after it, only
    // async-signal-safe calls until exec.
    std::vector<char*> args, envp;
    for (std::string& a : argv) args.push_back(a.data());
    for (std::string& e : env) envp.push_back(e.data());
    args.push_back(nullptr);
    envp.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", std::strerror(errno)));
    if (pid == 0) {
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);  // The demo blocked SIGINT and SIGTERM.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) _exit(127);  // The demo died before prctl.
      ::execve(args[0], args.data(), envp.data());
      _exit(127);
    }
    ChiefProcess chief;
    chief.pid_ = pid;
    chief.pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (chief.pidfd_ < 0) return absl::InternalError(absl::StrCat("pidfd_open: ", errno));
    return chief;
  }

  ChiefProcess() = default;
  ChiefProcess(ChiefProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)), pidfd_(std::exchange(other.pidfd_, -1)) {}
  ChiefProcess& operator=(ChiefProcess&&) = delete;
  ~ChiefProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }

  pid_t pid() const { return pid_; }

  // Waits until the chief exits (its exit code; 128+signal when killed) or
  // one of the signals `signal_fd` delivers arrives (128+signal, and the
  // chief is stopped) or `deadline` passes (DEADLINE_EXCEEDED, the chief
  // stopped).
  absl::StatusOr<int> wait(int signal_fd, absl::Time deadline) {
    for (;;) {
      pollfd fds[2] = {{pidfd_, POLLIN, 0}, {signal_fd, POLLIN, 0}};
      const absl::Duration left = deadline - absl::Now();
      const int timeout_ms =
          left > absl::ZeroDuration() ? static_cast<int>(absl::ToInt64Milliseconds(left)) + 1 : 0;
      const int ready = ::poll(fds, 2, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return absl::InternalError(absl::StrCat("poll: ", std::strerror(errno)));
      if (fds[0].revents != 0) return reap();
      if (fds[1].revents != 0) {
        signalfd_siginfo info{};
        if (::read(signal_fd, &info, sizeof(info)) != sizeof(info)) continue;
        std::printf("tf-config demo: signal %u, stopping the chief\n", info.ssi_signo);
        stop();
        return 128 + static_cast<int>(info.ssi_signo);
      }
      if (absl::Now() >= deadline) {
        stop();
        return absl::DeadlineExceededError("the chief did not finish within --demo-timeout");
      }
    }
  }

 private:
  // SIGTERM, then SIGKILL when it has not exited within 10 s; reaps it.
  void stop() {
    ::kill(pid_, SIGTERM);
    pollfd fd = {pidfd_, POLLIN, 0};
    while (::poll(&fd, 1, 10'000) < 0 && errno == EINTR) {
    }
    (void)reap();
  }
  int reap() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  pid_t pid_ = -1;
  int pidfd_ = -1;
};

// The cluster and the chief; returns the chief's exit code (0: it trained
// and the loss fell). Every task and the chief are gone when it returns.
absl::StatusOr<int> run_tf_config_cluster(const Flags& flags, const std::string& folder,
                                          int signal_fd) {
  LocalClusterOptions options;
  options.num_ps = 2;
  options.num_workers = flags.num_workers;
  options.log_dir = folder + "/logs";
  // Plaintext on loopback: the chief below is another process, with only its
  // TF_CONFIG, and the local cluster's fresh CA is private to this one. (A
  // real cluster gets certificates from `psflow certs`, and its chief calls
  // psflow::set_process_tls with them.)
  options.insecure = true;
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<LocalCluster> tasks, LocalCluster::start(options));
  const ClusterSpec& spec = tasks->cluster_spec();
  for (const char* job : {"ps", "worker"}) {
    for (int index = 0; index < spec.num_tasks(job); ++index) {
      PSFLOW_ASSIGN_OR_RETURN(pid_t pid, tasks->pid(job, index));
      std::printf("tf-config demo: %s %d pid %d: `<program> server` with TF_CONFIG='%s'\n", job,
                  index, static_cast<int>(pid), tf_config(spec, job, index).c_str());
    }
  }
  const std::string chief_config = tf_config(spec, "chief", 0);
  PSFLOW_ASSIGN_OR_RETURN(
      ChiefProcess chief,
      ChiefProcess::start(
          {"--steps", std::to_string(flags.steps), "--steps-per-checkpoint",
           std::to_string(flags.steps_per_checkpoint), "--checkpoint-dir", folder + "/checkpoints"},
          chief_config));
  std::printf("tf-config demo: chief pid %d: `<program>` with TF_CONFIG='%s'\n",
              static_cast<int>(chief.pid()), chief_config.c_str());
  std::fflush(stdout);
  absl::StatusOr<int> code =
      chief.wait(signal_fd, absl::Now() + absl::Seconds(flags.demo_timeout_seconds));
  tasks->stop();
  std::printf("tf-config demo: stopped the %zu tasks\n", tasks->pids().size());
  return code;
}

// --tf-config-demo; returns the exit code.
int tf_config_demo(const Flags& flags) {
  // SIGINT and SIGTERM are read from a signalfd, so that an interrupted demo
  // still stops its tasks and removes its folder. Blocked before any thread
  // starts, so that no thread takes them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigprocmask(SIG_BLOCK, &signals, nullptr);
  const int signal_fd = ::signalfd(-1, &signals, SFD_CLOEXEC);
  std::string folder =
      (std::filesystem::temp_directory_path() / "psflow-tf-config-demo-XXXXXX").string();
  if (signal_fd < 0 || ::mkdtemp(folder.data()) == nullptr) {
    std::fprintf(stderr, "error: %s\n", std::strerror(errno));
    return 1;
  }
  std::printf("tf-config demo: folder %s\n", folder.c_str());
  const absl::StatusOr<int> code = run_tf_config_cluster(flags, folder, signal_fd);
  ::close(signal_fd);
  std::error_code error;
  std::filesystem::remove_all(folder, error);
  if (error) {
    std::fprintf(stderr, "error: removing %s: %s\n", folder.c_str(), error.message().c_str());
  } else {
    std::printf("tf-config demo: removed %s\n", folder.c_str());
  }
  if (!code.ok()) {
    std::fprintf(stderr, "error: %s\n", code.status().ToString().c_str());
    return 1;
  }
  if (*code != 0) std::fprintf(stderr, "error: the chief exited with code %d\n", *code);
  return *code;
}

}  // namespace

int main(int argc, char** argv) {
  // A ps or worker task (`<program> server`, TF_CONFIG or flags naming it):
  // serve it and exit.
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
                 "Where checkpoints go; a rerun resumes from them (default: a temporary "
                 "directory, removed at the end)");
  app.add_flag("--tf-config-demo", flags.tf_config_demo,
               "Start ps and worker tasks of this program with TF_CONFIG, run it as their "
               "chief, then stop them and remove the temporary folder");
  app.add_option("--demo-timeout", flags.demo_timeout_seconds,
                 "Seconds the --tf-config-demo chief may take before it is stopped")
      ->check(CLI::Range(1.0, 86400.0));
  CLI11_PARSE(app, argc, argv);
  if (flags.tf_config_demo) return tf_config_demo(flags);

  std::string temporary;
  if (flags.checkpoint_dir.empty()) {
    temporary =
        (std::filesystem::temp_directory_path() / absl::StrCat("psflow-example-", ::getpid()))
            .string();
    std::filesystem::remove_all(temporary);
    flags.checkpoint_dir = temporary;
  }
  const absl::Status status = train(flags);
  if (!temporary.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temporary, ignored);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
