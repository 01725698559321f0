#include "cli/train_checks.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "rpc/address.h"

namespace psflow::internal {
namespace {

// The flags only the embedded local cluster reads (add_local_cluster_flags),
// but --startup-timeout, which bounds the wait for an external cluster too.
constexpr const char* kLocalClusterOnlyFlags[] = {
    "--num-ps", "--num-workers", "--host", "--log-dir", "--binary", "--max-restarts",
};

}  // namespace

absl::Status check_flags_of_mode(const CLI::App& app, TrainMode mode, std::string_view source) {
  // A flag the command does not declare was not given (app.count would
  // throw).
  auto given = [&app](const char* flag) {
    const CLI::Option* option = app.get_option_no_throw(flag);
    return option != nullptr && option->count() > 0;
  };
  switch (mode) {
    case TrainMode::kLocalCluster: break;
    case TrainMode::kExternalCluster:
      for (const char* flag : kLocalClusterOnlyFlags) {
        if (given(flag)) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag, " configures the embedded local cluster, but the cluster comes from ",
              av(source), " here (", av(source),
              " lists the ps and worker tasks, and each runs `psflow server` with its own "
              "flags); drop ",
              flag, ", or ",
              av(source) == "TF_CONFIG" ? "unset TF_CONFIG" : "drop --cluster-resolver slurm",
              " to train on a local cluster."));
        }
      }
      if (given("--non-finite-updates")) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--non-finite-updates is a ps task's setting, and the ps tasks of the ", av(source),
            " cluster are separate `psflow server` processes: pass it to them "
            "(`psflow server --non-finite-updates ...`) and drop it here."));
      }
      break;
    case TrainMode::kMirrored:
      for (const char* flag : kLocalClusterOnlyFlags) {
        if (given(flag)) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag,
              " configures the ps and worker tasks of --strategy parameter_server; --strategy "
              "mirrored trains in this process, with --replicas replicas and no tasks. Drop ",
              flag, ", or use --strategy parameter_server."));
        }
      }
      for (const char* flag :
           {"--startup-timeout", "--non-finite-updates", "--ps-recovery", "--ps-recovery-timeout",
            "--cluster-resolver", "--slurm-jobs", "--slurm-port-base"}) {
        if (given(flag)) {
          return absl::InvalidArgumentError(absl::StrCat(
              flag,
              " applies to ps and worker tasks (--strategy parameter_server); --strategy mirrored "
              "trains in this process without any. Drop ",
              flag, ", or use --strategy parameter_server."));
        }
      }
      break;
  }
  if (mode != TrainMode::kMirrored && given("--replicas")) {
    return absl::InvalidArgumentError(
        "--replicas is the replica count of --strategy mirrored; with --strategy "
        "parameter_server each worker task is one replica: set --num-workers (or the workers "
        "of the cluster) instead, or add --strategy mirrored.");
  }
  return absl::OkStatus();
}

absl::Status check_local_cluster_flags(const LocalClusterFlags& flags, bool for_training) {
  if (!for_training && flags.num_ps + flags.num_workers < 1) {
    return absl::InvalidArgumentError(
        "--num-ps 0 --num-workers 0 is no cluster; start at least one task (e.g. --num-ps 1 "
        "--num-workers 1).");
  }
  if (for_training && flags.num_ps < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num-ps ", flags.num_ps,
        ": there must be at least one ps (as in TensorFlow's ParameterServerStrategy); use 1 to "
        "256, or --strategy mirrored to train without ps tasks."));
  }
  if (for_training && flags.num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num-workers ", flags.num_workers,
        ": there must be at least one worker (as in TensorFlow's ParameterServerStrategy); use 1 "
        "to 256."));
  }
  if (!is_loopback_host(flags.host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--host ", flags.host,
        " is not a loopback address; the local cluster's tasks serve without authentication, "
        "so they listen on loopback only (use 127.0.0.1 or ::1; across hosts, run `psflow "
        "server` with TF_CONFIG)."));
  }
  if (!flags.log_dir.empty()) return check_writable_dir(flags.log_dir, "--log-dir");
  return absl::OkStatus();
}

absl::Status check_writable_dir(const std::string& dir, std::string_view flag) {
  namespace fs = std::filesystem;
  fs::path path = fs::absolute(fs::path(dir)).lexically_normal();
  // The nearest existing ancestor (or the directory itself) must be a
  // directory this process may create entries in. Bounded by the path's
  // depth.
  fs::path existing = path;
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_parent_path() &&
         existing != existing.parent_path()) {
    existing = existing.parent_path();
  }
  if (!fs::is_directory(existing, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(av(flag), " ", dir, ": ", existing.string(),
                     " is not a directory; choose a directory path (it is created if missing)."));
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    return absl::InvalidArgumentError(absl::StrCat(
        av(flag), " ", dir, " cannot be written: ", existing.string(), " is not writable (",
        std::strerror(error), "); choose a directory you may write, or fix its permissions."));
  }
  return absl::OkStatus();
}

}  // namespace psflow::internal
