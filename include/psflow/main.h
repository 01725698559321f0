// Programs of your own as every task of a cluster.
//
// TensorFlow runs "the same binary for all tasks": the coordinator's
// program also serves as each ps and worker, so that the functions it
// registers (PSFLOW_FUNCTION) exist on the workers. A psflow program does
// the same by calling run_task_if_started_as_one() first thing in main():
//
//   PSFLOW_FUNCTION(train_step, ctx, args) { ... }
//
//   int main(int argc, char** argv) {
//     if (std::optional<int> code = psflow::run_task_if_started_as_one(argc, argv)) {
//       return *code;  // this process was a ps or worker task
//     }
//     // The coordinator: LocalCluster::start (it starts this same program
//     // as each task), or TF_CONFIG with "chief", then the strategy,
//     // variables, ClusterCoordinator...
//   }
//
// examples/custom_training_loop.cc is a complete program built this way.
#ifndef PSFLOW_MAIN_H_
#define PSFLOW_MAIN_H_

#include <optional>

namespace psflow {

// When the program was started as a task (`<program> server [flags]`, the
// way LocalCluster, `psflow local-cluster --binary` and cluster manifests
// start tasks, with the role from TF_CONFIG or the flags of `psflow server
// --help`), serves that task until SIGTERM or SIGINT and returns the exit
// code (128+signal after the clean stop the signal asks for: 143 for
// SIGTERM, 130 for SIGINT; 2 for bad flags or TF_CONFIG, with the error on
// stderr). Otherwise returns nullopt and changes nothing. Call it before
// the program starts any thread: a task blocks the termination signals in
// every thread and waits for them on one of its own.
[[nodiscard]] std::optional<int> run_task_if_started_as_one(int argc, char** argv);

// The whole psflow command line (train, eval, server, local-cluster,
// version) in a program of your own; returns the exit code. `train` and
// `eval` need the built-in models' functions, which only psflow's own build
// links in (its object library psflow_train_functions, not installed).
[[nodiscard]] int psflow_main(int argc, char** argv);

}  // namespace psflow

#endif  // PSFLOW_MAIN_H_
