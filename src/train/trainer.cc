#include "train/trainer.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/strings.h"
#include "nlohmann/json.hpp"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"
#include "train/epoch_loop.h"
#include "train/mirrored_training.h"
#include "train/model_registry.h"
#include "train/partitioner_flag.h"
#include "train/ps_training.h"
#include "train/run_record.h"
#include "train/run_reporter.h"
#include "train/step_observer.h"
#include "train/step_scalars.h"
#include "train/training_session.h"

namespace psflow::internal {
namespace {

EpochMetrics epoch_metrics(int epoch, const EpochRun& run, ModelMetrics test) {
  EpochMetrics m;
  m.epoch = epoch;
  m.steps = run.steps;
  m.examples = run.totals->sums().examples;
  m.seconds = run.seconds;
  m.train = run.totals->figures();
  m.test = std::move(test);
  return m;
}

}  // namespace

absl::Status validate_train_options(const TrainOptions& o, const Model& model) {
  if (o.model != model.name()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model '", o.model, "' is not ", av(model.name())));
  }
  PSFLOW_RETURN_IF_ERROR(model.validate(o));
  if (o.epochs < 1 || o.epochs > 100000) {
    return absl::InvalidArgumentError(
        absl::StrCat("--epochs ", o.epochs, " is out of range; use 1 to 100000"));
  }
  if (o.steps_per_execution < 1 || o.steps_per_execution > 10000) {
    return absl::InvalidArgumentError(absl::StrCat("--steps-per-execution ", o.steps_per_execution,
                                                   " is out of range; use 1 to 10000"));
  }
  if (!(o.learning_rate > 0) || o.learning_rate > 1e3) {
    const double example = model.defaults().learning_rate.value_or(TrainOptions().learning_rate);
    return absl::InvalidArgumentError(absl::StrCat(
        "--learning-rate ", o.learning_rate, " must be a positive number (e.g. ", example, ")"));
  }
  if (o.strategy != kParameterServerStrategy && o.strategy != kMirroredStrategy) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy '", o.strategy, "' is not known; use parameter_server or mirrored"));
  }
  if (model.mirrored() != nullptr && (o.replicas < 1 || o.replicas > 64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--replicas ", o.replicas, " is out of range; use 1 to 64"));
  }
  if (o.lr_schedule != "cosine" && o.lr_schedule != "constant") {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr-schedule '", o.lr_schedule, "' is not known; use cosine or constant"));
  }
  if (!optimizer_kind_from_name(o.optimizer).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--optimizer '", o.optimizer, "' is not known; use sgd, momentum, adagrad, adam or ftrl"));
  }
  PSFLOW_RETURN_IF_ERROR(validate_ps_recovery_options(o));
  PSFLOW_RETURN_IF_ERROR(parse_placement(o.placement).status());
  return model.partitioner(o, 1).status();
}

absl::StatusOr<TrainSummary> train_model(const ClusterSpec& spec, const TrainOptions& given,
                                         Model& model) {
  PSFLOW_RETURN_IF_ERROR(validate_train_options(given, model));
  // The sessions and the loop keep a reference to it; its step_observer is
  // set once the reporter exists.
  TrainOptions options = given;
  // Until the epochs begin there is nothing to save: a stop may end the
  // process at once.
  if (options.stop != nullptr &&
      !options.stop->set_activity(
          {"starting training (loading data, creating the variables, restoring the latest "
           "checkpoint)",
           /*at_once=*/true})) {
    return options.stop->reason();
  }
  const absl::Time start = absl::Now();
  PSFLOW_RETURN_IF_ERROR(model.load(options));
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<TrainingSession> session,
                          options.strategy == kMirroredStrategy
                              ? start_mirrored_training(options, model)
                              : start_ps_training(spec, options, model, start));
  PSFLOW_ASSIGN_OR_RETURN(EpochLoop loop, session->epoch_loop());
  TrainSummary initial;
  session->describe(initial);
  if (loop.first_epoch() > options.epochs) {
    // Nothing left to do: say so, and leave the run's records alone (a
    // rerun used to overwrite summary.json with an empty run).
    PSFLOW_ASSIGN_OR_RETURN(ModelMetrics test, session->evaluate());
    initial.already_complete = true;
    initial.epochs = options.epochs;
    initial.steps = loop.restored_steps();
    initial.restored_steps = loop.restored_steps();
    initial.test_accuracy = test.accuracy;
    initial.test_loss = test.loss;
    PSFLOW_ASSIGN_OR_RETURN(const std::optional<int64_t> done, session->optimizer_iterations());
    if (done.has_value()) initial.optimizer_iterations = *done;
    return initial;
  }
  // The run's steps count those of the checkpoint it resumed from, as the
  // optimizer's iterations do; its record carries on the epochs and
  // invocations before this one.
  initial.restored_steps = loop.restored_steps();
  initial.steps = loop.restored_steps();
  if (!options.run_dir.empty()) {
    PSFLOW_ASSIGN_OR_RETURN(std::optional<TrainSummary> record, load_run_record(options.run_dir));
    if (record.has_value()) carry_on(*record, loop.restored_steps(), initial);
  }
  Invocation& invocation = initial.invocations.emplace_back();
  invocation.started = absl::FormatTime(absl::RFC3339_sec, start, absl::UTCTimeZone());
  invocation.options_json = invocation_options_json(options, initial);
  invocation.first_epoch = loop.first_epoch();
  invocation.first_step = loop.restored_steps();
  const int64_t steps_per_epoch = model.train_examples() / options.batch_size;
  LearningRateSchedule schedule{options.learning_rate, 0, 0.1};
  if (options.lr_schedule == "cosine") schedule.decay_steps = steps_per_epoch * options.epochs;
  RunReporter reporter(
      options, start, std::move(initial),
      [&](const TrainSummary& s) { return summary_json(s, options, model); }, schedule);
  PSFLOW_RETURN_IF_ERROR(reporter.open());
  // The caller's observer (tests pacing faults by progress) sees the steps too.
  StepObserverPair observers(reporter.step_observer(), options.step_observer);
  options.step_observer = &observers;
  EpochHooks hooks;
  hooks.run_epoch = [&](int epoch, int64_t done_steps, int64_t* completed) -> absl::Status {
    reporter.begin_epoch();
    absl::StatusOr<EpochRun> run = session->train_epoch(epoch, done_steps, completed);
    reporter.count_steps(*completed);
    if (!run.ok()) return run.status();
    PSFLOW_ASSIGN_OR_RETURN(ModelMetrics test, session->evaluate());
    return reporter.report(epoch_metrics(epoch, *run, std::move(test)));
  };
  hooks.check_state_after_stop = [&] { return session->check_state_after_stop(); };
  hooks.roll_back_to = [&](int epoch, int64_t rolled_back) {
    reporter.roll_back_to(epoch, rolled_back);
  };

  if (absl::Status status = loop.run(hooks); !status.ok()) {
    const bool stopped = options.stop != nullptr && options.stop->requested();
    // The run's error matters more than one about its record; a record
    // left "running" is marked "lost" by the next invocation.
    (void)reporter.end(status, stopped);
    return status;
  }
  PSFLOW_ASSIGN_OR_RETURN(const std::optional<int64_t> iterations, session->optimizer_iterations());
  if (iterations.has_value()) reporter.set_optimizer_iterations(*iterations);
  return reporter.finish();
}

absl::StatusOr<TrainSummary> train(const ClusterSpec& spec, const TrainOptions& options) {
  PSFLOW_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, make_model(options.model));
  return train_model(spec, options, *model);
}

std::string summary_json(const TrainSummary& s, const TrainOptions& o, const Model& model) {
  // The options first: the run's own figures (e.g. the epochs it reached)
  // take the place of a same-named option.
  nlohmann::json j = train_options_json(o);
  j.update({{"replicas", s.replicas},
            {"test_accuracy", s.test_accuracy},
            {"test_loss", s.test_loss},
            {"epochs", s.epochs},
            {"steps", s.steps},
            {"restored_steps", s.restored_steps},
            {"examples_per_sec", s.examples_per_sec},
            {"wall_seconds", s.wall_seconds},
            {"num_workers", s.num_workers},
            {"num_ps", s.num_ps},
            {"ps_bytes", s.ps_bytes},
            {"optimizer_iterations", s.optimizer_iterations},
            {"ps_recoveries", s.ps_recoveries},
            {"rolled_back_steps", s.rolled_back_steps},
            {"history", history_json(s.history)},
            {"invocations", invocations_json(s.invocations)}});
  if (!s.history.empty()) {
    for (const auto& [name, value] : s.history.back().test.extra) j["test_" + name] = value;
  }
  // The partitioner the run used ("auto" resolved); the invocations keep
  // the flag as given.
  if (o.strategy == kParameterServerStrategy)
    j["partitioner"] = model.partitioner_spec(o, s.num_ps);
  model.add_summary_fields(o, s, j);
  return j.dump(2);
}

}  // namespace psflow::internal
