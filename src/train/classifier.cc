#include "train/classifier.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/data_files.h"
#include "train/train_step.h"

namespace psflow::internal {

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

absl::StatusOr<ModelMetrics> evaluate_classifier(const MlpSpec& spec,
                                                 const std::vector<Tensor>& params,
                                                 const Tensor& images, const Tensor& labels) {
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
  return ModelMetrics{n > 0 ? loss_sum / static_cast<double>(n) : 0.0, accuracy.result(), {}};
}

absl::StatusOr<std::unique_ptr<ClassifierModel>> ClassifierModel::create(const std::string& name) {
  PSFLOW_ASSIGN_OR_RETURN(MlpSpec spec, classifier_spec(name));
  return std::unique_ptr<ClassifierModel>(new ClassifierModel(name, std::move(spec)));
}

std::string ClassifierModel::data_name(const TrainOptions& options) const {
  return "Fashion-MNIST";
}

absl::Status ClassifierModel::validate(const TrainOptions& o) const {
  if (o.batch_size < 1 || o.batch_size > 60000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--batch-size ", o.batch_size, " is out of range; use 1 to 60000 (the training set)"));
  }
  return absl::OkStatus();
}

absl::Status ClassifierModel::check_data(const TrainOptions& options) const {
  const std::string dir = options.data_dir.empty() ? kFashionMnistDir : options.data_dir;
  const std::string fix =
      options.data_dir.empty()
          ? "install Debian's dataset-fashion-mnist package (apt-get install "
            "dataset-fashion-mnist, or run scripts/install-deps.sh), or pass --data-dir"
          : "--data-dir must name a directory holding the four Fashion-MNIST IDX files "
            "(drop it to use Debian's dataset-fashion-mnist package)";
  for (const char* name : kFashionMnistFiles) {
    PSFLOW_RETURN_IF_ERROR(
        check_readable_file(absl::StrCat(dir, "/", name), "Fashion-MNIST file", fix));
  }
  return absl::OkStatus();
}

absl::Status ClassifierModel::load(const TrainOptions& options) {
  data_dir_ = options.data_dir.empty() ? kFashionMnistDir : options.data_dir;
  PSFLOW_ASSIGN_OR_RETURN(FashionMnist data, load_fashion_mnist(data_dir_));
  spec_.input_dim = data.train_images.num_elements() / data.train_images.dim(0);
  data_.emplace(std::move(data));
  return absl::OkStatus();
}

int64_t ClassifierModel::train_examples() const { return data_->train_labels.dim(0); }

absl::StatusOr<std::vector<ShardedVariable>> ClassifierModel::create_variables(uint64_t seed) {
  return create_mlp_variables(spec_, seed);
}

std::string_view ClassifierModel::step_function() const { return kTrainStepFunction; }

std::string_view ClassifierModel::dataset_function() const { return kTrainDataset; }

Structure ClassifierModel::dataset_args(const TrainOptions& options) const {
  return Structure::dict({{"data_dir", data_dir_},
                          {"batch_size", options.batch_size},
                          {"seed", static_cast<int64_t>(options.seed)}});
}

std::unique_ptr<EpochTotals> ClassifierModel::new_totals() const {
  return std::make_unique<StepResultTotals<ClassifierStepMetrics>>();
}

absl::StatusOr<ModelMetrics> ClassifierModel::evaluate(
    const std::vector<ShardedVariable>& variables) const {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(variables));
  return evaluate(params);
}

std::string ClassifierModel::run_config(const TrainOptions& options) const {
  return nlohmann::json({{"model", name_}, {"strategy", options.strategy}, {"data_dir", data_dir_}})
      .dump(2);
}

Structure ClassifierModel::training_examples() const {
  return Structure::tuple({data_->train_images, data_->train_labels});
}

absl::StatusOr<ReplicaStep> ClassifierModel::forward_backward(const std::vector<Tensor>& params,
                                                              const Structure& batch) const {
  const Tensor x = flatten_images(batch[0].tensor());
  const Tensor& y = batch[1].tensor();
  PSFLOW_ASSIGN_OR_RETURN(MlpStep out, mlp_forward_backward(spec_, params, x, y));
  PSFLOW_ASSIGN_OR_RETURN(const int64_t correct, correct_predictions(y, out.probabilities));
  const int64_t n = y.dim(0);
  const TrainStepResult result{{out.loss * static_cast<double>(n), n, 1}, {correct}};
  return ReplicaStep{std::move(out.gradients), result.to_structure()};
}

absl::StatusOr<ModelMetrics> ClassifierModel::evaluate(const std::vector<Tensor>& params) const {
  return evaluate_classifier(spec_, params, data_->test_images, data_->test_labels);
}

}  // namespace psflow::internal
