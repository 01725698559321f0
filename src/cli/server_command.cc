// `psflow server`: runs one ps or worker task until SIGTERM/SIGINT.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "cli/cluster_flags.h"
#include "cli/commands.h"
#include "cli/signals.h"
#include "cli/tls_flags.h"
#include "psflow/cluster_resolver.h"
#include "psflow/server.h"
#include "psflow/status_macros.h"
#include "rpc/task_status.h"
#include "security/tls_credentials.h"
#include "server/task_plan.h"

namespace psflow::internal {
namespace {

struct ServerFlags {
  std::string job;
  int task = -1;
  std::string cluster_json;
  std::string bind;
  bool reuse_port = false;
  int64_t result_cache_entries = ServerOptions{}.result_cache_entries;
  int64_t result_cache_mib = ServerOptions{}.result_cache_bytes >> 20;
  int64_t max_value_mib = ServerOptions{}.max_value_bytes >> 20;
  int64_t max_message_mib = ServerOptions{}.max_message_bytes >> 20;
  int64_t max_buffered_mib = 0;
  std::string non_finite_updates = "reject";
  bool check_config = false;
  // --python: seen here only by a ps task (a worker execs the Python task
  // before parsing, see cli/python_server.h); a ps runs no steps.
  std::string python_modules;
  ClusterResolverFlags cluster_resolver;
  TlsFlags tls;
};

constexpr CommandHelp kServerHelp = {
    "server", "Run one ps or worker task of a cluster until SIGTERM or SIGINT",
    R"(The cluster and the task come from the TF_CONFIG environment variable, as in
TensorFlow; the flags above override it. A ps task holds variables, a worker
runs scheduled functions; the chief (coordinator) is `psflow train`.

Stopping: on the first SIGTERM or SIGINT it stops accepting calls, lets running
calls finish for up to 2 s and exits within 10 s with status 128+signal (143
for SIGTERM, 130 for SIGINT); a second signal exits at once. Other exit codes:
2 for a bad configuration, 1 when it cannot serve (e.g. the port is in use).
Under Slurm, --cluster-resolver slurm reads the cluster and the role from the
srun step instead (see deploy/slurm/).

Where it listens: on the address TF_CONFIG names for this task, never on every
interface unless told to. A loopback or IP address is bound as given; a name
(e.g. a Kubernetes service, job-ps-0.job.default.svc:2222) is resolved and
bound to the first of its addresses that belongs to this machine. A name that
does not resolve, or resolves to another machine, stops the task at start
with the reason. --bind chooses the address instead: --bind 0.0.0.0:2222
accepts on every interface deliberately; on Kubernetes --bind $(POD_IP):2222
(POD_IP from the downward API) binds the pod's own address.

--check-config checks the configuration and exits without serving: TF_CONFIG
and the flags as the server reads them, the checks of TensorFlow's
ParameterServerStrategy that the chief applies (known job names, at most one
chief, at least one ps and one worker, the task's index in range), and the
address the task would listen on (its name resolved unless --bind is given),
and the credentials it was given (each file loads, the key matches the
certificate, the certificate is signed by the CA, names this task as its
Subject CN and is in date). It binds no port and waits for no other task. It
prints one line, and a second with credentials,
  TF_CONFIG ok: this task is ps:1 of {chief: 1, ps: 2, worker: 2}; it would listen on ...
  credentials ok: /certs/ps-1.crt names ps/1, matches ..., valid until ...
and exits 0, or prints the error and exits 2. A chief's or an evaluator's
TF_CONFIG is checked too (they run `psflow train` and `psflow eval`, which
listen on no port).

Python steps: --python MODULE[,MODULE] makes a worker a Python process that
imports MODULE first, so that it runs the Python step functions MODULE
registers (@psflow.function): this command line is exec'ed as `python3 -m
psflow.server --python MODULE <the other flags>` (the interpreter:
$PSFLOW_PYTHON, else /usr/bin/python3, else python3 on PATH; it must import
psflow and MODULE). A ps (--job ps, or "ps" in TF_CONFIG) runs no steps and
stays this process. See docs/python.md.

Logging: one line per event on stderr ("I 05:33:43.123 file.cc:42] ..."):
where the task serves and as what role, each client that connects (the
coordinator, a worker), restarts and errors (a refused request or a failed
function as a warning the 1st, 2nd, 4th, 8th, ... time for each call and
code); never a line per call at the default level. PSFLOW_LOG_LEVEL sets the least level logged: debug, info (the
default), warning or error (or 0 to 3; any case). Another value is warned
about and info is kept. The same holds for every psflow command.

Transport security: with --tls-dir DIR (or PSFLOW_TLS_DIR) every connection is
mutual TLS: the task presents DIR/<job>-<index>.crt and .key and accepts only
peers whose certificate DIR/ca.crt signed (`psflow certs` makes them);
--tls-ca/--tls-cert/--tls-key name the three files instead (e.g. a mounted
Kubernetes secret). Without credentials a task on a loopback address serves
plaintext; one on any other address refuses to start (exit 2) unless
--insecure is given, which serves plaintext and warns at start and on every
new connection.

Example:
  TF_CONFIG='{"cluster": {"ps": ["127.0.0.1:2222"], "worker": ["127.0.0.1:2223"]},
              "task": {"type": "ps", "index": 0}}' psflow server
  psflow server --cluster-resolver slurm --slurm-jobs chief:1,ps:2,worker:2
      (as ranks 1-4 of an srun step; rank 0 runs `psflow train` with the same flags))"};

void add_server_flags(CLI::App& app, ServerFlags& flags) {
  app.add_option("--job", flags.job, "Task type to serve: ps or worker (overrides TF_CONFIG)")
      ->check(CLI::IsMember({"ps", "worker"}));
  app.add_option("--python", flags.python_modules,
                 "MODULE[,MODULE]: a worker becomes `python3 -m psflow.server`, importing them "
                 "(Python step functions); a ps ignores it");
  app.add_option("--task", flags.task, "Task index within the job (overrides TF_CONFIG)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cluster-json", flags.cluster_json,
                 "The cluster as TF_CONFIG's \"cluster\" object, e.g. "
                 "'{\"ps\": [\"127.0.0.1:2222\"], \"worker\": [\"127.0.0.1:2223\"]}' "
                 "(overrides TF_CONFIG)");
  app.add_option("--bind", flags.bind,
                 "Listen on this host:port instead of the address TF_CONFIG names for the task "
                 "(default: that address; a name resolved to this machine's address). "
                 "0.0.0.0:<port> or [::]:<port> accepts on every interface");
  app.add_flag("--check-config", flags.check_config,
               "Check TF_CONFIG and the flags (TensorFlow's ParameterServerStrategy checks "
               "and the listening address), print one line and exit without serving: 0 when "
               "they are good, 2 otherwise");
  app.add_flag("--reuse-port", flags.reuse_port,
               "Share the port with a reservation socket (SO_REUSEPORT); set by "
               "`psflow local-cluster`, not needed otherwise");
  app.add_option("--result-cache-entries", flags.result_cache_entries,
                 "Worker: function results kept for same-worker chaining (0 keeps none)")
      ->capture_default_str();
  app.add_option("--result-cache-mib", flags.result_cache_mib,
                 "Worker: most MiB those results may take, least recently used evicted first")
      ->capture_default_str();
  app.add_option("--max-message-mib", flags.max_message_mib,
                 "Largest message the task accepts or sends, in MiB (1 to 2047)")
      ->capture_default_str();
  app.add_option("--max-buffered-mib", flags.max_buffered_mib,
                 "Most MiB gRPC may buffer for the task's connections and incoming messages; "
                 "0: 2 x --max-message-mib + 256")
      ->capture_default_str();
  app.add_option("--max-value-mib", flags.max_value_mib,
                 "Worker: most MiB of values executor-protocol clients may create and not "
                 "dispose (CreateValue beyond it is RESOURCE_EXHAUSTED)")
      ->capture_default_str();
  app.add_option("--non-finite-updates", flags.non_finite_updates,
                 "Ps: what to do with updates (gradients, deltas, scatter updates) holding NaN "
                 "or infinity: reject (the request fails naming the variable, nothing is "
                 "applied) or allow (applied, as TensorFlow does)")
      ->capture_default_str();
  add_cluster_resolver_flags(app, flags.cluster_resolver);
  add_tls_flags(app, flags.tls);
}

int usage_error(std::string_view message) {
  std::fprintf(stderr, "psflow server: %.*s\n", static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

// A resolver error, said to come from TF_CONFIG unless it already says so.
absl::Status tf_config_error(const absl::Status& status) {
  if (absl::StrContains(status.message(), "TF_CONFIG")) {
    return absl::InvalidArgumentError(status.message());
  }
  return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG: ", status.message()));
}

// The spec, job and index from the flags, falling back to TF_CONFIG.
struct Role {
  ClusterSpec spec;
  std::string job;
  int index = 0;
};

// The spec and role from Slurm's environment; the flags that would
// override them are refused, since Slurm's rank fixes the role and the port.
absl::StatusOr<Role> slurm_role(const ServerFlags& flags, const SlurmClusterResolver& resolver) {
  if (!flags.job.empty() || flags.task >= 0 || !flags.cluster_json.empty()) {
    return absl::InvalidArgumentError(
        "--job, --task and --cluster-json do not combine with --cluster-resolver slurm: the "
        "role and the cluster come from SLURM_PROCID and the step's nodes (see --slurm-jobs); "
        "drop them, or drop --cluster-resolver slurm.");
  }
  Role role;
  PSFLOW_ASSIGN_OR_RETURN(role.spec, resolver.cluster_spec());
  PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> job, resolver.task_type());
  PSFLOW_ASSIGN_OR_RETURN(std::optional<int> index, resolver.task_id());
  role.job = job.value_or("");
  role.index = index.value_or(0);
  if (role.job != kPsJob && role.job != kWorkerJob) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Slurm rank ", resolver.rank(), " is task ", role.index, " of job '", role.job,
        "' (--slurm-jobs), and `psflow server` runs 'ps' or 'worker' tasks only. Run the chief "
        "with `psflow train --cluster-resolver slurm` on that rank (deploy/slurm/psflow.sbatch "
        "does), or list the jobs so that this rank is a ps or worker."));
  }
  return role;
}

absl::StatusOr<Role> resolve_role(const ServerFlags& flags, const CLI::App& app) {
  absl::StatusOr<std::optional<SlurmClusterResolver>> slurm =
      slurm_resolver_from_flags(flags.cluster_resolver, app);
  if (!slurm.ok()) return slurm.status();
  if (slurm->has_value()) return slurm_role(flags, **slurm);
  TFConfigClusterResolver::Options options;
  if (!flags.job.empty()) options.task_type = flags.job;
  if (flags.task >= 0) options.task_id = flags.task;
  TFConfigClusterResolver resolver(options);
  Role role;
  if (!flags.cluster_json.empty()) {
    absl::StatusOr<ClusterSpec> spec = ClusterSpec::from_json(flags.cluster_json);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--cluster-json: ", spec.status().message()));
    }
    role.spec = *std::move(spec);
  } else {
    absl::StatusOr<ClusterSpec> spec = resolver.cluster_spec();
    if (!spec.ok()) {
      return tf_config_error(spec.status());
    }
    role.spec = *std::move(spec);
  }
  if (role.spec.empty()) {
    return absl::InvalidArgumentError(
        "no cluster: set TF_CONFIG (e.g. {\"cluster\": {\"ps\": [\"127.0.0.1:2222\"], "
        "\"worker\": [\"127.0.0.1:2223\"]}, \"task\": {\"type\": \"ps\", \"index\": 0}}) or "
        "pass --cluster-json, --job and --task");
  }
  absl::StatusOr<std::optional<std::string>> job = resolver.task_type();
  if (!job.ok()) return tf_config_error(job.status());
  if (!job->has_value()) {
    return absl::InvalidArgumentError(
        "no task type: set TF_CONFIG's task.type to \"ps\" or \"worker\", or pass --job");
  }
  absl::StatusOr<std::optional<int>> index = resolver.task_id();
  if (!index.ok()) {
    return tf_config_error(index.status());
  }
  if (!index->has_value()) {
    return absl::InvalidArgumentError("no task index: set TF_CONFIG's task.index, or pass --task");
  }
  role.job = **job;
  role.index = **index;
  return role;
}

// The options the flags ask for. The errors name the flags.
absl::StatusOr<ServerOptions> server_options(const ServerFlags& flags) {
  ServerOptions options;
  PSFLOW_ASSIGN_OR_RETURN(options.tls, tls_options_from_flags(flags.tls));
  options.bind_address = flags.bind;
  options.reuse_port = flags.reuse_port;
  // Checked here too so that the errors name the flags (and MiB never
  // overflow when converted); the bounds are Server::create's.
  if (flags.result_cache_entries < 0 || flags.result_cache_entries > kMaxResultCacheEntries) {
    return absl::InvalidArgumentError(
        absl::StrCat("--result-cache-entries ", flags.result_cache_entries,
                     " is out of range; use 0 (keep none) to ", kMaxResultCacheEntries));
  }
  constexpr int64_t kMaxResultCacheMib = kMaxResultCacheBytes >> 20;
  if (flags.result_cache_mib < 0 || flags.result_cache_mib > kMaxResultCacheMib) {
    return absl::InvalidArgumentError(absl::StrCat("--result-cache-mib ", flags.result_cache_mib,
                                                   " is out of range; use 0 (keep none) to ",
                                                   kMaxResultCacheMib));
  }
  options.result_cache_entries = flags.result_cache_entries;
  options.result_cache_bytes = flags.result_cache_mib << 20;
  constexpr int64_t kMaxValueMib = int64_t{1} << 40;
  if (flags.max_value_mib < 1 || flags.max_value_mib > kMaxValueMib) {
    return absl::InvalidArgumentError(absl::StrCat("--max-value-mib ", flags.max_value_mib,
                                                   " is out of range; use 1 to ", kMaxValueMib));
  }
  options.max_value_bytes = flags.max_value_mib << 20;
  if (flags.max_message_mib < 1 || flags.max_message_mib > 2047) {
    return absl::InvalidArgumentError(absl::StrCat("--max-message-mib ", flags.max_message_mib,
                                                   " is out of range; use 1 to 2047"));
  }
  options.max_message_bytes = static_cast<int>(flags.max_message_mib << 20);
  if (flags.max_buffered_mib < 0 || flags.max_buffered_mib > kMaxValueMib) {
    return absl::InvalidArgumentError(absl::StrCat("--max-buffered-mib ", flags.max_buffered_mib,
                                                   " is out of range; use 0 (the default) to ",
                                                   kMaxValueMib));
  }
  options.max_buffered_bytes = flags.max_buffered_mib << 20;
  if (flags.non_finite_updates == "reject") {
    options.non_finite_updates = NonFinitePolicy::kReject;
  } else if (flags.non_finite_updates == "allow") {
    options.non_finite_updates = NonFinitePolicy::kAllow;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("--non-finite-updates '",
                                                   flags.non_finite_updates,
                                                   "' is not a policy; use reject or allow"));
  }
  return options;
}

// "{chief: 1, ps: 2, worker: 2}".
std::string job_counts(const ClusterSpec& spec) {
  std::vector<std::string> jobs;
  for (const auto& [job, tasks] : spec.as_map()) {
    jobs.push_back(absl::StrCat(job, ": ", tasks.size()));
  }
  return absl::StrCat("{", absl::StrJoin(jobs, ", "), "}");
}

// What --check-config says about the transport: the credentials load (each
// file parses, the key matches, the certificate is signed by the CA and in
// date) and name this task. Empty without credentials (plaintext).
absl::StatusOr<std::string> check_credentials(const TlsOptions& tls, const Role& role) {
  if (tls.empty()) return std::string();
  PSFLOW_ASSIGN_OR_RETURN(TlsFiles files, tls_files(tls, role.job, role.index));
  PSFLOW_ASSIGN_OR_RETURN(TlsCredentials loaded, load_tls_credentials(files));
  PSFLOW_RETURN_IF_ERROR(check_task_common_name(loaded, role.job, role.index));
  return absl::StrCat("credentials ok: ", files.cert_file, " names ", loaded.common_name,
                      ", matches ", files.key_file, ", is signed by ", files.ca_file,
                      " and is valid until ", loaded.not_after);
}

// --check-config: the server's own checks (plan_task, as Server::create),
// preceded by the ParameterServerStrategy checks the chief applies; binds
// nothing.
int check_config(const ServerFlags& flags, const Role& role, const ServerOptions& options) {
  if (absl::Status valid = validate_parameter_server_cluster(role.spec, role.job, role.index);
      !valid.ok()) {
    return usage_error(sv(tf_config_error(valid).message()));
  }
  const std::string task = absl::StrCat(
      flags.cluster_json.empty() ? "TF_CONFIG ok" : "configuration ok", ": this task is ", role.job,
      ":", role.index, " of ", job_counts(role.spec), "; ");
  absl::StatusOr<std::string> credentials = check_credentials(options.tls, role);
  if (!credentials.ok()) return usage_error(sv(credentials.status().message()));
  if (role.job == kChiefJob || role.job == kEvaluatorJob) {
    std::printf("%s%s\n", task.c_str(),
                role.job == kChiefJob
                    ? "it is the coordinator: run it with `psflow train`, which listens on no port"
                    : "it is the evaluator: run it with `psflow eval`, which listens on no port");
    if (!credentials->empty()) std::printf("%s\n", credentials->c_str());
    std::fflush(stdout);
    return kExitOk;
  }
  absl::StatusOr<TaskPlan> plan = plan_task(role.spec, role.job, role.index, options);
  if (!plan.ok()) return usage_error(sv(plan.status().message()));
  std::printf("%sit would listen on %s (%s)\n", task.c_str(), plan->listen.address.c_str(),
              plan->listen.origin.c_str());
  if (!credentials->empty()) std::printf("%s\n", credentials->c_str());
  std::fflush(stdout);
  return kExitOk;
}

int run_server(const ServerFlags& flags, const CLI::App& app) {
  absl::StatusOr<Role> role = resolve_role(flags, app);
  if (!role.ok()) return usage_error(sv(role.status().message()));
  absl::StatusOr<ServerOptions> options = server_options(flags);
  if (!options.ok()) return usage_error(sv(options.status().message()));
  if (flags.check_config) return check_config(flags, *role, *options);
  // The task's own calls (a worker's to the ps) present its certificate too.
  if (absl::Status tls = set_process_tls(options->tls, role->job, role->index); !tls.ok()) {
    return usage_error(sv(tls.message()));
  }
  absl::StatusOr<std::unique_ptr<Server>> server =
      Server::create(role->spec, role->job, role->index, *std::move(options));
  if (!server.ok()) return usage_error(sv(server.status().message()));
  if (absl::Status status = (*server)->start(); !status.ok()) {
    // One line, the reason and the fix (a port in use, ...).
    std::fprintf(stderr, "psflow server: %s\n", std::string(status.message()).c_str());
    return kExitFailure;
  }
  // What this task is, once: its role, where, and which process (a restart
  // shows as a new pid and incarnation at the same address).
  PSFLOW_LOG(Info, "serving ", (*server)->task_name(), " at ", (*server)->target(), " as ",
             role->job == kPsJob ? "a ps (holds variables, applies updates)"
                                 : "a worker (runs the coordinator's scheduled functions)",
             "; pid ", ::getpid(), ", incarnation ", absl::Hex(process_incarnation()));
  std::optional<int> stopped;
  {
    // Signals that arrived before this point are pending and handled now.
    SignalShutdown shutdown;
    (void)shutdown.stop_request().set_activity(
        {"stopping the server (running calls finish)", /*at_once=*/false});
    const StopRequest::Callback stop_server =
        shutdown.stop_request().on_stop([&server](const absl::Status&) { (*server)->stop(); });
    (*server)->join();
    stopped = shutdown.exit_code();
  }
  PSFLOW_LOG(Info, "stopped ", (*server)->task_name());
  return stopped.value_or(kExitOk);
}

}  // namespace

Command add_server_command(CLI::App& parent) {
  return add_command(parent, kServerHelp, add_server_flags, run_server);
}

}  // namespace psflow::internal
