#include "train/dlrm_step.h"

#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/optimizer.h"
#include "psflow/status_macros.h"
#include "strategy/partial_apply.h"
#include "train/closure_args.h"
#include "train/dlrm_data.h"

namespace psflow::internal {
namespace {

constexpr TrainingClosure kClosure{"dlrm training closure",
                                   ClosureArgs{"dlrm training closure arguments"}, "train/dlrm"};

// A batch from the dataset: (dense [B, 13], keys [B, 26], labels [B]).
absl::Status check_batch(const Structure& batch) {
  const auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the dlrm dataset must yield (float32 dense [B, 13], int64 keys [B, 26], float32 labels "
        "[B]) batches: ",
        av(what)));
  };
  if (!batch.is_sequence() || batch.size() != 3) return bad("not a 3-tuple");
  for (size_t i = 0; i < 3; ++i) {
    if (!batch[i].is_tensor()) return bad(absl::StrCat("element ", i, " is not a tensor"));
  }
  const Tensor& dense = batch[0].tensor();
  const Tensor& keys = batch[1].tensor();
  const Tensor& labels = batch[2].tensor();
  if (keys.dtype() != DType::kInt64 || keys.rank() != 2 || keys.dim(1) != kDlrmSparseFeatures) {
    return bad("keys");
  }
  const int64_t b = keys.dim(0);
  if (dense.dtype() != DType::kFloat32 || dense.shape() != Shape{b, kDlrmDenseFeatures}) {
    return bad("dense");
  }
  if (labels.dtype() != DType::kFloat32 || labels.shape() != Shape{b}) return bad("labels");
  return absl::OkStatus();
}

absl::StatusOr<StepLoss> dlrm_step(const DlrmStepConfig& config, const StepState& state,
                                   const DynamicEmbedding& table, const Structure& batch,
                                   DlrmStepMetrics& metrics) {
  PSFLOW_RETURN_IF_ERROR(check_batch(batch));
  PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(batch[1].tensor()));
  std::future<absl::StatusOr<Tensor>> rows =
      std::async(std::launch::async, [&] { return table.lookup(unique.values); });
  absl::StatusOr<std::vector<Tensor>> params = read_values(state.variables);
  absl::StatusOr<Tensor> pulled = rows.get();
  PSFLOW_RETURN_IF_ERROR(params.status());
  PSFLOW_RETURN_IF_ERROR(pulled.status());
  const DlrmBatch b{batch[0].tensor(), unique.index, *std::move(pulled), batch[2].tensor()};
  PSFLOW_ASSIGN_OR_RETURN(DlrmGradients g, dlrm_forward_backward(config.model, *params, b));
  // The table follows the dense variables' schedule (--lr-schedule): the
  // rate of the step the optimizer is at.
  PSFLOW_ASSIGN_OR_RETURN(const double table_lr, current_learning_rate(*state.optimizer));
  std::future<absl::Status> sparse = std::async(
      std::launch::async, [&] { return table.apply_gradients(unique.values, g.rows, table_lr); });
  std::vector<GradientAndVariable> grads;
  grads.reserve(state.variables.size());
  for (size_t i = 0; i < state.variables.size(); ++i) {
    grads.push_back({std::move(g.dense[i]), state.variables[i]});
  }
  absl::Status dense = state.optimizer->apply_gradients(grads);
  absl::Status applied = sparse.get();
  PSFLOW_RETURN_IF_ERROR(dense);
  PSFLOW_RETURN_IF_ERROR(applied);
  PSFLOW_RETURN_IF_ERROR(metrics.auc.update(b.labels, g.probabilities));
  PSFLOW_RETURN_IF_ERROR(metrics.accuracy.update(b.labels, g.probabilities));
  return StepLoss{g.loss, b.labels.dim(0)};
}

}  // namespace

absl::StatusOr<Dataset> make_dlrm_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* source,
                          kClosure.args.field(args, "source", Structure::Kind::kDict));
  PSFLOW_ASSIGN_OR_RETURN(BatchingArgs batching, BatchingArgs::from_structure(args, kClosure.args));
  PSFLOW_ASSIGN_OR_RETURN(DlrmDataSource src, DlrmDataSource::from_structure(*source));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const DlrmData> data, load_dlrm_data(src));
  return batching.batches(ctx, data->train.to_structure(), data->train.size());
}

absl::StatusOr<Structure> run_dlrm_steps(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(DlrmStepConfig config,
                          DlrmStepConfig::from_structure(args, kClosure.args));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const StepState> shared,
                          step_state_for(ctx, kClosure, config));
  // step_state_for found the ps clients.
  PSFLOW_ASSIGN_OR_RETURN(DynamicEmbedding table, DynamicEmbedding::from_handle(
                                                      config.model.table, *ctx.variable_clients()));
  // Bound to this closure: a retry's lookups and updates apply once on the
  // ps (the shared state stays unbound across closures).
  const StepState state{shared->variables, ctx.bind(*shared->optimizer)};
  const DynamicEmbedding bound = ctx.bind(table);
  StepResult<DlrmStepMetrics> result;
  for (int64_t i = 0; i < config.steps; ++i) {
    PSFLOW_ASSIGN_OR_RETURN(Structure batch, next_training_batch(ctx, kClosure, config));
    PSFLOW_ASSIGN_OR_RETURN(StepLoss loss, dlrm_step(config, state, bound, batch,
                                                     static_cast<DlrmStepMetrics&>(result)));
    result.loss_sum += loss.loss * static_cast<double>(loss.examples);
    result.examples += loss.examples;
    ++result.steps;
  }
  return result.to_structure();
}

}  // namespace psflow::internal
