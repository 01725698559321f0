// What a run of `psflow train` reports, whatever the model (internal): the
// figures of every epoch and of the whole run.
#ifndef PSFLOW_TRAIN_TRAIN_SUMMARY_H_
#define PSFLOW_TRAIN_TRAIN_SUMMARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace psflow::internal {

// A model's figures on one side of an epoch: its training batches or the
// test set. `extra` are the model's metrics beyond loss and accuracy (e.g.
// "auc"), in the order the epoch line prints them.
// Thread-safety: a value type.
struct ModelMetrics {
  double loss = 0.0;
  double accuracy = 0.0;
  std::vector<std::pair<std::string, double>> extra;

  // The extra metric `name`, if the model has it.
  [[nodiscard]] std::optional<double> find(std::string_view name) const {
    for (const auto& [n, value] : extra) {
      if (n == name) return value;
    }
    return std::nullopt;
  }
};

// One epoch. Thread-safety: a value type.
struct EpochMetrics {
  int epoch = 0;
  int64_t steps = 0;
  int64_t examples = 0;  // trained on
  double seconds = 0.0;  // of training, evaluation not included
  ModelMetrics train;
  ModelMetrics test;
  // The run's global step at its end (the model's training steps, across
  // resumes) and the invocation that trained it (an index into
  // TrainSummary::invocations).
  int64_t end_step = 0;
  int invocation = 0;
};

// How an invocation of `psflow train` on a run directory ended.
inline constexpr char kInvocationRunning[] = "running";
inline constexpr char kInvocationComplete[] = "complete";  // trained every epoch asked for
inline constexpr char kInvocationStopped[] = "stopped";    // by a signal
inline constexpr char kInvocationFailed[] = "failed";
// Found still "running" by the next invocation: it ended without a word
// (SIGKILL, a crash, the machine lost).
inline constexpr char kInvocationLost[] = "lost";

// One `psflow train` process that trained on the run directory.
// Thread-safety: a value type.
struct Invocation {
  std::string started;  // UTC, RFC 3339
  std::string ended = kInvocationRunning;
  std::string reason;        // why it stopped or failed
  std::string options_json;  // the options it ran with, a JSON object
  int first_epoch = 1;
  int64_t first_step = 0;   // the global step it started from (restored)
  std::vector<int> epochs;  // the epochs it completed (and kept)
  int64_t steps = 0;        // steps it applied, rolled back ones included
  double wall_seconds = 0.0;
};

// Thread-safety: a value type.
struct TrainSummary {
  // Every epoch of the run, across invocations, oldest first.
  std::vector<EpochMetrics> history;
  // Every invocation that trained on the run directory, oldest first; the
  // last is this one.
  std::vector<Invocation> invocations;
  double test_accuracy = 0.0;
  double test_loss = 0.0;
  int epochs = 0;
  // Training steps the model had at the end: those of the checkpoint the
  // run resumed from (restored_steps) and those it trained; equal to
  // optimizer_iterations (every step applied exactly once).
  int64_t steps = 0;
  int64_t restored_steps = 0;
  // The run directory held a run that had finished every epoch asked for:
  // nothing was trained, and its records (summary.json, TensorBoard
  // events) were left as they were. The test figures are the restored
  // model's, evaluated again.
  bool already_complete = false;
  // Over the whole run: the history's examples per second of training,
  // and the invocations' wall time.
  double examples_per_sec = 0.0;
  double wall_seconds = 0.0;
  int num_workers = 0;
  int num_ps = 0;
  // Bytes of the model's variables (and the optimizer's iterations) on each
  // ps task, by index, as placed at the start; empty without ps tasks.
  std::vector<int64_t> ps_bytes;
  int replicas = 0;  // mirrored only
  // The optimizer's `iterations` on the ps at the end: updates actually
  // applied (exactly once each), across resumes.
  int64_t optimizer_iterations = 0;
  // Parameter-server recoveries (TrainOptions::ps_recovery) and the
  // completed steps they rolled back (trained again afterwards).
  int ps_recoveries = 0;
  int64_t rolled_back_steps = 0;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_TRAIN_SUMMARY_H_
