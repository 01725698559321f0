#include "train/mirrored_training.h"

#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/dataset.h"
#include "psflow/distributed_dataset.h"
#include "psflow/optimizer.h"
#include "psflow/replica_group.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "strategy/variable_snapshots.h"
#include "train/progress.h"
#include "train/run_files.h"
#include "train/step_config.h"

namespace psflow::internal {
namespace {

// A copy of `slots` that shares no buffer with it.
OptimizerSlots clone_slots(const OptimizerSlots& slots) {
  OptimizerSlots out;
  out.optimizer = slots.optimizer;
  out.steps = slots.steps;
  for (const auto& [name, tensor] : slots.slots) out.slots.emplace(name, tensor.clone());
  return out;
}

// Thread-safety: use from one thread (the replicas of a step run on their
// own threads, each on its own copy).
class MirroredTraining final : public TrainingSession {
 public:
  MirroredTraining(const TrainOptions& options, Model& model, ReplicaGroup group)
      : options_(options), model_(model), mirrored_(*model.mirrored()), group_(std::move(group)) {}

  absl::Status start();

  void describe(TrainSummary& summary) const override { summary.replicas = options_.replicas; }

  // Checkpoints as a parameter-server run does: the same files, names and
  // format (variables in this process save as "chief-0.safetensors"), so
  // that `psflow eval` reads them alike and either strategy resumes from
  // the other's. After a restore every replica starts from its values.
  absl::StatusOr<EpochLoop> epoch_loop() override {
    PSFLOW_RETURN_IF_ERROR(write_run_config(options_, model_));
    PSFLOW_ASSIGN_OR_RETURN(
        EpochLoop loop, EpochLoop::create(ClusterSpec(), options_, model_.parameter_names(),
                                          variables_, *checkpointed_optimizer_, steps_per_epoch_));
    PSFLOW_RETURN_IF_ERROR(load_from_variables());
    step_ = loop.restored_steps();
    return loop;
  }

  // Replica 0's parameters, slots and step end up in the checkpointed
  // variables also when the epoch stops early (a stop request): every step
  // ran whole on this thread, so a stop's checkpoint holds exactly them.
  absl::StatusOr<EpochRun> train_epoch(int epoch, int64_t done_steps, int64_t* completed) override {
    absl::StatusOr<EpochRun> run = train_steps(epoch, done_steps, completed);
    PSFLOW_RETURN_IF_ERROR(store_in_variables());
    return run;
  }

  // Steps run whole on this thread.
  absl::Status check_state_after_stop() const override { return absl::OkStatus(); }

  absl::StatusOr<ModelMetrics> evaluate() override { return mirrored_.evaluate(params_[0]); }

  absl::StatusOr<std::optional<int64_t>> optimizer_iterations() const override { return step_; }

 private:
  absl::StatusOr<EpochRun> train_steps(int epoch, int64_t done_steps, int64_t* completed);
  // Replica 0's state (every replica's is the same) into variables_ and
  // the optimizer's iterations, copied: training goes on in place.
  absl::Status store_in_variables();
  // variables_' values and slots (restored, or initial) into every replica.
  absl::Status load_from_variables();

  // One synchronous step on every replica: forward and backward on its
  // share of `batch`, gradients all-reduced, the same update applied to
  // every copy. Adds the replicas' results to `totals`.
  absl::Status step(const PerReplica& batch, double learning_rate, EpochTotals& totals);

  const TrainOptions& options_;
  Model& model_;
  const MirroredModel& mirrored_;
  ReplicaGroup group_;
  OptimizerConfig optimizer_;
  // What is checkpointed, in this process: the model's variables (outside
  // any strategy scope) and an optimizer whose iterations count step_.
  std::vector<ShardedVariable> variables_;
  std::optional<Optimizer> checkpointed_optimizer_;
  // One copy of the parameters and optimizer slots per replica.
  std::vector<std::vector<Tensor>> params_;
  std::vector<std::vector<OptimizerSlots>> slots_;
  int64_t steps_per_epoch_ = 0;
  int64_t step_ = 0;  // of the run, for the learning-rate schedule
  std::optional<DistributedDataset> distributed_;
  std::optional<DistributedIterator> batches_;
};

absl::Status MirroredTraining::start() {
  PSFLOW_ASSIGN_OR_RETURN(optimizer_.kind, optimizer_kind_from_name(options_.optimizer));
  // Outside any strategy scope: variables of this process, with the
  // model's initial values (epoch_loop() copies them to the replicas).
  PSFLOW_ASSIGN_OR_RETURN(variables_, model_.create_variables(options_.seed));
  PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer,
                          Optimizer::create(optimizer_, options_.learning_rate));
  checkpointed_optimizer_.emplace(std::move(optimizer));
  const int64_t examples = model_.train_examples();
  steps_per_epoch_ = examples / options_.batch_size;
  PSFLOW_ASSIGN_OR_RETURN(DistributedDataset distributed,
                          group_.experimental_distribute_dataset(
                              Dataset::from_tensor_slices(mirrored_.training_examples())
                                  .shuffle(examples, options_.seed + 1)
                                  .repeat()
                                  .batch(options_.batch_size, /*drop_remainder=*/true)
                                  .prefetch(2)));
  distributed_.emplace(std::move(distributed));
  batches_.emplace(distributed_->make_iterator());
  return absl::OkStatus();
}

absl::Status MirroredTraining::step(const PerReplica& batch, double learning_rate,
                                    EpochTotals& totals) {
  PSFLOW_ASSIGN_OR_RETURN(
      PerReplica outputs,
      group_.run(
          [&](const ReplicaContext& ctx,
              const std::vector<Structure>& args) -> absl::StatusOr<Structure> {
            const int r = ctx.replica_id_in_sync_group();
            PSFLOW_ASSIGN_OR_RETURN(ReplicaStep out,
                                    mirrored_.forward_backward(params_[r], args[0]));
            Structure::Items grads;
            for (Tensor& g : out.gradients) grads.push_back(std::move(g));
            PSFLOW_ASSIGN_OR_RETURN(
                Structure reduced,
                ctx.all_reduce(ReduceOp::kMean, Structure::list(std::move(grads))));
            for (size_t p = 0; p < params_[r].size(); ++p) {
              PSFLOW_RETURN_IF_ERROR(apply_dense_gradient(optimizer_, learning_rate, params_[r][p],
                                                          slots_[r][p], reduced[p].tensor()));
            }
            return std::move(out.result);
          },
          {batch}));
  for (const Structure& result : outputs.values()) PSFLOW_RETURN_IF_ERROR(totals.add(result));
  return absl::OkStatus();
}

absl::Status MirroredTraining::store_in_variables() {
  std::vector<ShardedVariable> variables = variables_;
  std::vector<std::vector<ShardSnapshot>> states;
  for (size_t p = 0; p < params_[0].size(); ++p) {
    states.push_back({ShardSnapshot{params_[0][p].clone(), clone_slots(slots_[0][p])}});
  }
  variables.push_back(checkpointed_optimizer_->iterations());
  states.push_back({ShardSnapshot{Tensor::scalar<int64_t>(step_), {}}});
  return restore_variables(variables, states);
}

absl::Status MirroredTraining::load_from_variables() {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<std::vector<ShardSnapshot>> states,
                          snapshot_variables(variables_));
  params_.assign(options_.replicas, {});
  slots_.assign(options_.replicas, {});
  for (int r = 0; r < options_.replicas; ++r) {
    for (const std::vector<ShardSnapshot>& parts : states) {
      if (parts.size() != 1) {
        return absl::InternalError("a mirrored run's variable has more than one part");
      }
      params_[r].push_back(parts[0].value.clone());
      slots_[r].push_back(clone_slots(parts[0].slots));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<EpochRun> MirroredTraining::train_steps(int epoch, int64_t done_steps,
                                                       int64_t* completed) {
  const absl::Time start = absl::Now();
  const int64_t total_steps = steps_per_epoch_ * options_.epochs;
  const int64_t steps = steps_per_epoch_ - done_steps;
  ProgressBar progress =
      ProgressBar::for_epoch(options_, epoch, steps, steps_per_epoch_ * (options_.epochs - epoch));
  EpochRun run{model_.new_totals(), 0, 0.0};
  *completed = 0;
  for (; run.steps < steps; ++run.steps, ++step_, ++*completed) {
    if (options_.stop != nullptr && options_.stop->requested()) return options_.stop->reason();
    PSFLOW_ASSIGN_OR_RETURN(std::optional<PerReplica> batch, batches_->get_next());
    if (!batch.has_value()) return absl::InternalError("the repeated training set ended");
    const double learning_rate = options_.lr_schedule == "cosine"
                                     ? cosine_decay(options_.learning_rate, total_steps, 0.1, step_)
                                     : options_.learning_rate;
    PSFLOW_RETURN_IF_ERROR(step(*batch, learning_rate, *run.totals));
    progress.update(run.steps + 1, run.totals->sums().mean_loss());
  }
  run.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  progress.finish();
  // The copies must agree exactly: they applied the same updates.
  for (size_t r = 1; r < params_.size(); ++r) {
    for (size_t p = 0; p < params_[0].size(); ++p) {
      if (!(params_[r][p] == params_[0][p])) {
        return absl::InternalError(
            absl::StrCat("replica ", r, "'s copy of parameter ", p, " diverged from replica 0's"));
      }
    }
  }
  return run;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TrainingSession>> start_mirrored_training(
    const TrainOptions& options, Model& model) {
  if (model.mirrored() == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("--model ", av(model.name()), " does not train with --strategy mirrored"));
  }
  PSFLOW_ASSIGN_OR_RETURN(ReplicaGroup group, ReplicaGroup::create(options.replicas));
  auto training = std::make_unique<MirroredTraining>(options, model, std::move(group));
  PSFLOW_RETURN_IF_ERROR(training->start());
  return training;
}

}  // namespace psflow::internal
