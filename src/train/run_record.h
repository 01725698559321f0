// The record of a run directory across the invocations of `psflow train`
// on it (internal): every epoch trained and every invocation, kept in
// <run_dir>/run_record.json, rewritten atomically when an invocation starts,
// after each epoch and when it ends (complete, stopped by a signal, or
// failed), so that the next invocation carries the history on even when
// this one is killed. summary.json, written when the run completes, is the
// same document.
#ifndef PSFLOW_TRAIN_RUN_RECORD_H_
#define PSFLOW_TRAIN_RUN_RECORD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json_fwd.hpp"
#include "train/train_options.h"
#include "train/train_summary.h"

namespace psflow::internal {

inline constexpr char kRunRecordFile[] = "run_record.json";
inline constexpr char kSummaryFile[] = "summary.json";

// Every TrainOptions field that shapes a run, as a JSON object (the one
// list of them: summary.json's top level and each invocation's options).
[[nodiscard]] nlohmann::json train_options_json(const TrainOptions& options);

// The options an invocation ran with, as a JSON object: every TrainOptions
// field that shapes the run, and the cluster `run` describes (num_ps,
// num_workers; replicas for the mirrored strategy).
[[nodiscard]] std::string invocation_options_json(const TrainOptions& options,
                                                  const TrainSummary& run);

// summary.json's "history" and "invocations".
[[nodiscard]] nlohmann::json history_json(const std::vector<EpochMetrics>& history);
[[nodiscard]] nlohmann::json invocations_json(const std::vector<Invocation>& invocations);

// The record of the run in `run_dir`: run_record.json, else the
// summary.json of a run made before run_record.json existed (then one
// "complete" invocation with summary.json's options); nullopt when there is
// neither. INVALID_ARGUMENT naming the file when it cannot be read as one,
// with the fix.
[[nodiscard]] absl::StatusOr<std::optional<TrainSummary>> load_run_record(
    const std::string& run_dir);

// The options (a JSON object) of the invocation that trained last, or an
// empty object.
[[nodiscard]] nlohmann::json last_invocation_options(const TrainSummary& record);

// What a new invocation resuming from a checkpoint of `restored_steps`
// steps carries on from `record` into `run`: the epochs that checkpoint
// holds (end_step <= restored_steps: none on a fresh start), every
// invocation (one still "running" is marked "lost": it ended without a
// word), and the ps recoveries with their rolled-back steps.
void carry_on(const TrainSummary& record, int64_t restored_steps, TrainSummary& run);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_RUN_RECORD_H_
