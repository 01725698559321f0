#include "train/wide_deep_step.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/optimizer.h"
#include "psflow/status_macros.h"
#include "train/closure_args.h"
#include "train/step_runner.h"
#include "train/wide_deep_data.h"

namespace psflow::internal {
namespace {

constexpr TrainingClosure kClosure{"wide_deep training closure",
                                   ClosureArgs{"wide_deep training closure arguments"},
                                   "train/wide_deep"};

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

absl::StatusOr<StepLoss> wide_deep_step(const WideDeepStepConfig& config, const StepState& state,
                                        const Structure& batch, WideDeepStepMetrics& metrics) {
  PSFLOW_RETURN_IF_ERROR(check_batch(batch, config.model));
  PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(batch[1].tensor()));
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params,
                          pull_wide_deep_parameters(state.variables, unique.values));
  const WideDeepBatch b{batch[0].tensor(), unique.index, batch[2].tensor(), batch[3].tensor()};
  PSFLOW_ASSIGN_OR_RETURN(WideDeepStep out, wide_deep_forward_backward(config.model, params, b));
  std::vector<GradientAndVariable> grads;
  grads.reserve(state.variables.size());
  grads.push_back(
      {to_slices(std::move(out.wide_rows), unique.values), state.variables[kWideTable]});
  grads.push_back({std::move(out.dense[0]), state.variables[kWideBias]});
  grads.push_back(
      {to_slices(std::move(out.deep_rows), unique.values), state.variables[kDeepTable]});
  for (size_t i = kFirstDense; i < state.variables.size(); ++i) {
    grads.push_back({std::move(out.dense[i - kFirstDense + 1]), state.variables[i]});
  }
  PSFLOW_RETURN_IF_ERROR(state.optimizer->apply_gradients(grads));
  PSFLOW_RETURN_IF_ERROR(metrics.auc.update(b.labels, out.probabilities));
  PSFLOW_RETURN_IF_ERROR(metrics.accuracy.update(b.labels, out.probabilities));
  return StepLoss{out.loss, b.labels.dim(0)};
}

}  // namespace

absl::StatusOr<Dataset> make_wide_deep_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* source,
                          kClosure.args.field(args, "source", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(BatchingArgs batching, BatchingArgs::from_structure(args, kClosure.args));
  PSFLOW_ASSIGN_OR_RETURN(WideDeepDataSource src, WideDeepDataSource::from_structure(*source));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const WideDeepData> data, load_wide_deep_data(src));
  return batching.batches(ctx, data->train.to_structure(), data->train.size());
}

absl::StatusOr<Structure> run_wide_deep_steps(WorkerContext& ctx, const Structure& args) {
  return run_training_steps<WideDeepSpec, WideDeepStepMetrics>(ctx, args, kClosure,
                                                               &wide_deep_step);
}

}  // namespace psflow::internal
