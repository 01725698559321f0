#include "train/train_step.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <map>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "train/closure_args.h"
#include "base/strings.h"
#include "data/idx_reader.h"
#include "ps/optimizer.h"

namespace psflow {
namespace {

constexpr int64_t kMaxBatch = 1 << 20;
constexpr int64_t kMaxSteps = 1 << 20;

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
  for (const VariableHandle& handle : config.variables) {
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v, ShardedVariable::from_handle(handle, *lookup));
    state.variables.push_back(std::move(v));
  }
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable iterations,
                          ShardedVariable::from_handle(config.iterations, *lookup));
  absl::StatusOr<Optimizer> created =
      config.decay_steps > 0
          ? Optimizer::create(config.optimizer,
                              LearningRateSchedule([lr = config.learning_rate,
                                                    steps = config.decay_steps,
                                                    alpha = config.decay_alpha](int64_t step) {
                                return cosine_decay(lr, steps, alpha, step);
                              }),
                              {.iterations = std::move(iterations)})
          : Optimizer::create(config.optimizer, config.learning_rate,
                              {.iterations = std::move(iterations)});
  PSFLOW_ASSIGN_OR_RETURN(Optimizer optimizer, std::move(created));
  state.optimizer.emplace(std::move(optimizer));
  state.run_id = config.run_id;
  return &state;
}

}  // namespace

Structure optimizer_config_to_structure(const OptimizerConfig& c) {
  return Structure::dict({{"kind", std::string(optimizer_name(c.kind))},
                          {"momentum", c.momentum},
                          {"nesterov", c.nesterov},
                          {"initial_accumulator_value", c.initial_accumulator_value},
                          {"epsilon", c.epsilon},
                          {"beta_1", c.beta_1},
                          {"beta_2", c.beta_2},
                          {"learning_rate_power", c.learning_rate_power},
                          {"l1", c.l1_regularization_strength},
                          {"l2", c.l2_regularization_strength},
                          {"beta", c.beta}});
}

absl::StatusOr<OptimizerConfig> optimizer_config_from_structure(const Structure& s) {
  OptimizerConfig c;
  PSFLOW_ASSIGN_OR_RETURN(const Structure* kind, kArgs.field(s, "kind", Structure::Kind::kString));
  PSFLOW_ASSIGN_OR_RETURN(c.kind, optimizer_kind_from_name(kind->string_value()));
  PSFLOW_ASSIGN_OR_RETURN(c.momentum, kArgs.float_field(s, "momentum"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* nesterov, kArgs.field(s, "nesterov", Structure::Kind::kBool));
  c.nesterov = nesterov->bool_value();
  PSFLOW_ASSIGN_OR_RETURN(c.initial_accumulator_value,
                          kArgs.float_field(s, "initial_accumulator_value"));
  PSFLOW_ASSIGN_OR_RETURN(c.epsilon, kArgs.float_field(s, "epsilon"));
  PSFLOW_ASSIGN_OR_RETURN(c.beta_1, kArgs.float_field(s, "beta_1"));
  PSFLOW_ASSIGN_OR_RETURN(c.beta_2, kArgs.float_field(s, "beta_2"));
  PSFLOW_ASSIGN_OR_RETURN(c.learning_rate_power, kArgs.float_field(s, "learning_rate_power"));
  PSFLOW_ASSIGN_OR_RETURN(c.l1_regularization_strength, kArgs.float_field(s, "l1"));
  PSFLOW_ASSIGN_OR_RETURN(c.l2_regularization_strength, kArgs.float_field(s, "l2"));
  PSFLOW_ASSIGN_OR_RETURN(c.beta, kArgs.float_field(s, "beta"));
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(c));
  return c;
}

double cosine_decay(double learning_rate, int64_t decay_steps, double alpha, int64_t step) {
  if (decay_steps <= 0) return learning_rate;
  const double t = static_cast<double>(std::clamp<int64_t>(step, 0, decay_steps)) /
                   static_cast<double>(decay_steps);
  constexpr double kPi = 3.14159265358979323846;
  return learning_rate * ((1.0 - alpha) * 0.5 * (1.0 + std::cos(kPi * t)) + alpha);
}

absl::StatusOr<Dataset> make_train_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* dir, kArgs.field(args, "data_dir", Structure::Kind::kString));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* batch, kArgs.field(args, "batch_size", Structure::Kind::kInt));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* seed, kArgs.field(args, "seed", Structure::Kind::kInt));
  const int64_t batch_size = batch->int_value();
  if (batch_size < 1 || batch_size > kMaxBatch) {
    return kArgs.malformed(absl::StrCat("batch_size ", batch_size, " is outside [1, ", kMaxBatch, "]"));
  }
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const FashionMnist> data,
                          training_data(dir->string_value()));
  // Workers see different orders (TF's advice: shuffle and repeat per
  // worker rather than shard), reproducibly for a given --seed; a worker
  // rebuilt after a restart takes a new order rather than replaying the
  // start of its old one.
  const uint64_t worker_seed = static_cast<uint64_t>(seed->int_value()) * 0x9E3779B97F4A7C15ull +
                               static_cast<uint64_t>(ctx.worker_index) + 1 +
                               ctx.restart_salt * 0xD1B54A32D192ED03ull;
  return Dataset::from_tensor_slices(Structure::tuple({data->train_images, data->train_labels}))
      .shuffle(data->train_labels.dim(0), worker_seed)
      .repeat()
      .batch(batch_size, /*drop_remainder=*/true)
      .prefetch(2);
}

Structure TrainStepConfig::to_structure() const {
  Structure::Items handles;
  for (const VariableHandle& h : variables) handles.push_back(h.to_structure());
  return Structure::dict({{"run_id", run_id},
                          {"model", model.to_structure()},
                          {"variables", Structure::list(std::move(handles))},
                          {"optimizer", optimizer_config_to_structure(optimizer)},
                          {"learning_rate", learning_rate},
                          {"decay_steps", decay_steps},
                          {"decay_alpha", decay_alpha},
                          {"iterations", iterations.to_structure()},
                          {"iterator", iterator},
                          {"steps", steps}});
}

absl::StatusOr<TrainStepConfig> TrainStepConfig::from_structure(const Structure& s) {
  TrainStepConfig c;
  PSFLOW_ASSIGN_OR_RETURN(const Structure* run_id, kArgs.field(s, "run_id", Structure::Kind::kString));
  c.run_id = run_id->string_value();
  PSFLOW_ASSIGN_OR_RETURN(const Structure* model, kArgs.field(s, "model", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(c.model, MlpSpec::from_structure(*model));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* vars, kArgs.field(s, "variables", Structure::Kind::kList));
  const std::vector<Shape> shapes = c.model.parameter_shapes();
  if (vars->size() != shapes.size()) {
    return kArgs.malformed(absl::StrCat("the model has ", shapes.size(), " parameters but ",
                                  vars->size(), " variables were sent"));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(VariableHandle h, VariableHandle::from_structure((*vars)[i]));
    if (h.dtype != DType::kFloat32 || h.shape != shapes[i]) {
      return kArgs.malformed(absl::StrCat("variable ", i, " ('", h.name, "') is ", av(dtype_name(h.dtype)),
                                    " ", shape_string(h.shape), ", the model needs float32 ",
                                    shape_string(shapes[i])));
    }
    c.variables.push_back(std::move(h));
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* opt, kArgs.field(s, "optimizer", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(c.optimizer, optimizer_config_from_structure(*opt));
  PSFLOW_ASSIGN_OR_RETURN(c.learning_rate, kArgs.float_field(s, "learning_rate"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* decay, kArgs.field(s, "decay_steps", Structure::Kind::kInt));
  c.decay_steps = decay->int_value();
  PSFLOW_ASSIGN_OR_RETURN(c.decay_alpha, kArgs.float_field(s, "decay_alpha"));
  if (!(c.learning_rate > 0) || c.decay_steps < 0 || !(c.decay_alpha >= 0 && c.decay_alpha <= 1)) {
    return kArgs.malformed("learning_rate must be > 0, decay_steps >= 0 and decay_alpha in [0, 1]");
  }
  PSFLOW_ASSIGN_OR_RETURN(const Structure* it, kArgs.field(s, "iterations", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(c.iterations, VariableHandle::from_structure(*it));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* iterator, kArgs.field(s, "iterator", Structure::Kind::kDict));
  if (!PerWorkerIterator::is_handle(*iterator)) return kArgs.malformed("'iterator' is not an iterator");
  c.iterator = *iterator;
  PSFLOW_ASSIGN_OR_RETURN(const Structure* steps, kArgs.field(s, "steps", Structure::Kind::kInt));
  c.steps = steps->int_value();
  if (c.steps < 1 || c.steps > kMaxSteps) {
    return kArgs.malformed(absl::StrCat("steps ", c.steps, " is outside [1, ", kMaxSteps, "]"));
  }
  return c;
}

Structure TrainStepResult::to_structure() const {
  return Structure::dict(
      {{"loss_sum", loss_sum}, {"examples", examples}, {"correct", correct}, {"steps", steps}});
}

absl::StatusOr<TrainStepResult> TrainStepResult::from_structure(const Structure& s) {
  TrainStepResult r;
  PSFLOW_ASSIGN_OR_RETURN(r.loss_sum, kArgs.float_field(s, "loss_sum"));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* examples, kArgs.field(s, "examples", Structure::Kind::kInt));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* correct, kArgs.field(s, "correct", Structure::Kind::kInt));
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
    PSFLOW_RETURN_IF_ERROR(state->optimizer->apply_gradients(grads));
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
