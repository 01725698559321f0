// `psflow server --python MODULE`: a worker that runs Python step functions
// (@psflow.function) is a Python process hosting the task, so this command
// line becomes `python3 -m psflow.server --python MODULE <the other flags>`
// in the same process (exec). The psflow package and MODULE must be
// importable by that interpreter: $PSFLOW_PYTHON, else /usr/bin/python3,
// else python3 on PATH.
#ifndef PSFLOW_CLI_PYTHON_SERVER_H_
#define PSFLOW_CLI_PYTHON_SERVER_H_

#include <optional>

namespace psflow::internal {

// When argv is `<program> server ... --python MODULE ...` (or
// --python=MODULE) for a task that is not a ps (--job, else TF_CONFIG),
// replaces this process with the Python task; returns only when that
// fails, with the exit code (1, the reason on stderr). Otherwise returns
// nullopt and changes nothing (a ps serves as usual, ignoring --python).
[[nodiscard]] std::optional<int> exec_python_server_if_asked(int argc, char** argv);

}  // namespace psflow::internal

#endif  // PSFLOW_CLI_PYTHON_SERVER_H_
