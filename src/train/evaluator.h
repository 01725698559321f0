// The evaluator of `psflow eval`: TF's sidecar evaluator. It watches a
// training run's checkpoints and evaluates each new one on the test set,
// reading the checkpoint files only (never the parameter servers), so it
// neither blocks nor slows training (internal).
#ifndef PSFLOW_TRAIN_EVALUATOR_H_
#define PSFLOW_TRAIN_EVALUATOR_H_

#include <cstdio>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/stop_request.h"

namespace psflow::internal {

// Thread-safety: a value type.
struct EvaluatorOptions {
  std::string run_dir;
  // Evaluate the checkpoints present now, then return (no watching).
  bool once = false;
  // Give up watching after this long without training finishing.
  absl::Duration timeout = absl::Hours(24);
  // How often the checkpoint directory is looked at while watching.
  absl::Duration poll_interval = absl::Seconds(1);
  std::FILE* out = stdout;
  // Asked to stop early (a signal; null: never): no checkpoint is started
  // after the request, and run_evaluator returns its reason. Must outlive
  // the run.
  StopRequest* stop = nullptr;
};

// Evaluates every checkpoint of <run_dir>/checkpoints not evaluated yet, in
// step order, with the model <run_dir>/config.json describes (any model,
// any strategy: train/model_registry.h), appending {"checkpoint", "step",
// "test_loss", "test_accuracy", "test_<extra>" (the model's own figures,
// e.g. test_auc), "seconds"} lines to <run_dir>/eval/metrics.jsonl and
// scalars to TensorBoard events in <run_dir>/eval. Unless `once`, keeps
// watching until training has finished (<run_dir>/summary.json exists)
// (while config.json is missing and training has not finished, it waits
// for it; otherwise NOT_FOUND names the file and why it is missing)
// and its last checkpoint is evaluated, saying once on `out` what it waits
// for. Returns how many checkpoints it evaluated. A checkpoint deleted before it was read
// (max_to_keep) is skipped with a warning; a corrupt one is an error naming the file.
[[nodiscard]] absl::StatusOr<int> run_evaluator(const EvaluatorOptions& options);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_EVALUATOR_H_
