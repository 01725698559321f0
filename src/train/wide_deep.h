// The `wide_deep` model of `psflow train` (internal): Wide & Deep
// (train/wide_deep_model.h) on sparse ids through sharded embeddings plus
// dense features, trained asynchronously on ps and worker tasks by the
// closure of train/wide_deep_step.h.
//
// How TrainOptions apply:
//  * data_dir: empty trains on the synthetic click-through generator of
//    train/wide_deep_data.h (defaults: 200,000 train / 20,000 test
//    examples, 8 dense features, bags of 8 ids from 100,000, generated with
//    --seed); otherwise a LIBSVM file, or "train_file,test_file" (a single
//    file is split 90/10 with --seed). Workers read the same path, so on a
//    real cluster it must be on storage every task sees.
//  * partitioner: "auto" (the default) means fixed:<number of ps> for
//    wide_deep, so that both tables (and the dense kernels) are sharded
//    over every ps and each ps serves its share of every batch's ids;
//    "none" (or fixed:1) keeps every variable whole.
//  * optimizer / learning_rate / batch_size: as given. Adagrad with a large
//    rate is the natural choice for sparse features: kWideDeepDefault*
//    below are what the CLI uses when the user gives none of them (5
//    epochs on the default data, seed 0, 2 ps and 2 workers: test AUC
//    0.757, accuracy 0.69, in about 20 s; the generator's true logits give
//    0.82). Adam at 0.001 peaks about as high after 2 epochs, then
//    overfits the 1.6M-parameter deep table.
//  * strategy must be parameter_server.
// Its epoch line and summary.json add train and test AUC; summary.json
// also the data, the model sizes and the tables' shard devices.
#ifndef PSFLOW_TRAIN_WIDE_DEEP_H_
#define PSFLOW_TRAIN_WIDE_DEEP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "train/model.h"
#include "train/wide_deep_data.h"
#include "train/wide_deep_model.h"

namespace psflow::internal {

inline constexpr char kWideDeepModel[] = "wide_deep";
// What `psflow train --model wide_deep` uses unless the user says otherwise.
inline constexpr char kWideDeepDefaultOptimizer[] = "adagrad";
inline constexpr double kWideDeepDefaultLearningRate = 0.5;
inline constexpr int64_t kWideDeepDefaultBatchSize = 256;

// What TrainOptions does not cover. Thread-safety: a value type.
struct WideDeepOptions {
  // Sizes of the synthetic data (when TrainOptions::data_dir is empty); its
  // seed is replaced by TrainOptions::seed.
  WideDeepGeneratorOptions generator;
  int64_t embedding_dim = 16;
  std::vector<int64_t> hidden = {64};
};

// Thread-safety: use from one thread.
class WideDeepModel final : public Model {
 public:
  explicit WideDeepModel(WideDeepOptions extra = {}) : extra_(std::move(extra)) {}

  [[nodiscard]] std::string_view name() const override { return kWideDeepModel; }
  [[nodiscard]] ModelDefaults defaults() const override;
  [[nodiscard]] std::string data_name(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status validate(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status check_data(const TrainOptions& options) const override;
  [[nodiscard]] std::string partitioner_spec(const TrainOptions& options,
                                             int num_ps) const override;

  // Loads the data and prints its description on options.out.
  [[nodiscard]] absl::Status load(const TrainOptions& options) override;
  [[nodiscard]] int64_t train_examples() const override { return data_->train.size(); }
  [[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_variables(
      uint64_t seed) override;
  [[nodiscard]] std::string_view step_function() const override;
  [[nodiscard]] Structure spec() const override { return spec_.to_structure(); }
  [[nodiscard]] std::string_view dataset_function() const override;
  [[nodiscard]] Structure dataset_args(const TrainOptions& options) const override;
  [[nodiscard]] std::unique_ptr<EpochTotals> new_totals() const override;
  // Computed on the coordinator chunk by chunk, pulling only the rows of
  // the ids each chunk uses.
  [[nodiscard]] absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<ShardedVariable>& variables) const override;
  void add_summary_fields(const TrainOptions& options, const TrainSummary& run,
                          nlohmann::json& summary) const override;
  [[nodiscard]] std::vector<std::string> parameter_names() const override {
    return spec_.parameter_names();
  }
  // Adds to the common fields "seed" (the generator's and the LIBSVM
  // split's), "generator" (its sizes), "embedding_dim" and "hidden".
  [[nodiscard]] std::string run_config(const TrainOptions& options) const override;
  // The model run_config() describes, and in *options the data_dir and seed
  // its load() reads. INVALID_ARGUMENT naming `path` and the field.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<WideDeepModel>> from_run_config(
      const nlohmann::json& config, const std::string& path, TrainOptions* options);

  // Devices of each part of the two tables, in row order
  // ("/job:ps/replica:0/task:1/device:CPU:0"), once created.
  [[nodiscard]] const std::vector<std::string>& wide_table_devices() const {
    return wide_table_devices_;
  }
  [[nodiscard]] const std::vector<std::string>& deep_table_devices() const {
    return deep_table_devices_;
  }

 private:
  WideDeepOptions extra_;
  WideDeepDataSource source_;                 // set by load()
  std::shared_ptr<const WideDeepData> data_;  // set by load()
  WideDeepSpec spec_;                         // sized by load()
  std::vector<std::string> wide_table_devices_;
  std::vector<std::string> deep_table_devices_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_WIDE_DEEP_H_
