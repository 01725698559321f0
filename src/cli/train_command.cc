// `psflow train`: the coordinator of the training job. Without TF_CONFIG it
// starts the embedded local cluster and trains on it; with TF_CONFIG naming
// this task the chief, it coordinates the ps and worker tasks listed there.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/logging.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "cli/local_cluster_session.h"
#include "cli/signals.h"
#include "cli/task_identity.h"
#include "cli/tls_flags.h"
#include "cli/train_checks.h"
#include "psflow/cluster_resolver.h"
#include "psflow/status_macros.h"
#include "psflow/tls_options.h"
#include "rpc/channel.h"
#include "security/task_identity_names.h"
#include "train/model_registry.h"
#include "train/resume_check.h"
#include "train/run_lock.h"
#include "train/trainer.h"

namespace psflow::internal {
namespace {

// Restarts per task the local launcher allows when --ps-recovery is on and
// --max-restarts was not given.
constexpr int kPsRecoveryDefaultRestarts = 10;

struct TrainFlags {
  LocalClusterFlags cluster;
  TrainOptions train;
  ClusterResolverFlags cluster_resolver;
  TlsFlags tls;
  double stop_timeout_seconds = absl::ToDoubleSeconds(kDefaultStopTimeout);
  // --overlap: "on", "off", or "auto": on for a TF_CONFIG or Slurm cluster
  // with --steps-per-execution above 1 (tasks on other hosts, where links
  // limit the run and overlap gains 1.2-1.4x; one step per closure leaves
  // nothing to overlap across steps), off otherwise (the local cluster is
  // one machine, CPU-bound: overlap costs 8-17 %); docs/benchmarks.md,
  // "Overlap".
  std::string overlap = "auto";
};

constexpr CommandHelp kTrainHelp = {
    "train", "Train a model as the coordinator (chief); without TF_CONFIG on a local cluster",
    R"(Without TF_CONFIG, starts an embedded local cluster of ps and worker tasks on
loopback (task logs in <run-dir>/logs) and trains on it. With TF_CONFIG naming
this task the chief, coordinates the ps and worker tasks listed there (run them
with `psflow server`). With --cluster-resolver slurm, the same from the srun
step's variables: this rank must be the chief of --slurm-jobs (see
deploy/slurm/). Data: Debian's dataset-fashion-mnist package.

Run directory (--run-dir), whatever the model and strategy: config.json (what
`psflow eval` needs), checkpoints/ckpt-<step> saved every epoch, TensorBoard
events (per epoch, and every 100 steps step/loss, step/learning_rate,
step/examples_per_sec, at the run's global step across resumes),
run_record.json (every epoch and invocation, rewritten after each epoch and
when an invocation ends) and, once the run is complete, summary.json (the
same). A rerun resumes from the newest intact checkpoint and says where; a
damaged one is skipped with a line naming it and the error and renamed
ckpt-<step>.corrupt (kept, never deleted). --checkpoint picks another (a name
in checkpoints/ or a path); the run's newer ones are renamed
ckpt-<step>.superseded. A rerun may change --epochs and most options, but not
--model, --batch-size, --optimizer, --data-dir or --seed (refused with status
2 before any task starts).

Stopping: on the first SIGTERM or SIGINT it schedules nothing more, cancels the
closures in flight (a worker stops between two steps), waits for them to come
back, saves a checkpoint of the steps done when it is consistent (every step
that was applied, applied on every ps; none half-applied by a worker that
failed mid-call), stops the local cluster's tasks and exits with status
128+signal (143 for SIGTERM, 130 for SIGINT). A rerun with the same --run-dir
resumes from that checkpoint, in the middle of its epoch. All of this within
--stop-timeout (10 s): past it, it exits with the same status without
finishing (e.g. a closure on a paused worker never came back; no checkpoint
then). Before training starts (waiting for tasks, loading data) it exits at
once, saying what it was waiting for. A second signal exits at once.

Checks: every flag, the data (--data-dir) and the run directory are checked
before any task starts or anything is written; an error names the flag and
exits with status 2. Flags the chosen mode would ignore are refused: the
local cluster's (--num-ps, --num-workers, --host, --log-dir, --binary,
--max-restarts, --non-finite-updates) with --strategy mirrored or a TF_CONFIG
or Slurm cluster, --replicas with --strategy parameter_server. As the chief
of a TF_CONFIG cluster it applies TensorFlow's ParameterServerStrategy rules
first, then asks each task which one it is, naming swapped addresses.

Transport security: the local cluster runs over mutual TLS with a fresh CA
made for the run (--tls-dir DIR: certificates from `psflow certs` instead;
--insecure: plaintext). As the chief of a TF_CONFIG or Slurm cluster it
presents chief-<index>.crt from --tls-dir DIR (or PSFLOW_TLS_DIR, or
--tls-ca/--tls-cert/--tls-key) to every task; without credentials it refuses
a non-loopback address unless --insecure.)"};

int report(const absl::StatusOr<TrainSummary>& summary, const TrainOptions& options,
           const SignalShutdown& shutdown);

// Prints why the run directory cannot resume with these options
// (train/resume_check.h, a usage error); true when it can.
bool report_resume_check(const absl::Status& status) {
  if (status.ok()) return true;
  std::fprintf(stderr, "psflow train: %s\n", std::string(status.message()).c_str());
  return false;
}

std::string default_run_dir(const TrainOptions& options) {
  return absl::StrCat("runs/",
                      absl::FormatTime("%Y%m%d-%H%M%S", absl::Now(), absl::LocalTimeZone()), "-",
                      options.model);
}

// Locks the run directory (RunDirLock), saying so when it takes over the
// lock of a killed run. A default directory (runs/<time>-<model>) that
// exists already, or that another process holds, gives way to
// <dir>-2, <dir>-3, ...: two runs started in the same second never share one.
absl::StatusOr<RunDirLock> take_run_dir(TrainOptions& options, bool default_dir) {
  constexpr int kMaxDefaultSuffix = 100;
  const std::string base = options.run_dir;
  for (int n = 1;; ++n) {
    if (default_dir && n > 1) options.run_dir = absl::StrCat(base, "-", n);
    const bool last = !default_dir || n == kMaxDefaultSuffix;
    if (!last && std::filesystem::exists(options.run_dir)) continue;
    std::string previous_holder;
    absl::StatusOr<RunDirLock> lock = RunDirLock::acquire(options.run_dir, &previous_holder);
    if (!lock.ok() && !last && absl::IsFailedPrecondition(lock.status())) continue;
    if (lock.ok() && !previous_holder.empty()) {
      std::printf("took over the run directory's lock from %s, which is gone\n",
                  previous_holder.c_str());
    }
    return lock;
  }
}

// The cluster of TF_CONFIG or Slurm, when one is configured; the chief's
// checks of it (this task is the chief, TensorFlow's ParameterServerStrategy
// rules) passed. Reads the environment only.
struct ExternalCluster {
  ClusterSpec spec;
  int chief_index = 0;
  const char* source = "TF_CONFIG";
};
absl::StatusOr<std::optional<ExternalCluster>> external_cluster(const TrainFlags& flags,
                                                                const CLI::App& app) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> slurm =
      slurm_resolver_from_flags(flags.cluster_resolver, app);
  if (!slurm.ok()) return slurm.status();
  TFConfigClusterResolver tf_config;
  const ClusterResolver* resolver = nullptr;
  ExternalCluster cluster;
  if (slurm->has_value()) {
    resolver = &**slurm;
    cluster.source = "Slurm";
  } else if (tf_config.is_configured()) {
    resolver = &tf_config;
  } else {
    return std::nullopt;
  }
  absl::StatusOr<ClusterSpec> spec = resolver->cluster_spec();
  absl::StatusOr<std::optional<std::string>> task_type = resolver->task_type();
  absl::StatusOr<std::optional<int>> task_id = resolver->task_id();
  for (const absl::Status& status : {spec.status(), task_type.status(), task_id.status()}) {
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(cluster.source, ": ", status.ToString()));
    }
  }
  if (task_type->value_or("") != "chief") {
    return absl::InvalidArgumentError(
        absl::StrCat(cluster.source, " names this task '", task_type->value_or(""),
                     "'; `psflow train` runs the chief (coordinator). Run ps and worker tasks "
                     "with `psflow server`."));
  }
  // TensorFlow's rules at once (no ps, no worker, ...), not after waiting
  // for tasks that cannot make a valid cluster.
  // There is at most one chief: a TF_CONFIG without its index means 0.
  if (absl::Status valid =
          validate_parameter_server_cluster(*spec, *task_type, task_id->value_or(0));
      !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(cluster.source, ": ", valid.message()));
  }
  cluster.spec = *std::move(spec);
  cluster.chief_index = task_id->value_or(0);
  return std::optional<ExternalCluster>(std::move(cluster));
}

// Tasks may still be starting (pods scheduled one by one): waits for all of
// them within the start-up bound, then asks each which task it is. nullopt
// when every task answered as itself, else the exit code (said on stderr).
// A signal meanwhile exits at once, naming the task waited for.
std::optional<int> wait_for_external_tasks(const ExternalCluster& cluster, const TrainFlags& flags,
                                           SignalShutdown& shutdown) {
  const ClusterSpec& spec = cluster.spec;
  StopRequest& stop = shutdown.stop_request();
  const int tasks = spec.num_tasks(kPsJob) + spec.num_tasks(kWorkerJob);
  bool said = false;
  const absl::Time deadline = absl::Now() + absl::Seconds(flags.cluster.startup_timeout_seconds);
  std::vector<std::string> missing;
  std::vector<std::string> mismatched;
  for (std::string_view job : {kPsJob, kWorkerJob}) {
    for (int index : spec.task_indices(job)) {
      absl::StatusOr<std::string> address = spec.task_address(job, index);
      if (!address.ok()) continue;
      const std::string name = task_name(job, index);
      if (!stop.set_activity(
              {absl::StrCat("waiting for ", name, " at ", *address, " to answer"), true})) {
        return *shutdown.exit_code();
      }
      if (!said) {
        std::printf(
            "waiting for the %d ps and worker tasks of the %s cluster to answer "
            "(--startup-timeout %g s)\n",
            tasks, cluster.source, flags.cluster.startup_timeout_seconds);
        std::fflush(stdout);
        said = true;
      }
      absl::Status healthy = wait_for_healthy(*address, name, deadline);
      if (!healthy.ok()) {
        missing.push_back(std::string(healthy.message()));
        continue;
      }
      // Health checks answer for any task: ask this one its role, so that
      // swapped addresses are named here rather than as UNIMPLEMENTED later.
      absl::Status identity = check_task_identity(
          *address, job, index, std::max(deadline, absl::Now() + absl::Seconds(10)));
      if (absl::IsFailedPrecondition(identity)) {
        mismatched.push_back(std::string(identity.message()));
      } else if (!identity.ok()) {
        missing.push_back(std::string(identity.message()));
      }
    }
  }
  if (!mismatched.empty()) {
    std::fprintf(stderr, "psflow train: %s\n", absl::StrJoin(mismatched, "; ").c_str());
    return kExitUsage;
  }
  if (!missing.empty()) {
    std::fprintf(stderr,
                 "psflow train: %zu task(s) of the %s cluster did not answer within "
                 "--startup-timeout %g s: %s\n",
                 missing.size(), cluster.source, flags.cluster.startup_timeout_seconds,
                 absl::StrJoin(missing, "; ").c_str());
    return kExitFailure;
  }
  return std::nullopt;
}

// Every check that needs no task and writes nothing, in the order a user
// fixes them: the mode's flags, the cluster's size or configuration, the
// data, the run directory. An error (said on stderr) is a usage error.
absl::Status check_before_start(const TrainFlags& flags, const CLI::App& app, const Model& model,
                                TrainMode mode, const char* source) {
  const TrainOptions& options = flags.train;
  PSFLOW_RETURN_IF_ERROR(check_flags_of_mode(app, mode, source));
  if (mode == TrainMode::kLocalCluster) {
    PSFLOW_RETURN_IF_ERROR(check_local_cluster_flags(flags.cluster, /*for_training=*/true));
  }
  PSFLOW_RETURN_IF_ERROR(model.check_data(options));
  return check_writable_dir(options.run_dir, "--run-dir");
}

// The chief's transport security, set for every channel it opens, and the
// line that says what it is. A local cluster makes its own credentials (a
// fresh CA per run unless --tls-dir names some; PSFLOW_TLS_DIR, meant for
// the tasks of a real cluster, is not read). With an external cluster the
// chief presents its chief-<index> certificate; without one it refuses a
// non-loopback address unless --insecure.
absl::StatusOr<std::string> configure_transport(const TrainFlags& flags,
                                                const std::optional<ExternalCluster>& external) {
  if (!external.has_value()) {
    const TlsFlags& tls = flags.tls;
    if (!tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty()) {
      return absl::InvalidArgumentError(
          "--tls-ca/--tls-cert/--tls-key name one task's files; the local cluster needs one "
          "certificate per task: pass --tls-dir DIR (from `psflow certs`), or nothing for a "
          "fresh CA for this run");
    }
    if (tls.insecure && !tls.dir.empty()) {
      return absl::InvalidArgumentError("--insecure and --tls-dir do not combine; drop one");
    }
    if (tls.insecure) return std::string("mTLS: off (--insecure; plaintext on loopback)");
    if (!tls.dir.empty()) return absl::StrCat("mTLS: on (certificates in ", tls.dir, ")");
    return std::string("mTLS: on (fresh CA for this run)");
  }
  PSFLOW_ASSIGN_OR_RETURN(TlsOptions tls, tls_options_from_flags(flags.tls));
  PSFLOW_RETURN_IF_ERROR(set_process_tls(tls, kChiefJob, external->chief_index));
  if (!tls.empty()) {
    return absl::StrCat("mTLS: on (", tls.dir.empty() ? tls.cert_file : tls.dir, ")");
  }
  PSFLOW_ASSIGN_OR_RETURN(std::string address,
                          external->spec.task_address(kChiefJob, external->chief_index));
  const size_t colon = address.rfind(':');
  const std::string host = address.substr(0, colon == std::string::npos ? 0 : colon);
  if (tls.insecure) {
    PSFLOW_LOG(Warning,
               "mTLS off (--insecure): the chief talks to its tasks in plaintext, "
               "unauthenticated");
    return std::string("mTLS: off (--insecure)");
  }
  if (!is_loopback_name(host)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the chief's address ", address,
        " is not loopback and it has no TLS credentials: make them with `psflow certs "
        "--tf-config ... --out DIR` and pass --tls-dir DIR (or set PSFLOW_TLS_DIR, or pass "
        "--tls-ca/--tls-cert/--tls-key), or pass --insecure to run without authentication"));
  }
  return std::string("mTLS: off (loopback cluster without credentials; --tls-dir turns it on)");
}

int run_train(const TrainFlags& given, const CLI::App& app) {
  TrainFlags flags = given;
  TrainOptions& options = flags.train;
  if (!(flags.stop_timeout_seconds >= 1) || flags.stop_timeout_seconds > 3600) {
    std::fprintf(stderr, "psflow train: --stop-timeout %g is out of range; use 1 to 3600 seconds\n",
                 flags.stop_timeout_seconds);
    return kExitUsage;
  }
  SignalShutdown shutdown(absl::Seconds(flags.stop_timeout_seconds));
  StopRequest& stop = shutdown.stop_request();
  options.stop = &stop;
  (void)stop.set_activity({"starting", /*at_once=*/true});
  absl::StatusOr<std::unique_ptr<Model>> model = make_model(options.model);
  if (!model.ok()) {
    std::fprintf(stderr, "psflow train: %s\n", std::string(model.status().message()).c_str());
    return kExitUsage;
  }
  // The model's own defaults where the user gave none (wide_deep's sparse
  // ids train best with Adagrad and large batches).
  const ModelDefaults defaults = (*model)->defaults();
  if (defaults.optimizer.has_value() && app.count("--optimizer") == 0) {
    options.optimizer = *defaults.optimizer;
  }
  if (defaults.learning_rate.has_value() && app.count("--learning-rate") == 0) {
    options.learning_rate = *defaults.learning_rate;
  }
  if (defaults.batch_size.has_value() && app.count("--batch-size") == 0) {
    options.batch_size = *defaults.batch_size;
  }
  const bool default_dir = options.run_dir.empty();
  if (default_dir) options.run_dir = default_run_dir(options);
  if (absl::Status valid = validate_train_options(options, **model); !valid.ok()) {
    std::fprintf(stderr, "psflow train: %s\n", std::string(valid.message()).c_str());
    return kExitUsage;
  }
  // Where it trains, and the checks of that mode, before anything starts.
  std::optional<ExternalCluster> external;
  TrainMode mode = TrainMode::kMirrored;
  if (options.strategy != kMirroredStrategy) {
    absl::StatusOr<std::optional<ExternalCluster>> resolved = external_cluster(flags, app);
    if (!resolved.ok()) {
      std::fprintf(stderr, "psflow train: %s\n", std::string(resolved.status().message()).c_str());
      return kExitUsage;
    }
    external = *std::move(resolved);
    mode = external.has_value() ? TrainMode::kExternalCluster : TrainMode::kLocalCluster;
    // auto: where links limit the run and a closure has steps to overlap.
    options.overlap =
        flags.overlap == "on" || (flags.overlap == "auto" && mode == TrainMode::kExternalCluster &&
                                  options.steps_per_execution > 1);
  } else if (TFConfigClusterResolver().is_configured()) {
    std::fprintf(stderr,
                 "psflow train: --strategy mirrored trains in this process, without ps or worker "
                 "tasks, but TF_CONFIG is set: unset it (e.g. `env -u TF_CONFIG psflow train "
                 "...`), or use --strategy parameter_server to train on its cluster.\n");
    return kExitUsage;
  }
  if (absl::Status checked = check_before_start(flags, app, **model, mode,
                                                external.has_value() ? external->source : "");
      !checked.ok()) {
    std::fprintf(stderr, "psflow train: %s\n", std::string(checked.message()).c_str());
    return kExitUsage;
  }
  options.interactive_progress = ::isatty(STDOUT_FILENO) == 1;
  // One process per run directory, taken once the flags are known good and
  // before any task starts; held until this function returns.
  std::optional<RunDirLock> run_lock;
  // The exit status when the run directory cannot be used: held by another
  // process (a failure), or holding a run these options cannot resume (a
  // usage error, like any other refused flag).
  auto lock_run_dir = [&]() -> std::optional<int> {
    absl::StatusOr<RunDirLock> lock = take_run_dir(options, default_dir);
    if (!lock.ok()) {
      std::fprintf(stderr, "psflow train: %s\n", std::string(lock.status().message()).c_str());
      return kExitFailure;
    }
    run_lock.emplace(*std::move(lock));
    if (!report_resume_check(check_resume_options(options))) return kExitUsage;
    return std::nullopt;
  };

  const std::string data = (*model)->data_name(options);
  if (mode == TrainMode::kMirrored) {
    if (const std::optional<int> failed = lock_run_dir()) return *failed;
    std::printf(
        "training %s on %s with %d synchronous replicas in this process: %d "
        "epochs, global batch %lld, %s lr %g; run dir %s\n",
        options.model.c_str(), data.c_str(), options.replicas, options.epochs,
        static_cast<long long>(options.batch_size), options.optimizer.c_str(),
        options.learning_rate, options.run_dir.c_str());
    std::fflush(stdout);
    return report(train(ClusterSpec(), options), options, shutdown);
  }

  absl::StatusOr<std::string> transport = configure_transport(flags, external);
  if (!transport.ok()) {
    std::fprintf(stderr, "psflow train: %s\n", std::string(transport.status().message()).c_str());
    return kExitUsage;
  }
  LocalClusterSession session(shutdown);
  ClusterSpec spec;
  if (external.has_value()) {
    std::printf("%s\n", transport->c_str());
    spec = external->spec;
    if (const std::optional<int> failed = lock_run_dir()) return *failed;
    if (std::optional<int> failed = wait_for_external_tasks(*external, flags, shutdown)) {
      return *failed;
    }
  } else {
    if (const std::optional<int> failed = lock_run_dir()) return *failed;
    std::printf("starting a local cluster: %d ps, %d workers; %s\n", flags.cluster.num_ps,
                flags.cluster.num_workers, transport->c_str());
    std::fflush(stdout);
    LocalClusterOptions cluster_options = to_local_cluster_options(flags.cluster);
    cluster_options.tls_dir = flags.tls.dir;
    cluster_options.insecure = flags.tls.insecure;
    if (options.ps_recovery && app.count("--max-restarts") == 0) {
      // Recovery waits for the lost ps to come back: the launcher must
      // restart it.
      cluster_options.max_restarts = kPsRecoveryDefaultRestarts;
    }
    if (cluster_options.log_dir.empty()) cluster_options.log_dir = options.run_dir + "/logs";
    std::error_code ec;
    std::filesystem::create_directories(cluster_options.log_dir, ec);
    absl::StatusOr<LocalCluster*> cluster = session.start(cluster_options);
    if (!cluster.ok()) {
      if (shutdown.exit_code().has_value()) return *shutdown.exit_code();
      std::fprintf(stderr, "psflow train: %s\n", std::string(cluster.status().message()).c_str());
      return absl::IsInvalidArgument(cluster.status()) ? kExitUsage : kExitFailure;
    }
    print_tasks(**cluster, stdout);
    spec = (*cluster)->cluster_spec();
  }
  if (!stop.set_activity({"starting training", /*at_once=*/true})) {
    return *shutdown.exit_code();
  }
  std::printf("training %s on %s: %d epochs, batch %lld, %s lr %g; run dir %s\n",
              options.model.c_str(), data.c_str(), options.epochs,
              static_cast<long long>(options.batch_size), options.optimizer.c_str(),
              options.learning_rate, options.run_dir.c_str());
  std::fflush(stdout);
  return report(train(spec, options), options, shutdown);
}

int report(const absl::StatusOr<TrainSummary>& summary, const TrainOptions& options,
           const SignalShutdown& shutdown) {
  // A signal ends the process with 128+signal, whatever the run reached
  // (the training loop said what it kept).
  const std::optional<int> stopped = shutdown.exit_code();
  if (!summary.ok()) {
    if (!stopped.has_value() || summary.status() != options.stop->reason()) {
      std::fprintf(stderr, "psflow train: %s\n", summary.status().ToString().c_str());
    }
    return stopped.value_or(kExitFailure);
  }
  if (summary->already_complete) {
    std::printf(
        "the run in %s is already complete: %d epochs, %lld steps; nothing was trained and its "
        "records (summary.json, TensorBoard events) are as they were. Test accuracy of its last "
        "checkpoint: %.4f, test loss %.4f. Pass more --epochs to train on, or another --run-dir "
        "for a new run.\n",
        options.run_dir.c_str(), summary->epochs, static_cast<long long>(summary->steps),
        summary->test_accuracy, summary->test_loss);
    std::fflush(stdout);
    return stopped.value_or(kExitOk);
  }
  std::printf(
      "done: test accuracy %.4f, test loss %.4f after %d epochs (%lld steps, %.0f examples/s, "
      "%.1f s); summary in %s/summary.json\n",
      summary->test_accuracy, summary->test_loss, summary->epochs,
      static_cast<long long>(summary->steps), summary->examples_per_sec, summary->wall_seconds,
      options.run_dir.c_str());
  if (summary->ps_recoveries > 0) {
    std::printf("ps recoveries: %d; %lld completed steps were rolled back and trained again\n",
                summary->ps_recoveries, static_cast<long long>(summary->rolled_back_steps));
  }
  std::fflush(stdout);
  return stopped.value_or(kExitOk);
}

void add_train_flags(CLI::App& app, TrainFlags& flags) {
  add_local_cluster_flags(app, flags.cluster);
  add_cluster_resolver_flags(app, flags.cluster_resolver);
  add_tls_flags(app, flags.tls);
  app.add_option("--stop-timeout", flags.stop_timeout_seconds,
                 "Seconds the first SIGTERM or SIGINT leaves to stop: cancel the closures in "
                 "flight, save a checkpoint, stop the local cluster (see below)")
      ->capture_default_str();
  TrainOptions& o = flags.train;
  app.add_option("--model", o.model,
                 "mlp (784-256-10) or logreg on Fashion-MNIST; wide_deep (sharded embeddings "
                 "plus dense features) on generated click data or a LIBSVM --data-dir; dlrm "
                 "(DLRM on a dynamic embedding table) on Criteo TSV or generated:<rows>")
      ->capture_default_str();
  app.add_option("--strategy", o.strategy,
                 "parameter_server (ps and worker tasks) or mirrored (synchronous replicas in "
                 "this process, no tasks)")
      ->capture_default_str();
  app.add_option("--replicas", o.replicas,
                 "Replicas of --strategy mirrored (refused with parameter_server, where each "
                 "worker is a replica)")
      ->capture_default_str();
  app.add_option("--epochs", o.epochs, "Passes over the training set")->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "Examples per step")->capture_default_str();
  app.add_option("--optimizer", o.optimizer, "sgd, momentum, adagrad, adam or ftrl")
      ->capture_default_str();
  app.add_option("--learning-rate", o.learning_rate, "Learning rate")->capture_default_str();
  app.add_option("--lr-schedule", o.lr_schedule,
                 "cosine (decay to 10% over the run, as Keras's CosineDecay) or constant")
      ->capture_default_str();
  app.add_option("--partitioner", o.partitioner,
                 "auto (the model's choice: min_size:262144:<num-ps>, TF's tutorial setting; "
                 "fixed:<num-ps> for wide_deep), none, fixed:<shards>, "
                 "min_size:<bytes>[:<max>], max_size:<bytes>[:<max>]")
      ->capture_default_str();
  app.add_option("--placement", o.placement,
                 "fewest_bytes (each variable or shard on the ps holding the fewest bytes) or "
                 "round_robin (TF's order, blind to sizes)")
      ->capture_default_str();
  app.add_option("--wire-dtype", o.wire_dtype,
                 "float32, or bfloat16: pulled parameters and pushed gradients travel as "
                 "bfloat16 (half the bytes; the ps keeps float32 values and optimizer slots)")
      ->check(CLI::IsMember({"float32", "bfloat16"}))
      ->capture_default_str();
  app.add_option("--run-dir", o.run_dir, "Output directory (default: runs/<time>-<model>)");
  app.add_option("--checkpoint", o.checkpoint,
                 "Resume from this checkpoint, a name in <run-dir>/checkpoints (ckpt-200) or a "
                 "path, rather than the newest intact one; the run's newer checkpoints are "
                 "renamed aside (ckpt-<N>.superseded), never deleted");
  app.add_option("--seed", o.seed, "Seed of initial values and shuffles (0 to 2^64-1)")
      ->capture_default_str()
      ->check(
          [](const std::string& value) -> std::string {
            // CLI11 would wrap "-3" around to 18446744073709551613.
            return value.find('-') == std::string::npos
                       ? ""
                       : "the seed is a whole number from 0 to 18446744073709551615";
          },
          "0 to 2^64-1");
  app.add_option("--steps-per-execution", o.steps_per_execution,
                 "Training steps per scheduled closure (TF's steps_per_execution, 1 in "
                 "Keras): every step still pulls the parameters and pushes its gradients; the "
                 "closure's dispatch and round trip are paid once per closure")
      ->capture_default_str();
  app.add_option("--overlap", flags.overlap,
                 "on: within a closure's steps (--steps-per-execution), push gradients as the "
                 "backward pass produces them and read the next step's parameters while they "
                 "are in flight, also across closures (a read may miss this worker's own "
                 "previous step); off: read, "
                 "compute, push; auto: on for a TF_CONFIG or Slurm cluster with "
                 "--steps-per-execution above 1, off otherwise (measured: overlap pays where links "
                 "limit the run, costs on one "
                 "machine)")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  app.add_flag("--ps-recovery", o.ps_recovery,
               "On the loss of a ps task, wait for it to come back, restore every ps from the "
               "latest checkpoint and train on (default: stop with UNAVAILABLE, as TF)");
  app.add_option("--ps-recovery-timeout", o.ps_recovery_timeout_seconds,
                 "Seconds to wait for a lost ps task to come back")
      ->capture_default_str();
  app.add_option("--data-dir", o.data_dir,
                 "Directory of the Fashion-MNIST IDX files (default: the Debian package's)");
  app.add_option("--bad-lines", o.bad_lines,
                 "dlrm's Criteo reader: error (stop at the first bad line, naming file, line and "
                 "field) or skip (count and skip bad lines)")
      ->capture_default_str();
}

}  // namespace

Command add_train_command(CLI::App& parent) {
  return add_command(parent, kTrainHelp, add_train_flags, run_train);
}

}  // namespace psflow::internal
