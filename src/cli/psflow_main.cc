// psflow_main and run_task_if_started_as_one (psflow/main.h): the command
// line, one binary for every role, chosen by subcommand.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/logging.h"
#include "base/version.h"
#include "cli/commands.h"
#include "cli/python_server.h"
#include "cli/signals.h"
#include "psflow/main.h"

namespace psflow {

using internal::add_eval_command;
using internal::add_local_cluster_command;
using internal::add_server_command;
using internal::add_train_command;
using internal::add_version_command;
using internal::block_termination_signals;
using internal::Command;
using internal::kExitOk;
using internal::kExitUsage;
using internal::version;

namespace {

// What every role needs before it starts a thread.
void prepare_process() {
  // Before anything starts a thread (see block_termination_signals).
  block_termination_signals();
  // Debian builds abseil with mutex deadlock detection on: it records every
  // lock order in a global graph, 1-3% of a ps's CPU under load (see
  // docs/benchmarks.md). Unit tests (which link their own mains) keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Reads PSFLOW_LOG_LEVEL now, so that a bad value is warned about at
  // start rather than at the first log line.
  (void)internal::min_log_level();
}

// Parses the command line. nullopt when a subcommand is to run; else the
// exit status: 0 after --help or --version, kExitUsage (2) after any parse
// error (CLI11's own codes, 105-109, would tell a caller nothing: every
// refused command line is a usage error, as for the checks of the values).
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int> run_task_if_started_as_one(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "server") return std::nullopt;
  if (std::optional<int> failed = internal::exec_python_server_if_asked(argc, argv)) return *failed;
  prepare_process();
  CLI::App app("A psflow task: serves one ps or worker task of a cluster.");
  app.require_subcommand(1);
  const Command server = add_server_command(app);
  if (std::optional<int> parsed = parse_command_line(app, argc, argv)) return *parsed;
  return server.run();
}

int psflow_main(int argc, char** argv) {
  if (std::optional<int> failed = internal::exec_python_server_if_asked(argc, argv)) return *failed;
  prepare_process();

  CLI::App app(
      "psflow: asynchronous parameter-server training (TensorFlow's "
      "ParameterServerStrategy, native).\nRun `psflow train` to train on an embedded local "
      "cluster; `psflow <command> --help` for details.",
      "psflow");
  app.set_version_flag("--version", std::string(version()));
  app.require_subcommand(1);
  const std::vector<Command> commands = {
      add_train_command(app),           add_eval_command(app),
      add_server_command(app),          add_local_cluster_command(app),
      add_version_command(app),         internal::add_status_command(app),
      internal::add_certs_command(app), internal::add_datagen_command(app),
  };
  if (std::optional<int> parsed = parse_command_line(app, argc, argv)) return *parsed;
  for (const Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return kExitUsage;
}

}  // namespace psflow
