#include "train/train_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "data/idx_reader.h"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"
#include "train/closure_args.h"

namespace psflow {
namespace {

constexpr int64_t kMaxBatch = 1 << 20;

constexpr ClosureArgs kArgs{"training closure arguments"};

// The training set, loaded once per process and directory.
absl::StatusOr<std::shared_ptr<const FashionMnist>> training_data(const std::string& dir) {
  static absl::Mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const FashionMnist>>();
  absl::MutexLock lock(&mu);
  auto it = cache->find(dir);
  if (it != cache->end()) return it->second;
  PSFLOW_ASSIGN_OR_RETURN(FashionMnist data, load_fashion_mnist(dir));
  auto shared = std::make_shared<const FashionMnist>(std::move(data));
  (*cache)[dir] = shared;
  return shared;
}

// What a worker keeps between the closures of one run.
struct WorkerTrainState {
  std::string run_id;
  std::vector<ShardedVariable> variables;
  std::optional<Optimizer> optimizer;
};

absl::StatusOr<WorkerTrainState*> state_for(WorkerContext& ctx, const TrainStepConfig& config) {
  auto& state = ctx.resources().get_or_create<WorkerTrainState>("train/classifier");
  if (state.run_id == config.run_id && state.optimizer.has_value()) return &state;
  state = WorkerTrainState();
  const VariableClientLookup* lookup = ctx.variable_clients();
  if (lookup == nullptr) {
    return absl::FailedPreconditionError(
        "the training closure needs parameter servers; this worker has none");
  }
  PSFLOW_ASSIGN_OR_RETURN(StepState resolved, resolve_step_state(config, *lookup));
  state.variables = std::move(resolved.variables);
  state.optimizer = std::move(resolved.optimizer);
  state.run_id = config.run_id;
  return &state;
}

}  // namespace

absl::StatusOr<Dataset> make_train_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* dir,
                          kArgs.field(args, "data_dir", Structure::Kind::kString));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* batch,
                          kArgs.field(args, "batch_size", Structure::Kind::kInt));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* seed, kArgs.field(args, "seed", Structure::Kind::kInt));
  const int64_t batch_size = batch->int_value();
  if (batch_size < 1 || batch_size > kMaxBatch) {
    return kArgs.malformed(
        absl::StrCat("batch_size ", batch_size, " is outside [1, ", kMaxBatch, "]"));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const FashionMnist> data,
                          training_data(dir->string_value()));
  return Dataset::from_tensor_slices(Structure::tuple({data->train_images, data->train_labels}))
      .shuffle(data->train_labels.dim(0), ctx.worker_seed(static_cast<uint64_t>(seed->int_value())))
      .repeat()
      .batch(batch_size, /*drop_remainder=*/true)
      .prefetch(2);
}

absl::StatusOr<TrainStepConfig> TrainStepConfig::from_structure(const Structure& s) {
  PSFLOW_ASSIGN_OR_RETURN(auto common, StepConfig::from_structure(s, kArgs));
  return TrainStepConfig{std::move(common)};
}

Structure TrainStepResult::to_structure() const {
  return Structure::dict(
      {{"loss_sum", loss_sum}, {"examples", examples}, {"correct", correct}, {"steps", steps}});
}

absl::StatusOr<TrainStepResult> TrainStepResult::from_structure(const Structure& s) {
  TrainStepResult r;
  PSFLOW_ASSIGN_OR_RETURN(r.loss_sum, kArgs.float_field(s, "loss_sum"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* examples,
                          kArgs.field(s, "examples", Structure::Kind::kInt));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* correct,
                          kArgs.field(s, "correct", Structure::Kind::kInt));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* steps, kArgs.field(s, "steps", Structure::Kind::kInt));
  r.examples = examples->int_value();
  r.correct = correct->int_value();
  r.steps = steps->int_value();
  return r;
}

void TrainStepResult::add(const TrainStepResult& other) {
  loss_sum += other.loss_sum;
  examples += other.examples;
  correct += other.correct;
  steps += other.steps;
}

absl::StatusOr<Structure> run_train_steps(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(TrainStepConfig config, TrainStepConfig::from_structure(args));
  PSFLOW_ASSIGN_OR_RETURN(WorkerTrainState * state, state_for(ctx, config));
  // Bound to this closure: a retry's updates apply once on the ps.
  const Optimizer optimizer = ctx.bind(*state->optimizer);
  TrainStepResult result;
  for (int64_t step = 0; step < config.steps; ++step) {
    if (ctx.is_cancelled()) return absl::CancelledError("training closure cancelled");
    PSFLOW_ASSIGN_OR_RETURN(Structure batch, ctx.next(config.iterator));
    if (!batch.is_sequence() || batch.size() != 2 || !batch[0].is_tensor() ||
        !batch[1].is_tensor() || batch[0].tensor().dtype() != DType::kUInt8) {
      return absl::InvalidArgumentError(
          "the training dataset must yield (uint8 images, labels) batches");
    }
    const Tensor x = flatten_images(batch[0].tensor());
    const Tensor& y = batch[1].tensor();
    const int64_t batch_size = y.dim(0);
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(state->variables));
    PSFLOW_ASSIGN_OR_RETURN(MlpStep out, mlp_forward_backward(config.model, params, x, y));
    std::vector<GradientAndVariable> grads;
    grads.reserve(out.gradients.size());
    for (size_t i = 0; i < out.gradients.size(); ++i) {
      grads.push_back({std::move(out.gradients[i]), state->variables[i]});
    }
    PSFLOW_RETURN_IF_ERROR(optimizer.apply_gradients(grads));
    // Accuracy on the batch, from the probabilities the loss computed.
    auto probs = out.probabilities.matrix<float>();
    auto labels = y.flat<uint8_t>();
    for (int64_t r = 0; r < probs.rows(); ++r) {
      Eigen::Index best = 0;
      probs.row(r).maxCoeff(&best);
      if (best == labels[r]) ++result.correct;
    }
    result.loss_sum += out.loss * static_cast<double>(batch_size);
    result.examples += batch_size;
    ++result.steps;
  }
  return result.to_structure();
}

}  // namespace psflow
