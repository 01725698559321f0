// The classifiers of `psflow train`, `mlp` and `logreg`, on Fashion-MNIST
// (internal): trained on ps tasks by the closure of train/train_step.h, or
// on mirrored replicas in this process.
#ifndef PSFLOW_TRAIN_CLASSIFIER_H_
#define PSFLOW_TRAIN_CLASSIFIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "data/idx_reader.h"
#include "psflow/tensor.h"
#include "train/mlp.h"
#include "train/model.h"

namespace psflow::internal {

// The classifier a --model name denotes (input_dim is Fashion-MNIST's).
[[nodiscard]] absl::StatusOr<MlpSpec> classifier_spec(const std::string& model);

// Test loss and accuracy of a classifier with `params`, computed in chunks.
[[nodiscard]] absl::StatusOr<ModelMetrics> evaluate_classifier(const MlpSpec& spec,
                                                               const std::vector<Tensor>& params,
                                                               const Tensor& images,
                                                               const Tensor& labels);

// TrainOptions::data_dir is the directory of the IDX files (empty:
// Debian's dataset-fashion-mnist path); partitioner as given.
// Thread-safety: use from one thread, except forward_backward (see
// MirroredModel).
class ClassifierModel final : public Model, public MirroredModel {
 public:
  // INVALID_ARGUMENT naming --model when `name` is not a classifier's.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<ClassifierModel>> create(
      const std::string& name);

  [[nodiscard]] std::string_view name() const override { return name_; }
  [[nodiscard]] std::string data_name(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status validate(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status check_data(const TrainOptions& options) const override;
  [[nodiscard]] const MirroredModel* mirrored() const override { return this; }

  [[nodiscard]] absl::Status load(const TrainOptions& options) override;
  [[nodiscard]] int64_t train_examples() const override;
  [[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_variables(
      uint64_t seed) override;
  [[nodiscard]] std::string_view step_function() const override;
  [[nodiscard]] Structure spec() const override { return spec_.to_structure(); }
  [[nodiscard]] std::string_view dataset_function() const override;
  [[nodiscard]] Structure dataset_args(const TrainOptions& options) const override;
  [[nodiscard]] std::unique_ptr<EpochTotals> new_totals() const override;
  [[nodiscard]] absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<ShardedVariable>& variables) const override;
  [[nodiscard]] std::vector<std::string> parameter_names() const override {
    return spec_.parameter_names();
  }
  [[nodiscard]] std::string run_config(const TrainOptions& options) const override;

  // MirroredModel.
  [[nodiscard]] Structure training_examples() const override;
  [[nodiscard]] absl::StatusOr<ReplicaStep> forward_backward(const std::vector<Tensor>& params,
                                                             const Structure& batch) const override;
  [[nodiscard]] absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<Tensor>& params) const override;

 private:
  ClassifierModel(std::string name, MlpSpec spec) : name_(std::move(name)), spec_(spec) {}

  std::string name_;
  MlpSpec spec_;
  std::string data_dir_;
  std::optional<FashionMnist> data_;  // set by load()
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_CLASSIFIER_H_
