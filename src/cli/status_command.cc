// `psflow status`: the task states of a running chief (TF's coordination
// service get_task_states), read from its status service.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cli/commands.h"
#include "coordinator/status_server.h"
#include "train/status_endpoint.h"

namespace psflow::internal {
namespace {

struct StatusFlags {
  std::string run_dir;
  std::string address;
  std::vector<std::string> tasks;
  double timeout_seconds = 5;
};

constexpr CommandHelp kStatusHelp = {
    "status", "Show the task states of a running psflow train (its chief)",
    R"(Asks the coordinator of a running `psflow train --run-dir DIR` for the state
of every worker and ps task, as its heartbeats see them (TF's
get_task_states): one line per task, "<task> healthy" or "<task> <error>", the
error naming why the task is unavailable. The chief serves the states on
loopback and writes the address to DIR/status_address; --address reads them
from that address instead.

Exit status: 0 when every task is healthy, 1 when some task is not or no chief
answers, 2 for bad flags.)"};

void add_status_flags(CLI::App& app, StatusFlags& flags) {
  auto* run_dir =
      app.add_option("--run-dir", flags.run_dir, "The run directory of a running psflow train");
  auto* address =
      app.add_option("--address", flags.address,
                     "host:port of the chief's status service (see DIR/status_address)");
  run_dir->excludes(address);
  address->excludes(run_dir);
  app.add_option("--task", flags.tasks,
                 "Only this task, e.g. /job:worker/replica:0/task:1 (repeatable)");
  app.add_option("--timeout", flags.timeout_seconds, "Seconds to wait for the chief's answer")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 3600.0));
}

// The address <run_dir>/status_address holds.
absl::StatusOr<std::string> address_in(const std::string& run_dir) {
  const std::string path = absl::StrCat(run_dir, "/", kStatusAddressFile);
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat(
        path, " does not exist: no psflow train --run-dir ", run_dir,
        " is running there (the chief writes it once its coordinator is up and removes it "
        "when it stops)"));
  }
  std::string line;
  std::getline(in, line);
  line = std::string(absl::StripAsciiWhitespace(line));
  if (line.empty()) return absl::InvalidArgumentError(absl::StrCat(path, " is empty"));
  return line;
}

int run_status(const StatusFlags& flags) {
  if (flags.run_dir.empty() == flags.address.empty()) {
    std::fprintf(stderr, "psflow status: give --run-dir DIR or --address HOST:PORT\n");
    return kExitUsage;
  }
  absl::StatusOr<std::string> address =
      flags.address.empty() ? address_in(flags.run_dir) : flags.address;
  if (!address.ok()) {
    std::fprintf(stderr, "psflow status: %s\n", address.status().ToString().c_str());
    return kExitFailure;
  }
  absl::StatusOr<std::vector<TaskState>> states =
      fetch_task_states(*address, absl::Now() + absl::Seconds(flags.timeout_seconds), flags.tasks);
  if (!states.ok()) {
    std::fprintf(stderr, "psflow status: %s\n", states.status().ToString().c_str());
    return absl::IsInvalidArgument(states.status()) ? kExitUsage : kExitFailure;
  }
  bool all_healthy = true;
  for (const TaskState& state : *states) {
    const std::string restarts =
        state.restarts == 0 ? "" : absl::StrCat(" (restarted ", state.restarts, " time(s))");
    if (state.healthy()) {
      std::printf("%s healthy%s\n", state.task.c_str(), restarts.c_str());
    } else {
      all_healthy = false;
      std::printf("%s %s%s\n", state.task.c_str(), state.error.ToString().c_str(),
                  restarts.c_str());
    }
  }
  std::fflush(stdout);
  return all_healthy ? kExitOk : kExitFailure;
}

}  // namespace

Command add_status_command(CLI::App& parent) {
  return add_command(parent, kStatusHelp, add_status_flags, run_status);
}

}  // namespace psflow::internal
