#include "train/evaluator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "psflow/checkpoint.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/event_writer.h"
#include "train/model_registry.h"
#include "train/run_files.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;

// Why <run_dir>/config.json is missing, as precisely as the directory tells.
absl::Status missing_config(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kRunConfigFile;
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("the run directory ", run_dir,
                                            " does not exist; pass the --run-dir that psflow "
                                            "train was given"));
  }
  std::vector<std::string> held;
  if (fs::exists(run_dir + "/summary.json", ec)) held.push_back("summary.json");
  if (fs::exists(run_dir + "/checkpoints", ec)) held.push_back("checkpoints/");
  if (held.empty()) {
    return absl::NotFoundError(absl::StrCat(
        path, " does not exist: ", run_dir, " holds no psflow train run (train writes ",
        kRunConfigFile,
        ", which names the model and its data, when training starts); pass the --run-dir "
        "that psflow train was given"));
  }
  return absl::NotFoundError(absl::StrCat(
      path, " does not exist, although ", run_dir, " holds a training run (",
      absl::StrJoin(held, ", "), "): the psflow train that made it wrote no ", kRunConfigFile,
      " (before this version, wide_deep and --strategy mirrored runs wrote none), and without "
      "it the evaluator does not know the model and its data. Rerun the same psflow train "
      "command with --run-dir ",
      run_dir, " (it writes ", kRunConfigFile,
      ", then resumes or says the run is complete), then psflow eval again"));
}

absl::StatusOr<ConfiguredModel> read_run_config(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kRunConfigFile;
  std::ifstream file(path);
  if (!file) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return missing_config(run_dir);
    return absl::PermissionDeniedError(absl::StrCat("cannot read ", path));
  }
  std::stringstream text;
  text << file.rdbuf();
  return make_model_from_run_config(text.str(), path);
}

// The step of "ckpt-<N>", or -1 for other names (temporary directories).
int64_t checkpoint_step(const fs::path& path) {
  const std::string name = path.filename().string();
  int64_t step = -1;
  if (name.rfind("ckpt-", 0) != 0 || !absl::SimpleAtoi(name.substr(5), &step)) return -1;
  return step;
}

std::map<int64_t, std::string> list_checkpoints(const std::string& dir) {
  std::map<int64_t, std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t step = checkpoint_step(it->path());
    if (step >= 0 && it->is_directory()) out.emplace(step, it->path().string());
  }
  return out;
}

// Waits `interval`, or less when a stop is requested meanwhile: its reason
// then.
absl::Status pause(const EvaluatorOptions& options, absl::Duration interval) {
  if (options.stop == nullptr) {
    absl::SleepFor(interval);
    return absl::OkStatus();
  }
  if (options.stop->wait_for(interval)) return options.stop->reason();
  return absl::OkStatus();
}

absl::Status stop_reason(const EvaluatorOptions& options) {
  return options.stop != nullptr ? options.stop->reason() : absl::OkStatus();
}

// Says once, on options.out, what the evaluator waits for.
void say(const EvaluatorOptions& options, bool& said, const std::string& what) {
  if (said || options.out == nullptr) return;
  said = true;
  std::fprintf(options.out, "eval: %s\n", what.c_str());
  std::fflush(options.out);
}

}  // namespace

absl::StatusOr<int> run_evaluator(const EvaluatorOptions& options) {
  const absl::Time give_up = absl::Now() + options.timeout;
  // Started beside a training run that has not written its config yet:
  // wait for it (a sidecar may well start first). Bounded by give_up.
  bool said_waiting = false;
  // A finished run (summary.json) without one will never write it.
  while (!options.once && !fs::exists(options.run_dir + "/" + kRunConfigFile) &&
         !fs::exists(options.run_dir + "/summary.json") && absl::Now() < give_up) {
    say(options, said_waiting,
        absl::StrCat("waiting for ", options.run_dir, "/", kRunConfigFile,
                     " (training has not started yet)"));
    PSFLOW_RETURN_IF_ERROR(pause(options, options.poll_interval));
  }
  PSFLOW_RETURN_IF_ERROR(stop_reason(options));
  PSFLOW_ASSIGN_OR_RETURN(ConfiguredModel configured, read_run_config(options.run_dir));
  Model& model = *configured.model;
  PSFLOW_RETURN_IF_ERROR(model.load(configured.options));
  // Variables in this process (outside any strategy scope), shaped like the
  // model's, that each checkpoint is restored into under the names every
  // run saves them with (Model::parameter_names).
  PSFLOW_ASSIGN_OR_RETURN(std::vector<ShardedVariable> vars,
                          model.create_variables(configured.options.seed));
  const std::vector<std::string> names = model.parameter_names();
  std::map<std::string, ShardedVariable> named;
  for (size_t i = 0; i < vars.size() && i < names.size(); ++i) named.emplace(names[i], vars[i]);
  PSFLOW_ASSIGN_OR_RETURN(Checkpoint checkpoint, Checkpoint::create(named));

  const std::string eval_dir = options.run_dir + "/eval";
  const std::string metrics_path = eval_dir + "/metrics.jsonl";
  std::set<int64_t> done;
  {
    // Resume: checkpoints an earlier evaluator run already evaluated.
    std::ifstream previous(metrics_path);
    std::string line;
    while (std::getline(previous, line)) {
      nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) {
        done.insert(j["step"].get<int64_t>());
      }
    }
  }
  PSFLOW_ASSIGN_OR_RETURN(EventWriter events, EventWriter::create(eval_dir));
  std::ofstream metrics(metrics_path, std::ios::app);
  if (!metrics) return absl::PermissionDeniedError(absl::StrCat("cannot write ", metrics_path));

  int evaluated = 0;
  const std::string checkpoint_dir = options.run_dir + "/checkpoints";
  bool said_watching = false;
  // Bounded by give_up.
  while (true) {
    // Read before listing: a checkpoint written before training finished
    // is in the listing below.
    const bool training_done = fs::exists(options.run_dir + "/summary.json");
    for (const auto& [step, path] : list_checkpoints(checkpoint_dir)) {
      if (done.contains(step)) continue;
      PSFLOW_RETURN_IF_ERROR(stop_reason(options));
      const absl::Time start = absl::Now();
      absl::Status restored = checkpoint.restore(path);
      if (absl::IsNotFound(restored) && fs::exists(path)) {
        // A variable of the model is not in the checkpoint: most likely a
        // checkpoint of another model's run.
        restored = absl::NotFoundError(
            absl::StrCat(restored.message(), "; ", options.run_dir, "/", kRunConfigFile,
                         " names the model ", std::string(model.name()),
                         ", whose checkpoints hold it: is ", path, " of another model's run?"));
      }
      if (restored.ok()) restored = model.restore_for_evaluation(path);
      if (!restored.ok()) {
        if (!fs::exists(path)) {  // Deleted by max_to_keep meanwhile.
          if (options.out != nullptr) {
            std::fprintf(options.out, "eval: %s was deleted before it could be read; skipped\n",
                         path.c_str());
          }
          done.insert(step);
          continue;
        }
        return restored;
      }
      PSFLOW_ASSIGN_OR_RETURN(ModelMetrics result, model.evaluate(vars));
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      nlohmann::json line = {{"checkpoint", path},
                             {"step", step},
                             {"test_loss", result.loss},
                             {"test_accuracy", result.accuracy},
                             {"seconds", seconds}};
      for (const auto& [name, value] : result.extra) {
        // A count (dlrm's "examples") is written as the integer it is.
        if (name == "examples") {
          line["test_" + name] = static_cast<int64_t>(value);
        } else {
          line["test_" + name] = value;
        }
      }
      metrics << line.dump() << "\n";
      metrics.flush();
      PSFLOW_RETURN_IF_ERROR(events.add_scalar("eval/test_loss", result.loss, step));
      PSFLOW_RETURN_IF_ERROR(events.add_scalar("eval/test_accuracy", result.accuracy, step));
      for (const auto& [name, value] : result.extra) {
        PSFLOW_RETURN_IF_ERROR(events.add_scalar("eval/test_" + name, value, step));
      }
      if (options.out != nullptr) {
        std::string extra;
        for (const auto& [name, value] : result.extra)
          absl::StrAppend(&extra, " ", name, " ", value);
        std::fprintf(options.out, "eval: %s (step %lld): test loss %.4f accuracy %.4f%s (%.2f s)\n",
                     path.c_str(), static_cast<long long>(step), result.loss, result.accuracy,
                     extra.c_str(), seconds);
        std::fflush(options.out);
      }
      done.insert(step);
      ++evaluated;
    }
    if (options.once || training_done) return evaluated;
    if (absl::Now() >= give_up) {
      return absl::DeadlineExceededError(absl::StrCat(
          "training in ", options.run_dir, " did not finish within the evaluator's timeout (",
          absl::FormatDuration(options.timeout), "); ", evaluated, " checkpoints evaluated"));
    }
    say(options, said_watching,
        absl::StrCat("watching ", checkpoint_dir, " until training finishes (", options.run_dir,
                     "/summary.json)"));
    PSFLOW_RETURN_IF_ERROR(pause(options, options.poll_interval));
  }
}

}  // namespace psflow::internal
