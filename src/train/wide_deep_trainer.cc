#include "train/wide_deep_trainer.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "nlohmann/json.hpp"
#include "optimizer/optimizer.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/nn.h"
#include "psflow/optimizer.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/epoch_closures.h"
#include "train/epoch_loop.h"
#include "train/event_writer.h"
#include "train/progress.h"
#include "train/ps_training.h"
#include "train/run_files.h"
#include "train/run_reporter.h"
#include "train/wide_deep_model.h"
#include "train/wide_deep_step.h"

namespace psflow {
namespace {

// Test examples per evaluation chunk: the ids of one chunk are pulled at once.
constexpr int64_t kEvalChunk = 4096;

struct WideDeepEval {
  double loss = 0.0;
  double accuracy = 0.0;
  double auc = 0.0;
};

// Test loss, accuracy and AUC with the parameters as they are on the ps
// now, computed on the coordinator chunk by chunk, pulling only the rows
// of the ids each chunk uses.
absl::StatusOr<WideDeepEval> evaluate(const WideDeepSpec& spec,
                                      const std::vector<ShardedVariable>& vars,
                                      const WideDeepExamples& test) {
  const int64_t n = test.size();
  double loss_sum = 0.0;
  nn::AUC auc;
  nn::BinaryAccuracy accuracy;
  for (int64_t begin = 0; begin < n; begin += kEvalChunk) {
    const int64_t end = std::min(n, begin + kEvalChunk);
    const WideDeepExamples chunk = test.slice(begin, end);
    PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(chunk.ids));
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params,
                            pull_wide_deep_parameters(vars, unique.values));
    const WideDeepBatch batch{chunk.dense, unique.index, chunk.weights, chunk.labels};
    PSFLOW_ASSIGN_OR_RETURN(Tensor logits, wide_deep_logits(spec, params, batch));
    PSFLOW_ASSIGN_OR_RETURN(Tensor labels, chunk.labels.reshape({end - begin, 1}));
    PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sigmoid_binary_cross_entropy(logits, labels));
    loss_sum += loss.loss * static_cast<double>(end - begin);
    PSFLOW_RETURN_IF_ERROR(auc.update(labels, loss.probabilities));
    PSFLOW_RETURN_IF_ERROR(accuracy.update(labels, loss.probabilities));
  }
  return WideDeepEval{n > 0 ? loss_sum / static_cast<double>(n) : 0.0, accuracy.result(),
                      auc.result()};
}

absl::StatusOr<Partitioner> wide_deep_partitioner(const std::string& spec, int num_ps) {
  if (spec.empty() || spec == "none") return fixed_shards_partitioner(std::max(1, num_ps));
  return parse_partitioner(spec);
}

std::vector<std::string> devices(const ShardedVariable& v) {
  std::vector<std::string> out;
  for (const Variable& part : v.variables()) out.push_back(part.device());
  return out;
}

// Per-epoch output (RunReporter's, with train and test AUC) and the
// summary with its AUC history.
// Thread-safety: use from one thread.
class Reporter {
 public:
  Reporter(const TrainOptions& options, const WideDeepOptions& extra, absl::Time start,
           WideDeepSummary summary)
      : options_(options),
        extra_(extra),
        run_(options, start, std::move(summary.summary)),
        summary_(std::move(summary)) {}

  absl::Status open() { return run_.open(); }

  absl::Status report(int epoch, const WideDeepStepResult& totals, double seconds,
                      const WideDeepEval& test) {
    EpochReport r;
    r.epoch = epoch;
    r.steps = totals.steps;
    r.examples = totals.examples;
    r.seconds = seconds;
    r.train_loss =
        totals.examples > 0 ? totals.loss_sum / static_cast<double>(totals.examples) : 0.0;
    r.train_accuracy = totals.accuracy.result();
    r.test_loss = test.loss;
    r.test_accuracy = test.accuracy;
    const WideDeepEpochAuc auc{totals.auc.result(), test.auc};
    r.extra.push_back({"auc", auc.train_auc, auc.test_auc});
    PSFLOW_RETURN_IF_ERROR(run_.report(r));
    summary_.auc_history.push_back(auc);
    return absl::OkStatus();
  }

  // See RunReporter::roll_back_to; the AUC history follows the epochs.
  void roll_back_to(int epoch, int64_t rolled_back) {
    run_.roll_back_to(epoch, rolled_back);
    summary_.auc_history.resize(run_.summary().history.size());
  }
  void set_optimizer_iterations(int64_t n) { run_.set_optimizer_iterations(n); }

  absl::StatusOr<WideDeepSummary> finish() {
    if (summary_.auc_history.empty()) {
      return absl::InternalError("a wide_deep run finished without reporting an epoch");
    }
    summary_.test_auc = summary_.auc_history.back().test_auc;
    PSFLOW_ASSIGN_OR_RETURN(summary_.summary, run_.finish([&](const TrainSummary& s) {
      WideDeepSummary full = summary_;
      full.summary = s;
      return wide_deep_summary_json(full, options_, extra_);
    }));
    return summary_;
  }

 private:
  const TrainOptions& options_;
  const WideDeepOptions& extra_;
  RunReporter run_;
  // Everything but `summary`, which run_ keeps until finish().
  WideDeepSummary summary_;
};

}  // namespace

absl::Status validate_wide_deep_options(const TrainOptions& o, const WideDeepOptions& extra) {
  if (o.model != kWideDeepModel) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model '", o.model, "' is not wide_deep; train_wide_deep trains wide_deep"));
  }
  PSFLOW_RETURN_IF_ERROR(validate_ps_recovery_options(o));
  if (o.strategy != "parameter_server") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy '", o.strategy,
        "' does not train wide_deep: its embedding tables live on parameter servers; use "
        "parameter_server"));
  }
  if (o.epochs < 1 || o.epochs > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--epochs ", o.epochs, " is out of range; use 1 to 100000"));
  }
  if (o.batch_size < 1 || o.batch_size > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-size ", o.batch_size, " is out of range; use 1 to 1048576"));
  }
  if (o.steps_per_execution < 1 || o.steps_per_execution > 10000) {
    return absl::InvalidArgumentError(absl::StrCat("--steps-per-execution ", o.steps_per_execution,
                                                   " is out of range; use 1 to 10000"));
  }
  if (!(o.learning_rate > 0) || o.learning_rate > 1e3) {
    return absl::InvalidArgumentError(
        absl::StrCat("--learning-rate ", o.learning_rate, " must be a positive number (e.g. 0.5)"));
  }
  if (o.lr_schedule != "cosine" && o.lr_schedule != "constant") {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr-schedule '", o.lr_schedule, "' is not known; use cosine or constant"));
  }
  if (!optimizer_kind_from_name(o.optimizer).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--optimizer '", o.optimizer, "' is not known; use sgd, momentum, adagrad, adam or ftrl"));
  }
  PSFLOW_RETURN_IF_ERROR(wide_deep_partitioner(o.partitioner, 1).status());
  if (o.data_dir.empty()) PSFLOW_RETURN_IF_ERROR(extra.generator.validate());
  WideDeepSpec spec;
  spec.embedding_dim = extra.embedding_dim;
  spec.hidden = extra.hidden;
  return WideDeepSpec::from_structure(spec.to_structure()).status();
}

absl::StatusOr<WideDeepSummary> train_wide_deep_model(const ClusterSpec& spec,
                                                      const TrainOptions& options,
                                                      const WideDeepOptions& extra) {
  PSFLOW_RETURN_IF_ERROR(validate_wide_deep_options(options, extra));
  const absl::Time start = absl::Now();
  WideDeepDataSource source;
  if (options.data_dir.empty()) {
    source.generator_options = extra.generator;
    source.generator_options.seed = options.seed;
  } else {
    source.generator = false;
    source.path = options.data_dir;
    source.seed = options.seed;
  }
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const WideDeepData> data, load_wide_deep_data(source));
  if (data->train.size() < options.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("--batch-size ", options.batch_size,
                                                   " is larger than the training set (",
                                                   data->train.size(), " examples)"));
  }
  if (options.out != nullptr) {
    std::fprintf(options.out, "wide_deep: %s\n", data->description.c_str());
    std::fflush(options.out);
  }
  WideDeepSpec model;
  model.vocab_size = data->vocab_size;
  model.dense_features = data->dense_features;
  model.embedding_dim = extra.embedding_dim;
  model.hidden = extra.hidden;

  const int num_ps = spec.num_tasks(kPsJob);
  PSFLOW_ASSIGN_OR_RETURN(Partitioner partitioner,
                          wide_deep_partitioner(options.partitioner, num_ps));
  PSFLOW_ASSIGN_OR_RETURN(PsTraining training,
                          start_ps_training(spec, options, std::move(partitioner), [&] {
                            return create_wide_deep_variables(model, options.seed);
                          }));
  const std::vector<ShardedVariable>& vars = training.variables;
  ClusterCoordinator* coordinator = training.coordinator.get();

  const int64_t steps_per_epoch = data->train.size() / options.batch_size;
  WideDeepStepConfig step_config;
  step_config.run_id = absl::StrCat("wide_deep-", options.seed, "-", absl::ToUnixNanos(start));
  step_config.model = model;
  training.fill(step_config, options, steps_per_epoch);
  PSFLOW_ASSIGN_OR_RETURN(
      PerWorkerDataset train_data,
      coordinator->create_per_worker_dataset(
          kWideDeepDataset, Structure::dict({{"source", source.to_structure()},
                                             {"batch_size", options.batch_size},
                                             {"seed", static_cast<int64_t>(options.seed)}})));
  step_config.iterator = train_data.iter().handle();
  const RemoteStructure args(step_config.to_structure());
  const int64_t closures_per_epoch =
      (steps_per_epoch + options.steps_per_execution - 1) / options.steps_per_execution;

  WideDeepSummary initial;
  initial.summary.num_workers = spec.num_tasks(kWorkerJob);
  initial.summary.num_ps = num_ps;
  initial.wide_table_devices = devices(vars[kWideTable]);
  initial.deep_table_devices = devices(vars[kDeepTable]);
  initial.data_description = data->description;
  Reporter reporter(options, extra, start, std::move(initial));
  PSFLOW_RETURN_IF_ERROR(reporter.open());
  PSFLOW_ASSIGN_OR_RETURN(
      EpochLoop loop, EpochLoop::create(spec, options, vars, *training.optimizer, steps_per_epoch));
  EpochHooks hooks;
  hooks.run_epoch = [&](int epoch, int64_t* completed) -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(
        TimedEpoch<WideDeepStepResult> run,
        run_training_epoch<WideDeepStepResult>(*coordinator, kWideDeepStepFunction, args,
                                               closures_per_epoch, options, epoch, completed));
    PSFLOW_ASSIGN_OR_RETURN(WideDeepEval test, evaluate(model, vars, data->test));
    return reporter.report(epoch, run.totals, run.seconds, test);
  };
  hooks.roll_back_to = [&](int epoch, int64_t rolled_back) {
    reporter.roll_back_to(epoch, rolled_back);
  };
  hooks.report_restored = [&]() -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(WideDeepEval test, evaluate(model, vars, data->test));
    const WideDeepStepResult no_steps;
    return reporter.report(options.epochs, no_steps, 0.0, test);
  };
  PSFLOW_RETURN_IF_ERROR(loop.run(hooks));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t iterations, training.optimizer_iterations());
  reporter.set_optimizer_iterations(iterations);
  return reporter.finish();
}

absl::StatusOr<TrainSummary> train_wide_deep(const ClusterSpec& spec, const TrainOptions& options) {
  PSFLOW_ASSIGN_OR_RETURN(WideDeepSummary s, train_wide_deep_model(spec, options));
  return std::move(s.summary);
}

std::string wide_deep_summary_json(const WideDeepSummary& s, const TrainOptions& o,
                                   const WideDeepOptions& extra) {
  nlohmann::json j = nlohmann::json::parse(summary_json(s.summary, o));
  j["test_auc"] = s.test_auc;
  j["partitioner"] = o.partitioner.empty() || o.partitioner == "none"
                         ? absl::StrCat("fixed:", s.summary.num_ps)
                         : o.partitioner;
  j["data"] = s.data_description;
  j["data_dir"] = o.data_dir;
  j["embedding_dim"] = extra.embedding_dim;
  j["hidden"] = extra.hidden;
  j["wide_table_devices"] = s.wide_table_devices;
  j["deep_table_devices"] = s.deep_table_devices;
  nlohmann::json& history = j["history"];
  for (size_t i = 0; i < history.size() && i < s.auc_history.size(); ++i) {
    history[i]["train_auc"] = s.auc_history[i].train_auc;
    history[i]["test_auc"] = s.auc_history[i].test_auc;
  }
  j.erase("replicas");
  return j.dump(2);
}

}  // namespace psflow
