#include "train/trainer.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "data/idx_reader.h"
#include "nlohmann/json.hpp"
#include "optimizer/optimizer.h"
#include "psflow/checkpoint.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/dataset.h"
#include "psflow/distributed_dataset.h"
#include "psflow/nn.h"
#include "psflow/optimizer.h"
#include "psflow/replica_group.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/epoch_closures.h"
#include "train/epoch_loop.h"
#include "train/event_writer.h"
#include "train/mlp.h"
#include "train/progress.h"
#include "train/ps_training.h"
#include "train/run_files.h"
#include "train/run_reporter.h"
#include "train/train_step.h"

namespace psflow {
namespace {}  // namespace

absl::StatusOr<MlpSpec> classifier_spec(const std::string& model) {
  MlpSpec spec;
  if (model == "mlp") {
    spec.hidden = {256};
  } else if (model == "logreg") {
    spec.hidden = {};
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--model '", model, "' is not a model psflow trains on Fashion-MNIST; use mlp or logreg"));
  }
  return spec;
}

absl::StatusOr<ClassifierEvaluation> evaluate_classifier(const MlpSpec& spec,
                                                         const std::vector<Tensor>& params,
                                                         const Tensor& images,
                                                         const Tensor& labels) {
  const int64_t n = labels.dim(0);
  constexpr int64_t kChunk = 2000;
  double loss_sum = 0.0;
  nn::SparseCategoricalAccuracy accuracy;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    const int64_t end = std::min(n, begin + kChunk);
    Tensor x = flatten_images(images.slice(begin, end));
    Tensor y = labels.slice(begin, end);
    PSFLOW_ASSIGN_OR_RETURN(Tensor logits, mlp_logits(spec, params, x));
    PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sparse_softmax_cross_entropy(logits, y));
    loss_sum += loss.loss * static_cast<double>(end - begin);
    PSFLOW_RETURN_IF_ERROR(accuracy.update(y, logits));
  }
  return ClassifierEvaluation{n > 0 ? loss_sum / static_cast<double>(n) : 0.0, accuracy.result()};
}

namespace {

absl::StatusOr<MlpSpec> model_spec(const std::string& model) { return classifier_spec(model); }

absl::StatusOr<ClassifierEvaluation> evaluate(const MlpSpec& spec,
                                              const std::vector<Tensor>& params,
                                              const Tensor& images, const Tensor& labels) {
  return evaluate_classifier(spec, params, images, labels);
}

// The report of one classifier epoch.
EpochReport classifier_epoch(int epoch, const TrainStepResult& totals, double seconds,
                             const ClassifierEvaluation& test) {
  EpochReport r;
  r.epoch = epoch;
  r.steps = totals.steps;
  r.examples = totals.examples;
  r.seconds = seconds;
  const double examples = static_cast<double>(totals.examples);
  r.train_loss = totals.examples > 0 ? totals.loss_sum / examples : 0;
  r.train_accuracy = totals.examples > 0 ? static_cast<double>(totals.correct) / examples : 0;
  r.test_loss = test.loss;
  r.test_accuracy = test.accuracy;
  return r;
}

// A classifier run's reporter: summary.json as summary_json renders it.
// Thread-safety: use from one thread.
class EpochReporter : public RunReporter {
 public:
  using RunReporter::RunReporter;
  [[nodiscard]] absl::Status report(int epoch, const TrainStepResult& totals, double seconds,
                                    const ClassifierEvaluation& test) {
    return RunReporter::report(classifier_epoch(epoch, totals, seconds, test));
  }
  [[nodiscard]] absl::StatusOr<TrainSummary> finish(const TrainOptions& options) {
    return RunReporter::finish([&](const TrainSummary& s) { return summary_json(s, options); });
  }
};

}  // namespace

absl::StatusOr<Partitioner> parse_partitioner(const std::string& spec) {
  if (spec.empty() || spec == "none") return Partitioner(nullptr);
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  std::vector<int64_t> numbers;
  for (size_t i = 1; i < parts.size(); ++i) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(parts[i], &v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--partitioner '", spec, "': '", parts[i], "' is not a whole number"));
    }
    numbers.push_back(v);
  }
  const auto usage = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        "--partitioner '", spec,
        "' is not understood; use none, fixed:<shards>, min_size:<bytes>[:<max_shards>] or "
        "max_size:<bytes>[:<max_shards>]"));
  };
  if (parts[0] == "fixed" && numbers.size() == 1) {
    return fixed_shards_partitioner(static_cast<int>(numbers[0]));
  }
  if ((parts[0] == "min_size" || parts[0] == "max_size") && !numbers.empty() &&
      numbers.size() <= 2) {
    const int max_shards = numbers.size() == 2 ? static_cast<int>(numbers[1]) : 0;
    if (parts[0] == "min_size") return min_size_partitioner(numbers[0], std::max(1, max_shards));
    return max_size_partitioner(numbers[0], max_shards);
  }
  return usage();
}

absl::Status validate_train_options(const TrainOptions& o) {
  PSFLOW_RETURN_IF_ERROR(model_spec(o.model).status());
  if (o.epochs < 1 || o.epochs > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--epochs ", o.epochs, " is out of range; use 1 to 100000"));
  }
  if (o.batch_size < 1 || o.batch_size > 60000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch-size ", o.batch_size, " is out of range; use 1 to 60000 (the training set)"));
  }
  if (o.steps_per_execution < 1 || o.steps_per_execution > 10000) {
    return absl::InvalidArgumentError(absl::StrCat("--steps-per-execution ", o.steps_per_execution,
                                                   " is out of range; use 1 to 10000"));
  }
  if (!(o.learning_rate > 0) || o.learning_rate > 1e3) {
    return absl::InvalidArgumentError(absl::StrCat("--learning-rate ", o.learning_rate,
                                                   " must be a positive number (e.g. 0.001)"));
  }
  if (o.strategy != "parameter_server" && o.strategy != "mirrored") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy '", o.strategy, "' is not known; use parameter_server or mirrored"));
  }
  if (o.replicas < 1 || o.replicas > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas ", o.replicas, " is out of range; use 1 to 64"));
  }
  if (o.lr_schedule != "cosine" && o.lr_schedule != "constant") {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr-schedule '", o.lr_schedule, "' is not known; use cosine or constant"));
  }
  absl::StatusOr<OptimizerConfig::Kind> kind = optimizer_kind_from_name(o.optimizer);
  if (!kind.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--optimizer '", o.optimizer, "' is not known; use sgd, momentum, adagrad, adam or ftrl"));
  }
  PSFLOW_RETURN_IF_ERROR(validate_ps_recovery_options(o));
  return parse_partitioner(o.partitioner).status();
}

absl::StatusOr<TrainSummary> train_classifier(const ClusterSpec& spec,
                                              const TrainOptions& options) {
  PSFLOW_RETURN_IF_ERROR(validate_train_options(options));
  const absl::Time start = absl::Now();
  const std::string data_dir = options.data_dir.empty() ? kFashionMnistDir : options.data_dir;
  PSFLOW_ASSIGN_OR_RETURN(FashionMnist data, load_fashion_mnist(data_dir));
  PSFLOW_ASSIGN_OR_RETURN(MlpSpec model, model_spec(options.model));
  model.input_dim = data.train_images.num_elements() / data.train_images.dim(0);
  PSFLOW_ASSIGN_OR_RETURN(Partitioner partitioner, parse_partitioner(options.partitioner));

  PSFLOW_ASSIGN_OR_RETURN(PsTraining training,
                          start_ps_training(spec, options, std::move(partitioner), [&] {
                            return create_mlp_variables(model, options.seed);
                          }));
  const std::vector<ShardedVariable>& vars = training.variables;
  ClusterCoordinator* coordinator = training.coordinator.get();
  const int64_t steps_per_epoch = data.train_labels.dim(0) / options.batch_size;

  TrainStepConfig step_config;
  step_config.run_id = absl::StrCat(options.seed, "-", absl::ToUnixNanos(start));
  step_config.model = model;
  training.fill(step_config, options, steps_per_epoch);
  PSFLOW_ASSIGN_OR_RETURN(
      PerWorkerDataset train_data,
      coordinator->create_per_worker_dataset(
          kTrainDataset, Structure::dict({{"data_dir", data_dir},
                                          {"batch_size", options.batch_size},
                                          {"seed", static_cast<int64_t>(options.seed)}})));
  step_config.iterator = train_data.iter().handle();
  const RemoteStructure args(step_config.to_structure());

  const int64_t closures_per_epoch =
      (steps_per_epoch + options.steps_per_execution - 1) / options.steps_per_execution;

  TrainSummary initial;
  initial.num_workers = spec.num_tasks(kWorkerJob);
  initial.num_ps = spec.num_tasks(kPsJob);
  EpochReporter reporter(options, start, initial);
  PSFLOW_RETURN_IF_ERROR(reporter.open());

  if (!options.run_dir.empty()) {
    PSFLOW_RETURN_IF_ERROR(
        write_run_file(options.run_dir, kRunConfigFile,
                       nlohmann::json({{"model", options.model}, {"data_dir", data_dir}}).dump(2)));
  }

  PSFLOW_ASSIGN_OR_RETURN(
      EpochLoop loop, EpochLoop::create(spec, options, vars, *training.optimizer, steps_per_epoch));
  // The test set against the parameters as the ps tasks hold them now.
  auto test_now = [&]() -> absl::StatusOr<ClassifierEvaluation> {
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(vars));
    return evaluate(model, params, data.test_images, data.test_labels);
  };
  EpochHooks hooks;
  hooks.run_epoch = [&](int epoch, int64_t* completed) -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(
        TimedEpoch<TrainStepResult> run,
        run_training_epoch<TrainStepResult>(*coordinator, kTrainStepFunction, args,
                                            closures_per_epoch, options, epoch, completed));
    PSFLOW_ASSIGN_OR_RETURN(ClassifierEvaluation test, test_now());
    return reporter.report(epoch, run.totals, run.seconds, test);
  };
  hooks.roll_back_to = [&](int epoch, int64_t rolled_back) {
    reporter.roll_back_to(epoch, rolled_back);
  };
  hooks.report_restored = [&]() -> absl::Status {
    PSFLOW_ASSIGN_OR_RETURN(ClassifierEvaluation test, test_now());
    return reporter.report(options.epochs, TrainStepResult{}, 0.0, test);
  };
  PSFLOW_RETURN_IF_ERROR(loop.run(hooks));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t iterations, training.optimizer_iterations());
  reporter.set_optimizer_iterations(iterations);
  return reporter.finish(options);
}

absl::StatusOr<TrainSummary> train_classifier_mirrored(const TrainOptions& options) {
  PSFLOW_RETURN_IF_ERROR(validate_train_options(options));
  const absl::Time start = absl::Now();
  const std::string data_dir = options.data_dir.empty() ? kFashionMnistDir : options.data_dir;
  PSFLOW_ASSIGN_OR_RETURN(FashionMnist data, load_fashion_mnist(data_dir));
  PSFLOW_ASSIGN_OR_RETURN(MlpSpec model, model_spec(options.model));
  model.input_dim = data.train_images.num_elements() / data.train_images.dim(0);
  OptimizerConfig optimizer;
  PSFLOW_ASSIGN_OR_RETURN(optimizer.kind, optimizer_kind_from_name(options.optimizer));
  PSFLOW_ASSIGN_OR_RETURN(ReplicaGroup group, ReplicaGroup::create(options.replicas));
  const int replicas = options.replicas;

  // One copy of the parameters and optimizer slots per replica.
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> initial, initial_mlp_parameters(model, options.seed));
  std::vector<std::vector<Tensor>> params(replicas);
  std::vector<std::vector<OptimizerSlots>> slots(replicas);
  for (int r = 0; r < replicas; ++r) {
    for (const Tensor& t : initial) params[r].push_back(t.clone());
    slots[r].resize(initial.size());
  }

  const int64_t steps_per_epoch = data.train_labels.dim(0) / options.batch_size;
  const int64_t total_steps = steps_per_epoch * options.epochs;
  PSFLOW_ASSIGN_OR_RETURN(
      DistributedDataset distributed,
      group.experimental_distribute_dataset(
          Dataset::from_tensor_slices(Structure::tuple({data.train_images, data.train_labels}))
              .shuffle(data.train_labels.dim(0), options.seed + 1)
              .repeat()
              .batch(options.batch_size, /*drop_remainder=*/true)
              .prefetch(2)));
  DistributedIterator batches = distributed.make_iterator();

  TrainSummary initial_summary;
  initial_summary.replicas = replicas;
  EpochReporter reporter(options, start, initial_summary);
  PSFLOW_RETURN_IF_ERROR(reporter.open());
  int64_t step = 0;
  for (int epoch = 1; epoch <= options.epochs; ++epoch) {
    const absl::Time epoch_start = absl::Now();
    ProgressBar progress(options.out, options.interactive_progress,
                         absl::StrCat("epoch ", epoch, "/", options.epochs), steps_per_epoch);
    TrainStepResult totals;
    for (int64_t i = 0; i < steps_per_epoch; ++i, ++step) {
      PSFLOW_ASSIGN_OR_RETURN(std::optional<PerReplica> batch, batches.get_next());
      if (!batch.has_value()) return absl::InternalError("the repeated training set ended");
      const double lr = options.lr_schedule == "cosine"
                            ? cosine_decay(options.learning_rate, total_steps, 0.1, step)
                            : options.learning_rate;
      PSFLOW_ASSIGN_OR_RETURN(
          PerReplica outputs,
          group.run(
              [&](const ReplicaContext& ctx,
                  const std::vector<Structure>& args) -> absl::StatusOr<Structure> {
                const int r = ctx.replica_id_in_sync_group();
                const Structure& b = args[0];
                const Tensor x = flatten_images(b[0].tensor());
                const Tensor& y = b[1].tensor();
                PSFLOW_ASSIGN_OR_RETURN(MlpStep out, mlp_forward_backward(model, params[r], x, y));
                Structure::Items grads;
                for (Tensor& g : out.gradients) grads.push_back(std::move(g));
                PSFLOW_ASSIGN_OR_RETURN(
                    Structure reduced,
                    ctx.all_reduce(ReduceOp::kMean, Structure::list(std::move(grads))));
                for (size_t p = 0; p < params[r].size(); ++p) {
                  PSFLOW_RETURN_IF_ERROR(apply_dense_gradient(optimizer, lr, params[r][p],
                                                              slots[r][p], reduced[p].tensor()));
                }
                nn::SparseCategoricalAccuracy accuracy;
                PSFLOW_RETURN_IF_ERROR(accuracy.update(y, out.probabilities));
                const int64_t n = y.dim(0);
                return TrainStepResult{out.loss * static_cast<double>(n), n,
                                       static_cast<int64_t>(accuracy.result() * n + 0.5), 1}
                    .to_structure();
              },
              {*batch}));
      TrainStepResult step_totals;
      for (const Structure& v : outputs.values()) {
        PSFLOW_ASSIGN_OR_RETURN(TrainStepResult one, TrainStepResult::from_structure(v));
        step_totals.add(one);
      }
      step_totals.steps = 1;  // One synchronous step across the replicas.
      totals.add(step_totals);
      progress.update(totals.steps, totals.loss_sum / static_cast<double>(totals.examples));
    }
    const double seconds = absl::ToDoubleSeconds(absl::Now() - epoch_start);
    progress.finish();
    // The mirrors must agree exactly: they applied the same updates.
    for (int r = 1; r < replicas; ++r) {
      for (size_t p = 0; p < params[0].size(); ++p) {
        if (!(params[r][p] == params[0][p])) {
          return absl::InternalError(absl::StrCat("replica ", r, "'s copy of parameter ", p,
                                                  " diverged from replica 0's"));
        }
      }
    }
    PSFLOW_ASSIGN_OR_RETURN(ClassifierEvaluation test,
                            evaluate(model, params[0], data.test_images, data.test_labels));
    PSFLOW_RETURN_IF_ERROR(reporter.report(epoch, totals, seconds, test));
  }
  return reporter.finish(options);
}

std::string summary_json(const TrainSummary& s, const TrainOptions& o) {
  nlohmann::json history = nlohmann::json::array();
  for (const EpochMetrics& m : s.history) {
    history.push_back({{"epoch", m.epoch},
                       {"train_loss", m.train_loss},
                       {"train_accuracy", m.train_accuracy},
                       {"test_loss", m.test_loss},
                       {"test_accuracy", m.test_accuracy},
                       {"steps", m.steps},
                       {"seconds", m.seconds}});
  }
  nlohmann::json j = {{"model", o.model},
                      {"strategy", o.strategy},
                      {"replicas", s.replicas},
                      {"test_accuracy", s.test_accuracy},
                      {"test_loss", s.test_loss},
                      {"epochs", s.epochs},
                      {"steps", s.steps},
                      {"examples_per_sec", s.examples_per_sec},
                      {"wall_seconds", s.wall_seconds},
                      {"num_workers", s.num_workers},
                      {"num_ps", s.num_ps},
                      {"optimizer_iterations", s.optimizer_iterations},
                      {"ps_recoveries", s.ps_recoveries},
                      {"rolled_back_steps", s.rolled_back_steps},
                      {"batch_size", o.batch_size},
                      {"optimizer", o.optimizer},
                      {"learning_rate", o.learning_rate},
                      {"lr_schedule", o.lr_schedule},
                      {"seed", o.seed},
                      {"history", history}};
  return j.dump(2);
}

}  // namespace psflow
