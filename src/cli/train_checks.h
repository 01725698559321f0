// The checks `psflow train` makes before it starts anything or writes
// anything: flags that the chosen mode would ignore, the local cluster's
// size, and whether the run directory can be written.
#ifndef PSFLOW_CLI_TRAIN_CHECKS_H_
#define PSFLOW_CLI_TRAIN_CHECKS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "cli/commands.h"

namespace psflow::internal {

// Where `psflow train` trains.
enum class TrainMode {
  kLocalCluster,     // parameter_server on the embedded local cluster
  kExternalCluster,  // parameter_server on TF_CONFIG's or Slurm's cluster
  kMirrored,         // synchronous replicas in this process
};

// INVALID_ARGUMENT naming the flag, the mode and the fix when `app` was
// given a flag that `mode` would ignore: the local cluster's flags
// (--num-ps, --num-workers, --host, --log-dir, --binary, --max-restarts,
// --non-finite-updates; with kMirrored also --startup-timeout) outside
// kLocalCluster, --replicas outside kMirrored, the ps-recovery flags with
// kMirrored. `source` names the external cluster ("TF_CONFIG", "Slurm").
[[nodiscard]] absl::Status check_flags_of_mode(const CLI::App& app, TrainMode mode,
                                               std::string_view source);

// The embedded local cluster's flags, checked before it starts:
// INVALID_ARGUMENT naming the flag unless there is at least one ps and one
// worker (`for_training`: TensorFlow's ParameterServerStrategy needs both)
// or at least one task, --host is a loopback address (the tasks serve
// without authentication) and --log-dir (when given) can be written.
[[nodiscard]] absl::Status check_local_cluster_flags(const LocalClusterFlags& flags,
                                                     bool for_training);

// OK when `dir` could be created or written by this process: it is a
// writable directory, or its nearest existing ancestor is. Creates nothing.
// INVALID_ARGUMENT naming `flag`, the directory and why otherwise.
[[nodiscard]] absl::Status check_writable_dir(const std::string& dir, std::string_view flag);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_TRAIN_CHECKS_H_
