#include "train/evaluator.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "data/idx_reader.h"
#include "nlohmann/json.hpp"
#include "psflow/checkpoint.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/classifier.h"
#include "train/event_writer.h"
#include "train/mlp.h"
#include "train/run_files.h"

namespace psflow::internal {
namespace {

namespace fs = std::filesystem;

struct RunConfig {
  std::string model;
  std::string data_dir;
};

absl::StatusOr<RunConfig> read_run_config(const std::string& run_dir) {
  const std::string path = run_dir + "/" + kRunConfigFile;
  std::ifstream file(path);
  if (!file) {
    return absl::NotFoundError(absl::StrCat(
        "no ", path, ": --run-dir must be the run directory of `psflow train` (it writes ",
        kRunConfigFile, " when it starts)"));
  }
  nlohmann::json j = nlohmann::json::parse(file, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string() ||
      !j.contains("data_dir") || !j["data_dir"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is malformed: expected {\"model\": ..., \"data_dir\": ...}"));
  }
  return RunConfig{j["model"].get<std::string>(), j["data_dir"].get<std::string>()};
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
  while (!options.once && !fs::exists(options.run_dir + "/" + kRunConfigFile) &&
         absl::Now() < give_up) {
    say(options, said_waiting,
        absl::StrCat("waiting for ", options.run_dir, "/", kRunConfigFile,
                     " (training has not started yet)"));
    PSFLOW_RETURN_IF_ERROR(pause(options, options.poll_interval));
  }
  PSFLOW_RETURN_IF_ERROR(stop_reason(options));
  PSFLOW_ASSIGN_OR_RETURN(RunConfig config, read_run_config(options.run_dir));
  PSFLOW_ASSIGN_OR_RETURN(MlpSpec spec, classifier_spec(config.model));
  PSFLOW_ASSIGN_OR_RETURN(FashionMnist data, load_fashion_mnist(config.data_dir));
  spec.input_dim = data.test_images.num_elements() / std::max<int64_t>(1, data.test_images.dim(0));

  // Variables in this process (outside any strategy scope), shaped like the
  // model's, that each checkpoint is restored into.
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> initial, initial_mlp_parameters(spec, 0));
  std::map<std::string, ShardedVariable> named;
  std::vector<ShardedVariable> vars;
  for (size_t i = 0; i < initial.size(); ++i) {
    const std::string name = absl::StrCat("dense_", i / 2, i % 2 == 0 ? "/kernel" : "/bias");
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v,
                            create_variable(std::move(initial[i]), {.name = "eval/" + name}));
    named.emplace(name, v);
    vars.push_back(std::move(v));
  }
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
      PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(vars));
      PSFLOW_ASSIGN_OR_RETURN(
          ModelMetrics result,
          evaluate_classifier(spec, params, data.test_images, data.test_labels));
      const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
      metrics << nlohmann::json({{"checkpoint", path},
                                 {"step", step},
                                 {"test_loss", result.loss},
                                 {"test_accuracy", result.accuracy},
                                 {"seconds", seconds}})
                     .dump()
              << "\n";
      metrics.flush();
      PSFLOW_RETURN_IF_ERROR(events.add_scalar("eval/test_loss", result.loss, step));
      PSFLOW_RETURN_IF_ERROR(events.add_scalar("eval/test_accuracy", result.accuracy, step));
      if (options.out != nullptr) {
        std::fprintf(options.out, "eval: %s (step %lld): test loss %.4f accuracy %.4f (%.2f s)\n",
                     path.c_str(), static_cast<long long>(step), result.loss, result.accuracy,
                     seconds);
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
