// The psflow program: one binary for every role, chosen by subcommand.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/version.h"
#include "cli/commands.h"
#include "cli/signals.h"

int main(int argc, char** argv) {
  // Before anything starts a thread (see block_termination_signals).
  psflow::block_termination_signals();
  // Debian builds abseil with mutex deadlock detection on: it records every
  // lock order in a global graph, 1-3% of a ps's CPU under load (see
  // docs/benchmarks.md). Unit tests (which link their own mains) keep it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);

  CLI::App app(
      "psflow: asynchronous parameter-server training (TensorFlow's "
      "ParameterServerStrategy, native).\nRun `psflow train` to train on an embedded local "
      "cluster; `psflow <command> --help` for details.",
      "psflow");
  app.set_version_flag("--version", std::string(psflow::version()));
  app.require_subcommand(1);
  const std::vector<psflow::Command> commands = {
      psflow::add_train_command(app),
      psflow::add_eval_command(app),
      psflow::add_server_command(app),
      psflow::add_local_cluster_command(app),
      psflow::add_version_command(app),
  };
  CLI11_PARSE(app, argc, argv);
  for (const psflow::Command& command : commands) {
    if (command.app->parsed()) return command.run();
  }
  return psflow::kExitUsage;
}
