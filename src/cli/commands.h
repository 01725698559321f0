// The subcommands of the psflow program; main.cc only dispatches.
#ifndef PSFLOW_CLI_COMMANDS_H_
#define PSFLOW_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "psflow/local_cluster.h"

namespace psflow::internal {

// Process exit codes shared by the subcommands.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;  // Could not do the work (e.g. port in use).
inline constexpr int kExitUsage = 2;    // Bad flags or configuration.

// A registered subcommand and what to run when it was chosen.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// What --help says of a subcommand: its name, one line of description, and
// the text after its flags.
// Thread-safety: a value type.
struct CommandHelp {
  const char* name;
  const char* description;
  const char* footer;
};

// Adds the subcommand `help` describes, with flags of type Flags that
// `add_flags` declares: the parser fills them, and `run` reads them once the
// subcommand was chosen; `run` may also take the parsed app, to tell which
// flags were given (app.count).
template <typename Flags, typename Run>
[[nodiscard]] Command add_command(CLI::App& parent, const CommandHelp& help,
                                  void (*add_flags)(CLI::App&, Flags&), Run run) {
  auto flags = std::make_shared<Flags>();
  CLI::App* app = parent.add_subcommand(help.name, help.description);
  app->footer(help.footer);
  add_flags(*app, *flags);
  if constexpr (std::is_invocable_v<Run, const Flags&, const CLI::App&>) {
    return Command{app, [flags, run, app] { return run(*flags, *app); }};
  } else {
    return Command{app, [flags, run] { return run(*flags); }};
  }
}

[[nodiscard]] Command add_server_command(CLI::App& parent);
[[nodiscard]] Command add_local_cluster_command(CLI::App& parent);
[[nodiscard]] Command add_train_command(CLI::App& parent);
[[nodiscard]] Command add_eval_command(CLI::App& parent);
[[nodiscard]] Command add_version_command(CLI::App& parent);
[[nodiscard]] Command add_status_command(CLI::App& parent);
[[nodiscard]] Command add_certs_command(CLI::App& parent);
[[nodiscard]] Command add_datagen_command(CLI::App& parent);

// Flags shared by `local-cluster` and `train`.
struct LocalClusterFlags {
  int num_ps = 2;
  int num_workers = 2;
  std::string host = "127.0.0.1";
  std::string log_dir;
  double startup_timeout_seconds = 30;
  std::string binary;
  int max_restarts = 0;
  std::string non_finite_updates = "reject";
};
void add_local_cluster_flags(CLI::App& command, LocalClusterFlags& flags);
[[nodiscard]] LocalClusterOptions to_local_cluster_options(const LocalClusterFlags& flags);

// One line per task, "<job> <index> <address> pid=<pid>", ps tasks first;
// flushed.
void print_tasks(const LocalCluster& cluster, std::FILE* out);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_COMMANDS_H_
