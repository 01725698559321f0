// The `dlrm` model of `psflow train` (internal): DLRM-style click-through
// prediction on Criteo data (train/dlrm_model.h), its categorical features
// in one dynamic embedding table on the ps tasks (docs/embeddings.md), its
// dense layers as ordinary variables. Trains with the parameter-server
// strategy only.
//
// --data-dir is a Criteo TSV file, a directory of them, or
// generated:<rows>[:<seed>] (data/criteo_generator.h); the last 10% of the
// rows are the held-out test set, on which each epoch reports the AUC, the
// log loss and the accuracy. The run's checkpoints (every epoch, in
// --run-dir) hold the dense layers and the table's rows with their slots
// (the generic checkpoint path saves every table of the strategy), so a
// rerun resumes both, into any number of ps tasks.
#ifndef PSFLOW_TRAIN_DLRM_H_
#define PSFLOW_TRAIN_DLRM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/dynamic_embedding.h"
#include "train/checkpoint_table.h"
#include "train/dlrm_data.h"
#include "train/dlrm_model.h"
#include "train/model.h"

namespace psflow::internal {

inline constexpr char kDlrmModel[] = "dlrm";
inline constexpr char kDlrmDefaultOptimizer[] = "adagrad";
inline constexpr double kDlrmDefaultLearningRate = 0.1;
inline constexpr int64_t kDlrmDefaultBatchSize = 256;
inline constexpr char kDlrmTableName[] = "dlrm/embeddings";

// Thread-safety: a value type.
struct DlrmOptions {
  int64_t embedding_dim = 16;
  std::vector<int64_t> bottom = {64, 16};  // ends in embedding_dim
  std::vector<int64_t> top = {128, 64};
  // The table's rows start uniform in [-init_scale, init_scale): large
  // enough that the dot interactions carry a gradient from the first step.
  double init_scale = 0.2;
  // The table's rules (docs/embeddings.md); the optimizer is the run's
  // (--optimizer), its learning rate --learning-rate.
  int64_t admit_after = 0;
  int64_t ttl_steps = 0;
  int64_t capacity_per_shard = 0;
};

// Thread-safety: use from one thread (Model).
class DlrmModel final : public Model {
 public:
  explicit DlrmModel(DlrmOptions extra = {}) : extra_(std::move(extra)) {}

  [[nodiscard]] std::string_view name() const override { return kDlrmModel; }
  [[nodiscard]] ModelDefaults defaults() const override;
  [[nodiscard]] std::string data_name(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status validate(const TrainOptions& options) const override;
  [[nodiscard]] absl::Status check_data(const TrainOptions& options) const override;

  // Loads the data and prints its description on options.out.
  [[nodiscard]] absl::Status load(const TrainOptions& options) override;
  [[nodiscard]] int64_t train_examples() const override { return data_->train.size(); }
  // The dense layers, and the table on every ps task of the current
  // strategy; outside a strategy scope (psflow eval), the dense layers
  // only: the table is then read from each checkpoint by
  // restore_for_evaluation().
  [[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_variables(
      uint64_t seed) override;
  [[nodiscard]] std::string_view step_function() const override;
  [[nodiscard]] Structure spec() const override { return spec_.to_structure(); }
  [[nodiscard]] std::string_view dataset_function() const override;
  [[nodiscard]] Structure dataset_args(const TrainOptions& options) const override;
  [[nodiscard]] std::unique_ptr<EpochTotals> new_totals() const override;
  // On the coordinator, chunk by chunk, looking up only each chunk's keys.
  // A test key the training never saw gets its row created (with the
  // initializer's values) by that lookup, as in TFRA. In psflow eval, the
  // rows come from the checkpoint's table (CheckpointTable: absent keys
  // read as the same initial rows, without creating any).
  [[nodiscard]] absl::StatusOr<ModelMetrics> evaluate(
      const std::vector<ShardedVariable>& variables) const override;
  // Reads the table kDlrmTableName of the checkpoint (NOT_FOUND naming the
  // tables it holds when it has none of that name: not a dlrm checkpoint).
  [[nodiscard]] absl::Status restore_for_evaluation(const std::string& checkpoint_dir) override;
  void add_summary_fields(const TrainOptions& options, const TrainSummary& run,
                          nlohmann::json& summary) const override;
  [[nodiscard]] std::vector<std::string> parameter_names() const override {
    return spec_.parameter_names();
  }
  [[nodiscard]] std::string run_config(const TrainOptions& options) const override;

  // The table, once created.
  [[nodiscard]] const DynamicEmbedding& table() const { return table_; }

 private:
  // The dense layers' variables, in the current scope.
  [[nodiscard]] absl::StatusOr<std::vector<ShardedVariable>> create_dense_variables(uint64_t seed);

  DlrmOptions extra_;
  DlrmDataSource source_;                 // set by load()
  std::shared_ptr<const DlrmData> data_;  // set by load()
  DlrmSpec spec_;                         // its table set by create_variables()
  std::string optimizer_;                 // set by load()
  DynamicEmbedding table_;
  // psflow eval's table (no strategy): set by restore_for_evaluation().
  std::optional<CheckpointTable> checkpoint_table_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DLRM_H_
