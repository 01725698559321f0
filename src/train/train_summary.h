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
};

// Thread-safety: a value type.
struct TrainSummary {
  std::vector<EpochMetrics> history;
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
  double examples_per_sec = 0.0;
  double wall_seconds = 0.0;
  int num_workers = 0;
  int num_ps = 0;
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
