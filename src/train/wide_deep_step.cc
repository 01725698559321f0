#include "train/wide_deep_step.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/optimizer.h"
#include "psflow/status_macros.h"
#include "train/closure_args.h"
#include "train/train_step.h"
#include "train/wide_deep_data.h"

namespace psflow {
namespace {

constexpr int64_t kMaxBatch = 1 << 20;

constexpr ClosureArgs kArgs{"wide_deep training closure arguments"};

// The handles a worker rebuilds once per run.
struct WorkerModel {
  std::vector<ShardedVariable> variables;
  std::optional<Optimizer> optimizer;
};

// What a worker keeps between the closures of one run.
// Thread-safety: thread-safe.
struct WorkerWideDeepState {
  absl::Mutex mu;
  std::string run_id ABSL_GUARDED_BY(mu);
  std::shared_ptr<const WorkerModel> model ABSL_GUARDED_BY(mu);
};

absl::StatusOr<std::shared_ptr<const WorkerModel>> model_for(WorkerContext& ctx,
                                                             const WideDeepStepConfig& config) {
  auto& state = ctx.resources().get_or_create<WorkerWideDeepState>("train/wide_deep");
  absl::MutexLock lock(&state.mu);
  if (state.model != nullptr && state.run_id == config.run_id) return state.model;
  const VariableClientLookup* lookup = ctx.variable_clients();
  if (lookup == nullptr) {
    return absl::FailedPreconditionError(
        "the wide_deep training closure needs parameter servers; this worker has none");
  }
  auto model = std::make_shared<WorkerModel>();
  PSFLOW_ASSIGN_OR_RETURN(StepState resolved, resolve_step_state(config, *lookup));
  model->variables = std::move(resolved.variables);
  model->optimizer = std::move(resolved.optimizer);
  state.model = std::move(model);
  state.run_id = config.run_id;
  return state.model;
}

// The ids of a row-sparse gradient: its indices are positions into
// `unique` (the ids the rows were pulled for).
IndexedSlices to_slices(nn::SparseGradient g, const Tensor& unique) {
  const auto positions = g.indices.flat<int64_t>();
  const auto ids = unique.flat<int64_t>();
  Tensor out(DType::kInt64, {static_cast<int64_t>(positions.size())});
  auto o = out.mutable_flat<int64_t>();
  for (size_t i = 0; i < positions.size(); ++i) o[i] = ids[positions[i]];
  return IndexedSlices{std::move(g.values), std::move(out)};
}

// A batch from the dataset: (dense [B, F], ids [B, L], weights [B, L],
// labels [B]).
absl::Status check_batch(const Structure& batch, const WideDeepSpec& spec) {
  const auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the wide_deep dataset must yield (float32 dense [B, F], int64 ids [B, L], float32 "
        "weights [B, L], float32 labels [B]) batches: ",
        av(what)));
  };
  if (!batch.is_sequence() || batch.size() != 4) return bad("not a 4-tuple");
  for (size_t i = 0; i < 4; ++i) {
    if (!batch[i].is_tensor()) return bad(absl::StrCat("element ", i, " is not a tensor"));
  }
  const Tensor& dense = batch[0].tensor();
  const Tensor& ids = batch[1].tensor();
  const Tensor& weights = batch[2].tensor();
  const Tensor& labels = batch[3].tensor();
  if (ids.dtype() != DType::kInt64 || ids.rank() != 2) return bad("ids");
  const int64_t b = ids.dim(0);
  if (dense.dtype() != DType::kFloat32 || dense.shape() != Shape{b, spec.dense_features}) {
    return bad(absl::StrCat("dense is ", shape_string(dense.shape()), ", the model has ",
                            spec.dense_features, " dense features"));
  }
  if (weights.dtype() != DType::kFloat32 || weights.shape() != ids.shape()) return bad("weights");
  if (labels.dtype() != DType::kFloat32 || labels.shape() != Shape{b}) return bad("labels");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Dataset> make_wide_deep_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* source,
                          kArgs.field(args, "source", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(int64_t batch_size, kArgs.int_field(args, "batch_size"));
  PSFLOW_ASSIGN_OR_RETURN(int64_t seed, kArgs.int_field(args, "seed"));
  if (batch_size < 1 || batch_size > kMaxBatch) {
    return kArgs.malformed(
        absl::StrCat("batch_size ", batch_size, " is outside [1, ", kMaxBatch, "]"));
  }
  PSFLOW_ASSIGN_OR_RETURN(WideDeepDataSource src, WideDeepDataSource::from_structure(*source));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const WideDeepData> data, load_wide_deep_data(src));
  return Dataset::from_tensor_slices(data->train.to_structure())
      .shuffle(data->train.size(), ctx.worker_seed(static_cast<uint64_t>(seed)))
      .repeat()
      .batch(batch_size, /*drop_remainder=*/true)
      .prefetch(2);
}

absl::StatusOr<WideDeepStepConfig> WideDeepStepConfig::from_structure(const Structure& s) {
  PSFLOW_ASSIGN_OR_RETURN(auto common, StepConfig::from_structure(s, kArgs));
  return WideDeepStepConfig{std::move(common)};
}

Structure WideDeepStepResult::to_structure() const {
  return Structure::dict({{"loss_sum", loss_sum},
                          {"examples", examples},
                          {"steps", steps},
                          {"auc", auc.to_structure()},
                          {"accuracy", accuracy.to_structure()}});
}

absl::StatusOr<WideDeepStepResult> WideDeepStepResult::from_structure(const Structure& s) {
  WideDeepStepResult r;
  PSFLOW_ASSIGN_OR_RETURN(r.loss_sum, kArgs.float_field(s, "loss_sum"));
  PSFLOW_ASSIGN_OR_RETURN(r.examples, kArgs.int_field(s, "examples"));
  PSFLOW_ASSIGN_OR_RETURN(r.steps, kArgs.int_field(s, "steps"));
  if (r.examples < 0 || r.steps < 0) return kArgs.malformed("negative counts in a step result");
  PSFLOW_ASSIGN_OR_RETURN(const Structure* auc, kArgs.field(s, "auc", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(r.auc, nn::AUC::from_structure(*auc));
  PSFLOW_ASSIGN_OR_RETURN(const Structure* acc, kArgs.field(s, "accuracy", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(r.accuracy, nn::BinaryAccuracy::from_structure(*acc));
  return r;
}

absl::Status WideDeepStepResult::add(const WideDeepStepResult& other) {
  PSFLOW_RETURN_IF_ERROR(auc.merge(other.auc));
  PSFLOW_RETURN_IF_ERROR(accuracy.merge(other.accuracy));
  loss_sum += other.loss_sum;
  examples += other.examples;
  steps += other.steps;
  return absl::OkStatus();
}

absl::StatusOr<Structure> run_wide_deep_steps(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(WideDeepStepConfig config, WideDeepStepConfig::from_structure(args));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const WorkerModel> model, model_for(ctx, config));
  // Bound to this closure: a retry's updates apply once on the ps.
  const Optimizer optimizer = ctx.bind(*model->optimizer);
  WideDeepStepResult result;
  for (int64_t step = 0; step < config.steps; ++step) {
    if (ctx.is_cancelled()) return absl::CancelledError("wide_deep training closure cancelled");
    PSFLOW_ASSIGN_OR_RETURN(Structure batch, ctx.next(config.iterator));
    PSFLOW_RETURN_IF_ERROR(check_batch(batch, config.model));
    PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(batch[1].tensor()));
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params,
                            pull_wide_deep_parameters(model->variables, unique.values));
    const WideDeepBatch b{batch[0].tensor(), unique.index, batch[2].tensor(), batch[3].tensor()};
    PSFLOW_ASSIGN_OR_RETURN(WideDeepStep out, wide_deep_forward_backward(config.model, params, b));
    std::vector<GradientAndVariable> grads;
    grads.reserve(model->variables.size());
    grads.push_back(
        {to_slices(std::move(out.wide_rows), unique.values), model->variables[kWideTable]});
    grads.push_back({std::move(out.dense[0]), model->variables[kWideBias]});
    grads.push_back(
        {to_slices(std::move(out.deep_rows), unique.values), model->variables[kDeepTable]});
    for (size_t i = kFirstDense; i < model->variables.size(); ++i) {
      grads.push_back({std::move(out.dense[i - kFirstDense + 1]), model->variables[i]});
    }
    PSFLOW_RETURN_IF_ERROR(optimizer.apply_gradients(grads));
    PSFLOW_RETURN_IF_ERROR(result.auc.update(b.labels, out.probabilities));
    PSFLOW_RETURN_IF_ERROR(result.accuracy.update(b.labels, out.probabilities));
    const int64_t n = b.labels.dim(0);
    result.loss_sum += out.loss * static_cast<double>(n);
    result.examples += n;
    ++result.steps;
  }
  return result.to_structure();
}

}  // namespace psflow
