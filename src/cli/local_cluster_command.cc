// `psflow local-cluster`: ps and worker tasks on loopback until SIGTERM/SIGINT.
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>

#include "base/logging.h"
#include "cli/commands.h"
#include "cli/local_cluster_session.h"
#include "cli/signals.h"
#include "cli/tls_flags.h"
#include "cli/train_checks.h"

namespace psflow::internal {

void add_local_cluster_flags(CLI::App& command, LocalClusterFlags& flags) {
  command.add_option("--num-ps", flags.num_ps, "Number of ps tasks")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  command.add_option("--num-workers", flags.num_workers, "Number of worker tasks")
      ->capture_default_str()
      ->check(CLI::Range(0, 256));
  command.add_option("--host", flags.host, "Loopback address the tasks listen on")
      ->capture_default_str();
  command.add_option("--log-dir", flags.log_dir,
                     "Directory for one log file per task (<job>-<index>.log); default: "
                     "the tasks log to this program's stderr");
  command
      .add_option("--startup-timeout", flags.startup_timeout_seconds,
                  "Seconds every task has to become healthy")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command
      .add_option("--max-restarts", flags.max_restarts,
                  "Restart a task that dies, on the same address, at most this many times")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  command.add_option("--binary", flags.binary,
                     "psflow binary the tasks run (default: this program)");
  command
      .add_option("--non-finite-updates", flags.non_finite_updates,
                  "What the ps tasks do with updates holding NaN or infinity: reject (the "
                  "step fails naming the variable) or allow (applied, as TensorFlow does)")
      ->capture_default_str()
      ->check(CLI::IsMember({"reject", "allow"}));
}

LocalClusterOptions to_local_cluster_options(const LocalClusterFlags& flags) {
  LocalClusterOptions options;
  options.num_ps = flags.num_ps;
  options.num_workers = flags.num_workers;
  options.host = flags.host;
  options.log_dir = flags.log_dir;
  options.startup_timeout = absl::Seconds(flags.startup_timeout_seconds);
  options.binary_path = flags.binary;
  options.max_restarts = flags.max_restarts;
  options.server_flags = {"--non-finite-updates=" + flags.non_finite_updates};
  return options;
}

void print_tasks(const LocalCluster& cluster, std::FILE* out) {
  const ClusterSpec& spec = cluster.cluster_spec();
  for (std::string_view job : {kPsJob, kWorkerJob}) {
    for (int index : spec.task_indices(job)) {
      absl::StatusOr<std::string> address = spec.task_address(job, index);
      absl::StatusOr<pid_t> pid = cluster.pid(job, index);
      std::fprintf(out, "%.*s %d %s pid=%d\n", static_cast<int>(job.size()), job.data(), index,
                   address.ok() ? address->c_str() : "?", pid.ok() ? static_cast<int>(*pid) : -1);
    }
  }
  std::fflush(out);
}

namespace {

// Thread-safety: a value type.
struct LocalClusterCommandFlags {
  LocalClusterFlags cluster;
  TlsFlags tls;
};

void add_local_cluster_command_flags(CLI::App& command, LocalClusterCommandFlags& flags) {
  add_local_cluster_flags(command, flags.cluster);
  add_tls_flags(command, flags.tls);
}

constexpr CommandHelp kLocalClusterHelp = {
    "local-cluster", "Run ps and worker tasks on loopback until SIGTERM or SIGINT",
    R"(Starts the tasks as child processes, prints one line per task on stdout,
  <job> <index> <address> pid=<pid>
then a line "ready" once every task answers health checks, and keeps them
running until SIGTERM or SIGINT. The tasks die with this process, even when it
is killed with SIGKILL.

Stopping: on the first SIGTERM or SIGINT it stops its tasks (SIGTERM, then
SIGKILL after 3 s) and exits within 10 s with status 128+signal (143 for
SIGTERM, 130 for SIGINT); during start-up it exits at once. A second signal
exits at once.

Transport security: every connection is mutual TLS with a fresh CA and one
certificate per task made for this run in a private temporary directory
(removed at the end); --tls-dir DIR uses the certificates `psflow certs`
wrote there instead, --insecure runs plaintext.)"};

int run_local_cluster(const LocalClusterCommandFlags& command_flags) {
  const LocalClusterFlags& flags = command_flags.cluster;
  const TlsFlags& tls = command_flags.tls;
  // Before anything starts or is written.
  absl::Status checked = check_local_cluster_flags(flags, /*for_training=*/false);
  if (checked.ok() && (!tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty())) {
    checked = absl::InvalidArgumentError(
        "--tls-ca/--tls-cert/--tls-key name one task's files; a local cluster needs one "
        "certificate per task: pass --tls-dir DIR (from `psflow certs`), or nothing for a fresh "
        "CA for this run");
  }
  if (checked.ok() && tls.insecure && !tls.dir.empty()) {
    checked = absl::InvalidArgumentError("--insecure and --tls-dir do not combine; drop one");
  }
  if (!checked.ok()) {
    std::fprintf(stderr, "psflow local-cluster: %s\n", std::string(checked.message()).c_str());
    return kExitUsage;
  }
  SignalShutdown shutdown;
  StopRequest& stop = shutdown.stop_request();
  {
    LocalClusterSession session(shutdown);
    LocalClusterOptions options = to_local_cluster_options(flags);
    options.tls_dir = tls.dir;
    options.insecure = tls.insecure;
    absl::StatusOr<LocalCluster*> cluster = session.start(options);
    if (!cluster.ok()) {
      if (shutdown.exit_code().has_value()) return *shutdown.exit_code();
      std::fprintf(stderr, "psflow local-cluster: %s\n",
                   std::string(cluster.status().message()).c_str());
      return absl::IsInvalidArgument(cluster.status()) ? kExitUsage : kExitFailure;
    }
    PSFLOW_LOG(Info, "cluster: ", (*cluster)->cluster_spec().to_json());
    print_tasks(**cluster, stdout);
    std::fputs("ready\n", stdout);
    std::fflush(stdout);
    if (stop.set_activity({"serving", /*at_once=*/false})) {
      // Bounded by the process's life: serving is what it is for.
      while (!stop.wait_for(absl::Hours(1))) {
      }
    }
  }  // Stops the tasks.
  return shutdown.exit_code().value_or(kExitOk);
}

}  // namespace

Command add_local_cluster_command(CLI::App& parent) {
  return add_command(parent, kLocalClusterHelp, add_local_cluster_command_flags, run_local_cluster);
}

}  // namespace psflow::internal
