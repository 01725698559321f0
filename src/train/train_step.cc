#include "train/train_step.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "data/idx_reader.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "train/overlapped_steps.h"
#include "train/step_runner.h"

namespace psflow::internal {
namespace {

constexpr TrainingClosure kClosure{"training closure", kTrainingClosureArgs, "train/classifier"};

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

absl::StatusOr<StepLoss> train_step(const TrainStepConfig& config, const StepState& state,
                                    const Structure& batch, ClassifierStepMetrics& metrics) {
  if (!batch.is_sequence() || batch.size() != 2 || !batch[0].is_tensor() || !batch[1].is_tensor() ||
      batch[0].tensor().dtype() != DType::kUInt8) {
    return absl::InvalidArgumentError(
        "the training dataset must yield (uint8 images, labels) batches");
  }
  const Tensor x = flatten_images(batch[0].tensor());
  const Tensor& y = batch[1].tensor();
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(state.variables));
  PSFLOW_ASSIGN_OR_RETURN(MlpStep out, mlp_forward_backward(config.model, params, x, y));
  std::vector<GradientAndVariable> grads;
  grads.reserve(out.gradients.size());
  for (size_t i = 0; i < out.gradients.size(); ++i) {
    grads.push_back({std::move(out.gradients[i]), state.variables[i]});
  }
  PSFLOW_RETURN_IF_ERROR(state.optimizer->apply_gradients(grads));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t correct, correct_predictions(y, out.probabilities));
  metrics.correct += correct;
  return StepLoss{out.loss, y.dim(0)};
}

}  // namespace

Structure::Fields ClassifierStepMetrics::fields() const { return {{"correct", correct}}; }

absl::StatusOr<ClassifierStepMetrics> ClassifierStepMetrics::from_structure(const Structure& s) {
  ClassifierStepMetrics m;
  PSFLOW_ASSIGN_OR_RETURN(m.correct, kStepResultArgs.int_field(s, "correct"));
  return m;
}

absl::Status ClassifierStepMetrics::merge(const ClassifierStepMetrics& other) {
  correct += other.correct;
  return absl::OkStatus();
}

ModelMetrics ClassifierStepMetrics::figures(const StepSums& sums) const {
  const double examples = static_cast<double>(sums.examples);
  return {sums.mean_loss(), sums.examples > 0 ? static_cast<double>(correct) / examples : 0.0, {}};
}

absl::StatusOr<int64_t> correct_predictions(const Tensor& labels, const Tensor& probabilities) {
  nn::SparseCategoricalAccuracy accuracy;
  PSFLOW_RETURN_IF_ERROR(accuracy.update(labels, probabilities));
  return static_cast<int64_t>(accuracy.result() * static_cast<double>(labels.dim(0)) + 0.5);
}

absl::StatusOr<Dataset> make_train_dataset(const DatasetContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* dir,
                          kClosure.args.field(args, "data_dir", Structure::Kind::kString));
  PSFLOW_ASSIGN_OR_RETURN(BatchingArgs batching, BatchingArgs::from_structure(args, kClosure.args));
  PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<const FashionMnist> data,
                          training_data(dir->string_value()));
  return batching.batches(ctx, Structure::tuple({data->train_images, data->train_labels}),
                          data->train_labels.dim(0));
}

absl::StatusOr<Structure> run_train_steps(WorkerContext& ctx, const Structure& args) {
  PSFLOW_ASSIGN_OR_RETURN(TrainStepConfig config,
                          TrainStepConfig::from_structure(args, kClosure.args));
  if (config.overlap) return run_overlapped_train_steps(ctx, config, kClosure);
  return run_training_steps<MlpSpec, ClassifierStepMetrics>(ctx, args, kClosure, &train_step);
}

}  // namespace psflow::internal
