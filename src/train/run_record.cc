#include "train/run_record.h"

#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace psflow::internal {
namespace {

using json = nlohmann::json;

// The keys of a history entry that are not the model's extra metrics.
bool is_fixed_epoch_key(const std::string& key) {
  for (const char* k : {"epoch", "train_loss", "train_accuracy", "test_loss", "test_accuracy",
                        "steps", "examples", "seconds", "end_step", "invocation"}) {
    if (key == k) return true;
  }
  return false;
}

EpochMetrics epoch_from_json(const json& e) {
  EpochMetrics m;
  m.epoch = e.value("epoch", 0);
  m.steps = e.value("steps", int64_t{0});
  m.examples = e.value("examples", int64_t{0});
  m.seconds = e.value("seconds", 0.0);
  m.train.loss = e.value("train_loss", 0.0);
  m.train.accuracy = e.value("train_accuracy", 0.0);
  m.test.loss = e.value("test_loss", 0.0);
  m.test.accuracy = e.value("test_accuracy", 0.0);
  m.end_step = e.value("end_step", int64_t{-1});
  m.invocation = e.value("invocation", 0);
  for (const auto& [key, value] : e.items()) {
    if (is_fixed_epoch_key(key) || !value.is_number()) continue;
    if (absl::StartsWith(key, "train_")) m.train.extra.emplace_back(key.substr(6), value);
    if (absl::StartsWith(key, "test_")) m.test.extra.emplace_back(key.substr(5), value);
  }
  return m;
}

Invocation invocation_from_json(const json& i) {
  Invocation inv;
  inv.started = i.value("started", "");
  inv.ended = i.value("ended", kInvocationLost);
  inv.reason = i.value("reason", "");
  inv.options_json = i.contains("options") ? i["options"].dump() : "{}";
  inv.first_epoch = i.value("first_epoch", 1);
  inv.first_step = i.value("first_step", int64_t{0});
  if (i.contains("epochs") && i["epochs"].is_array()) {
    for (const json& e : i["epochs"]) {
      if (e.is_number_integer()) inv.epochs.push_back(e.get<int>());
    }
  }
  inv.steps = i.value("steps", int64_t{0});
  inv.wall_seconds = i.value("wall_seconds", 0.0);
  return inv;
}

// A summary.json written before run_record.json existed: the options were
// top-level fields, and it described the last invocation only.
Invocation legacy_invocation(const json& j) {
  json options = json::object();
  for (const char* key :
       {"model", "strategy", "epochs", "batch_size", "optimizer", "learning_rate", "lr_schedule",
        "seed", "data_dir", "partitioner", "num_ps", "num_workers"}) {
    if (j.contains(key)) options[key] = j[key];
  }
  Invocation inv;
  inv.ended = kInvocationComplete;
  inv.options_json = options.dump();
  inv.first_step = j.value("restored_steps", int64_t{0});
  inv.steps = j.value("steps", int64_t{0}) - inv.first_step;
  inv.wall_seconds = j.value("wall_seconds", 0.0);
  return inv;
}

absl::StatusOr<TrainSummary> record_from_json(const json& j) {
  if (!j.is_object() || !j.contains("history") || !j["history"].is_array()) {
    return absl::InvalidArgumentError("it has no \"history\" list");
  }
  TrainSummary record;
  const bool legacy = !j.contains("invocations");
  int64_t step = j.value("restored_steps", int64_t{0});
  for (const json& e : j["history"]) {
    if (!e.is_object()) return absl::InvalidArgumentError("a history entry is not an object");
    EpochMetrics m = epoch_from_json(e);
    step += m.steps;
    if (m.end_step < 0) m.end_step = step;
    record.history.push_back(std::move(m));
  }
  if (legacy) {
    record.invocations.push_back(legacy_invocation(j));
    for (const EpochMetrics& m : record.history) record.invocations[0].epochs.push_back(m.epoch);
  } else if (j["invocations"].is_array()) {
    for (const json& i : j["invocations"]) {
      if (!i.is_object()) return absl::InvalidArgumentError("an invocation is not an object");
      record.invocations.push_back(invocation_from_json(i));
    }
  }
  record.ps_recoveries = j.value("ps_recoveries", 0);
  record.rolled_back_steps = j.value("rolled_back_steps", int64_t{0});
  return record;
}

}  // namespace

json train_options_json(const TrainOptions& o) {
  return {{"model", o.model},
          {"strategy", o.strategy},
          {"epochs", o.epochs},
          {"batch_size", o.batch_size},
          {"optimizer", o.optimizer},
          {"learning_rate", o.learning_rate},
          {"lr_schedule", o.lr_schedule},
          {"steps_per_execution", o.steps_per_execution},
          {"seed", o.seed},
          {"data_dir", o.data_dir},
          {"partitioner", o.partitioner},
          {"placement", o.placement},
          {"overlap", o.overlap},
          {"ps_recovery", o.ps_recovery},
          {"ps_recovery_timeout_seconds", o.ps_recovery_timeout_seconds},
          {"max_ps_recoveries", o.max_ps_recoveries}};
}

std::string invocation_options_json(const TrainOptions& o, const TrainSummary& run) {
  json options = train_options_json(o);
  options["num_ps"] = run.num_ps;
  options["num_workers"] = run.num_workers;
  if (o.strategy == kMirroredStrategy) options["replicas"] = o.replicas;
  return options.dump();
}

json history_json(const std::vector<EpochMetrics>& history) {
  json out = json::array();
  for (const EpochMetrics& m : history) {
    json epoch = {{"epoch", m.epoch},
                  {"train_loss", m.train.loss},
                  {"train_accuracy", m.train.accuracy},
                  {"test_loss", m.test.loss},
                  {"test_accuracy", m.test.accuracy},
                  {"steps", m.steps},
                  {"examples", m.examples},
                  {"seconds", m.seconds},
                  {"end_step", m.end_step},
                  {"invocation", m.invocation}};
    for (const auto& [name, value] : m.train.extra) epoch["train_" + name] = value;
    for (const auto& [name, value] : m.test.extra) epoch["test_" + name] = value;
    out.push_back(std::move(epoch));
  }
  return out;
}

json invocations_json(const std::vector<Invocation>& invocations) {
  json out = json::array();
  for (const Invocation& inv : invocations) {
    json options = json::parse(inv.options_json, nullptr, /*allow_exceptions=*/false);
    json i = {{"started", inv.started},
              {"ended", inv.ended},
              {"first_epoch", inv.first_epoch},
              {"first_step", inv.first_step},
              {"epochs", inv.epochs},
              {"steps", inv.steps},
              {"wall_seconds", inv.wall_seconds},
              {"options", options.is_object() ? options : json::object()}};
    if (!inv.reason.empty()) i["reason"] = inv.reason;
    out.push_back(std::move(i));
  }
  return out;
}

absl::StatusOr<std::optional<TrainSummary>> load_run_record(const std::string& run_dir) {
  for (const char* name : {kRunRecordFile, kSummaryFile}) {
    const std::string path = absl::StrCat(run_dir, "/", name);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    std::ifstream in(path);
    const json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
    absl::StatusOr<TrainSummary> record =
        j.is_discarded() ? absl::InvalidArgumentError("it is not JSON") : record_from_json(j);
    if (!record.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read the run's record ", path, ": ", record.status().message(),
                       "; move it away to start a new record, or use another --run-dir"));
    }
    return std::optional<TrainSummary>(*std::move(record));
  }
  return std::nullopt;
}

json last_invocation_options(const TrainSummary& record) {
  if (record.invocations.empty()) return json::object();
  json options =
      json::parse(record.invocations.back().options_json, nullptr, /*allow_exceptions=*/false);
  return options.is_object() ? options : json::object();
}

void carry_on(const TrainSummary& record, int64_t restored_steps, TrainSummary& run) {
  for (const EpochMetrics& m : record.history) {
    if (m.end_step <= restored_steps && restored_steps > 0) run.history.push_back(m);
  }
  run.invocations = record.invocations;
  for (Invocation& inv : run.invocations) {
    if (inv.ended == kInvocationRunning) inv.ended = kInvocationLost;
  }
  run.ps_recoveries += record.ps_recoveries;
  run.rolled_back_steps += record.rolled_back_steps;
}

}  // namespace psflow::internal
