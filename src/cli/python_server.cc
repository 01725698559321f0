#include "cli/python_server.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/cluster_resolver.h"

namespace psflow::internal {
namespace {

// The --job flag's value, else TF_CONFIG's task type; nullopt when neither
// says (a Slurm step, a malformed TF_CONFIG: the server reports those).
std::optional<std::string> task_job(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") break;
    if (arg == "--job" && i + 1 < argc) return std::string(argv[i + 1]);
    if (arg.starts_with("--job=")) return std::string(arg.substr(6));
  }
  if (!TFConfigClusterResolver().is_configured()) return std::nullopt;
  absl::StatusOr<std::optional<std::string>> type = TFConfigClusterResolver().task_type();
  if (!type.ok()) return std::nullopt;
  return *type;
}

bool asks_for_python(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view arg(argv[i]);
    if (arg == "--") return false;
    if (arg == "--python" || arg.starts_with("--python=")) return true;
  }
  return false;
}

std::string python_executable() {
  if (const char* env = std::getenv("PSFLOW_PYTHON"); env != nullptr && *env != '\0') return env;
  if (access("/usr/bin/python3", X_OK) == 0) return "/usr/bin/python3";
  return "python3";
}

}  // namespace

std::optional<int> exec_python_server_if_asked(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) != "server" || !asks_for_python(argc, argv)) {
    return std::nullopt;
  }
  // A ps runs no steps: it serves from this process (which accepts and
  // ignores --python).
  if (task_job(argc, argv) == "ps") return std::nullopt;
  std::string python = python_executable();
  std::string dash_m = "-m";
  std::string module = "psflow.server";
  std::vector<char*> args = {python.data(), dash_m.data(), module.data()};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execvp(python.c_str(), args.data());
  std::fprintf(stderr,
               "psflow server --python: cannot run %s (%s); set PSFLOW_PYTHON to a python3 "
               "that can import psflow\n",
               python.c_str(), std::strerror(errno));
  return 1;
}

}  // namespace psflow::internal
