#include "train/ps_training.h"

#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/cluster_resolver.h"
#include "psflow/optimizer.h"
#include "psflow/per_worker.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/data_check.h"
#include "train/epoch_closures.h"
#include "train/partitioner_flag.h"
#include "train/ps_bytes.h"
#include "train/run_files.h"
#include "train/status_endpoint.h"
#include "train/step_config.h"

namespace psflow::internal {
namespace {

// Building a worker's dataset and reading one element: reading the files
// takes well under a second.
constexpr absl::Duration kDataCheckTimeout = absl::Seconds(60);

// Thread-safety: use from one thread; a stop request (options.stop) may
// cancel the coordinator's closures from another.
class PsTraining final : public TrainingSession {
 public:
  PsTraining(const ClusterSpec& spec, const TrainOptions& options, Model& model)
      : spec_(spec), options_(options), model_(model) {}

  absl::Status start(absl::Time start);

  void describe(TrainSummary& summary) const override {
    summary.num_workers = spec_.num_tasks(kWorkerJob);
    summary.num_ps = spec_.num_tasks(kPsJob);
    summary.ps_bytes = strategy_->placed_bytes();
  }

  absl::StatusOr<EpochLoop> epoch_loop() override {
    PSFLOW_RETURN_IF_ERROR(write_run_config(options_, model_));
    return EpochLoop::create(spec_, options_, model_.parameter_names(), variables_, *optimizer_,
                             steps_per_epoch_, strategy_->dynamic_embeddings());
  }

  absl::StatusOr<EpochRun> train_epoch(int epoch, int64_t done_steps, int64_t* completed) override {
    // A resumed epoch runs only its remaining steps, and the last closure
    // only what is left after the full ones.
    const int64_t steps = steps_per_epoch_ - done_steps;
    const int64_t spe = options_.steps_per_execution;
    const RemoteStructure* last = nullptr;
    if (const int64_t rest = steps % spe; rest != 0) {
      if (!last_args_.has_value() || last_args_steps_ != rest) {
        settings_.steps = rest;
        last_args_.emplace(settings_.to_structure(model_.spec()));
        settings_.steps = spe;
        last_args_steps_ = rest;
      }
      last = &*last_args_;
    }
    const EpochClosures closures{&*args_, last, steps, spe};
    in_doubt_before_epoch_ = coordinator_->closures_in_doubt();
    return run_training_epoch(*coordinator_, model_.step_function(), closures, options_, epoch,
                              model_.new_totals(), completed,
                              steps_per_epoch_ * (options_.epochs - epoch));
  }

  absl::Status check_state_after_stop() const override {
    // The cancelled closures are back (join returned): each step that began
    // on a live worker ran to its end (the step functions look for
    // cancellation only between steps). A closure whose worker failed
    // mid-call and that was not run again may have left a step half
    // applied.
    const int64_t in_doubt = coordinator_->closures_in_doubt() - in_doubt_before_epoch_;
    if (in_doubt == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat(in_doubt,
                     " closure(s) were running on workers that failed and did not run again, so "
                     "their updates may have reached some ps tasks and not others"));
  }

  absl::StatusOr<ModelMetrics> evaluate() override { return model_.evaluate(variables_); }

  absl::StatusOr<std::optional<int64_t>> optimizer_iterations() const override {
    PSFLOW_ASSIGN_OR_RETURN(Tensor value, optimizer_->iterations().read_value());
    return value.scalar_value<int64_t>();
  }

 private:
  const ClusterSpec spec_;
  const TrainOptions& options_;
  Model& model_;
  int64_t steps_per_epoch_ = 0;
  std::unique_ptr<ParameterServerStrategy> strategy_;
  // The model's parameters, in the order its step function expects.
  std::vector<ShardedVariable> variables_;
  std::optional<Optimizer> optimizer_;
  std::unique_ptr<ClusterCoordinator> coordinator_;
  std::unique_ptr<StatusEndpoint> status_;  // before coordinator_ in destruction
  std::optional<RemoteStructure> args_;     // every closure's
  // The training data's iterator, whose handle args_ carries: kept for the
  // whole run, since the workers drop their iterators once it goes.
  PerWorkerIterator train_iterator_;
  // What every closure carries (settings_.to_structure): args_ with
  // steps_per_execution steps, last_args_ with the last_args_steps_ left at
  // the end of an epoch whose steps are not a multiple of it.
  StepSettings settings_;
  std::optional<RemoteStructure> last_args_;
  int64_t last_args_steps_ = 0;
  int64_t in_doubt_before_epoch_ = 0;  // coordinator_->closures_in_doubt()
  // Cancels the coordinator's closures on a stop request; before
  // coordinator_ in destruction.
  StopRequest::Callback cancel_on_stop_;
};

absl::Status PsTraining::start(absl::Time start) {
  OptimizerConfig optimizer_config;
  PSFLOW_ASSIGN_OR_RETURN(optimizer_config.kind, optimizer_kind_from_name(options_.optimizer));
  PSFLOW_ASSIGN_OR_RETURN(Partitioner partitioner,
                          model_.partitioner(options_, spec_.num_tasks(kPsJob)));
  ParameterServerStrategyOptions strategy_options;
  PSFLOW_ASSIGN_OR_RETURN(strategy_options.placement, parse_placement(options_.placement));
  PSFLOW_ASSIGN_OR_RETURN(strategy_options.wire_dtype, wire_dtype_from_name(options_.wire_dtype));
  PSFLOW_ASSIGN_OR_RETURN(
      strategy_, ParameterServerStrategy::create(SimpleClusterResolver(spec_, "chief", 0),
                                                 std::move(partitioner), strategy_options));
  {
    StrategyScope scope = strategy_->scope();
    PSFLOW_ASSIGN_OR_RETURN(variables_, model_.create_variables(options_.seed));
    PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer,
                            Optimizer::create(optimizer_config, options_.learning_rate));
    optimizer_.emplace(std::move(optimizer));
  }
  if (options_.out != nullptr) {
    std::fprintf(options_.out, "%s\n", ps_bytes_line(strategy_->placed_bytes()).c_str());
    std::fflush(options_.out);
  }
  ClusterCoordinatorOptions coordinator_options;
  // With overlap a worker carries the read of its next closure's first step
  // across closures (docs/overlap.md): the next closure waits on the worker
  // already, so no round trip to the chief leaves the links idle between
  // them. Each worker still runs its closures one at a time, in order.
  if (options_.overlap) coordinator_options.max_in_flight_per_worker = 2;
  // The watchdog's thread stacks go to the run directory.
  coordinator_options.stack_dump_dir = options_.run_dir;
  PSFLOW_ASSIGN_OR_RETURN(coordinator_,
                          ClusterCoordinator::create(*strategy_, coordinator_options));
  if (!options_.run_dir.empty()) {
    // `psflow status --run-dir` reads the task states from here.
    PSFLOW_ASSIGN_OR_RETURN(status_, StatusEndpoint::start(*coordinator_, options_.run_dir));
  }
  if (options_.stop != nullptr) {
    cancel_on_stop_ =
        options_.stop->on_stop([coordinator = coordinator_.get()](const absl::Status& reason) {
          coordinator->cancel(reason);
        });
  }
  // A worker that cannot read its data fails here, naming its host, before
  // any step runs.
  PSFLOW_RETURN_IF_ERROR(check_workers_data(spec_, model_.dataset_function(),
                                            model_.dataset_args(options_), kDataCheckTimeout));
  steps_per_epoch_ = model_.train_examples() / options_.batch_size;

  // What every closure carries besides the model's spec.
  StepSettings settings;
  settings.run_id =
      absl::StrCat(av(model_.name()), "-", options_.seed, "-", absl::ToUnixNanos(start));
  for (const ShardedVariable& v : variables_) settings.variables.push_back(v.handle());
  settings.optimizer = optimizer_config;
  settings.learning_rate = options_.learning_rate;
  if (options_.lr_schedule == "cosine") {
    settings.decay_steps = steps_per_epoch_ * options_.epochs;
    settings.decay_alpha = 0.1;
  }
  settings.iterations = optimizer_->iterations().handle();
  settings.steps = options_.steps_per_execution;
  settings.overlap = options_.overlap;
  PSFLOW_ASSIGN_OR_RETURN(PerWorkerDataset train_data,
                          coordinator_->create_per_worker_dataset(model_.dataset_function(),
                                                                  model_.dataset_args(options_)));
  train_iterator_ = train_data.iter();
  settings.iterator = train_iterator_.handle();
  args_.emplace(settings.to_structure(model_.spec()));
  settings_ = std::move(settings);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingSession>> start_ps_training(const ClusterSpec& spec,
                                                                   const TrainOptions& options,
                                                                   Model& model, absl::Time start) {
  auto training = std::make_unique<PsTraining>(spec, options, model);
  PSFLOW_RETURN_IF_ERROR(training->start(start));
  return training;
}

}  // namespace psflow::internal
