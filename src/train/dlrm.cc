#include "train/dlrm.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "data/criteo_generator.h"
#include "nlohmann/json.hpp"
#include "optimizer/optimizer.h"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "train/data_files.h"
#include "train/dlrm_step.h"
#include "train/step_result.h"

namespace psflow::internal {
namespace {

// Test examples per evaluation chunk: the keys of one chunk are looked up
// at once.
constexpr int64_t kEvalChunk = 4096;
constexpr char kDataHelp[] =
    "give a Criteo TSV file, a directory of them (*.tsv, *.txt, *.gz), or generated:<rows> "
    "(e.g. generated:200000) for generated Criteo-shaped data";

}  // namespace

ModelDefaults DlrmModel::defaults() const {
  return {kDlrmDefaultOptimizer, kDlrmDefaultLearningRate, kDlrmDefaultBatchSize};
}

std::string DlrmModel::data_name(const TrainOptions& options) const { return options.data_dir; }

absl::Status DlrmModel::validate(const TrainOptions& o) const {
  if (o.strategy != kParameterServerStrategy) {
    return absl::InvalidArgumentError(
        absl::StrCat("--strategy '", o.strategy,
                     "' does not train dlrm: its embedding table lives on parameter servers; use "
                     "parameter_server"));
  }
  if (o.data_dir.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--model dlrm needs --data-dir: ", kDataHelp));
  }
  if (o.batch_size < 1 || o.batch_size > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-size ", o.batch_size, " is out of range; use 1 to 1048576"));
  }
  if (o.bad_lines != "error" && o.bad_lines != "skip") {
    return absl::InvalidArgumentError(
        absl::StrCat("--bad-lines '", o.bad_lines, "' is not a policy; use error or skip"));
  }
  PSFLOW_RETURN_IF_ERROR(parse_generated_criteo(o.data_dir).status());
  DlrmSpec spec;
  spec.embedding_dim = extra_.embedding_dim;
  spec.bottom = extra_.bottom;
  spec.top = extra_.top;
  return DlrmSpec::from_structure(spec.to_structure()).status();
}

absl::Status DlrmModel::check_data(const TrainOptions& options) const {
  PSFLOW_ASSIGN_OR_RETURN(std::optional<CriteoGeneratorOptions> generated,
                          parse_generated_criteo(options.data_dir));
  if (generated.has_value()) return absl::OkStatus();
  absl::StatusOr<std::vector<std::string>> files = criteo_files(options.data_dir);
  if (!files.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir: ", files.status().message(), "; ", kDataHelp));
  }
  for (const std::string& file : *files) {
    PSFLOW_RETURN_IF_ERROR(check_readable_file(file, "--data-dir: dlrm's Criteo file", kDataHelp));
  }
  return absl::OkStatus();
}

absl::Status DlrmModel::load(const TrainOptions& options) {
  source_ = DlrmDataSource();
  source_.data_dir = options.data_dir;
  source_.bad_lines = options.bad_lines == "skip" ? CriteoBadLines::kSkip : CriteoBadLines::kError;
  PSFLOW_ASSIGN_OR_RETURN(data_, load_dlrm_data(source_));
  if (data_->train.size() < options.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("--batch-size ", options.batch_size,
                                                   " is larger than the training set (",
                                                   data_->train.size(), " examples)"));
  }
  if (options.out != nullptr) {
    std::fprintf(options.out, "dlrm: %s\n", data_->description.c_str());
    std::fflush(options.out);
  }
  spec_ = DlrmSpec();
  spec_.embedding_dim = extra_.embedding_dim;
  spec_.bottom = extra_.bottom;
  spec_.top = extra_.top;
  optimizer_ = options.optimizer;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ShardedVariable>> DlrmModel::create_variables(uint64_t seed) {
  ParameterServerStrategy* strategy = get_strategy();
  if (strategy == nullptr) {
    // psflow eval: the dense layers here, the table from each checkpoint.
    table_ = DynamicEmbedding();
    spec_.table = Structure();
    return create_dense_variables(seed);
  }
  DynamicEmbeddingOptions o;
  o.dim = extra_.embedding_dim;
  o.seed = seed;
  o.initializer = DynamicEmbeddingInitializer::kUniform;
  o.init_scale = extra_.init_scale;
  PSFLOW_ASSIGN_OR_RETURN(o.optimizer.kind, optimizer_kind_from_name(optimizer_));
  o.admit_after = extra_.admit_after;
  o.ttl_steps = extra_.ttl_steps;
  o.capacity_per_shard = extra_.capacity_per_shard;
  PSFLOW_ASSIGN_OR_RETURN(table_, DynamicEmbedding::get_variable(*strategy, kDlrmTableName, o));
  spec_.table = table_.handle();
  return create_dense_variables(seed);
}

absl::StatusOr<std::vector<ShardedVariable>> DlrmModel::create_dense_variables(uint64_t seed) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> initial, initial_dlrm_parameters(spec_, seed));
  const std::vector<std::string> names = spec_.parameter_names();
  std::vector<ShardedVariable> vars;
  for (size_t i = 0; i < initial.size(); ++i) {
    PSFLOW_ASSIGN_OR_RETURN(ShardedVariable v,
                            create_variable(std::move(initial[i]), {.name = names[i]}));
    vars.push_back(std::move(v));
  }
  return vars;
}

std::string_view DlrmModel::step_function() const { return kDlrmStepFunction; }

std::string_view DlrmModel::dataset_function() const { return kDlrmDataset; }

Structure DlrmModel::dataset_args(const TrainOptions& options) const {
  return Structure::dict({{"source", source_.to_structure()},
                          {"batch_size", options.batch_size},
                          {"seed", static_cast<int64_t>(options.seed)}});
}

std::unique_ptr<EpochTotals> DlrmModel::new_totals() const {
  return std::make_unique<StepResultTotals<DlrmStepMetrics>>();
}

absl::StatusOr<ModelMetrics> DlrmModel::evaluate(
    const std::vector<ShardedVariable>& variables) const {
  if (!table_.valid() && !checkpoint_table_.has_value()) {
    return absl::FailedPreconditionError("dlrm: the table was not created");
  }
  if (!table_.valid() && checkpoint_table_->options().dim != extra_.embedding_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("dlrm: the checkpoint's table '", kDlrmTableName, "' has dim ",
                     checkpoint_table_->options().dim, " but the model's embedding_dim is ",
                     extra_.embedding_dim, "; evaluate with the run's own config.json"));
  }
  const DlrmExamples& test = data_->test;
  const int64_t n = test.size();
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params, read_values(variables));
  double loss_sum = 0.0;
  nn::AUC auc;
  nn::BinaryAccuracy accuracy;
  for (int64_t begin = 0; begin < n; begin += kEvalChunk) {
    const int64_t end = std::min(n, begin + kEvalChunk);
    const DlrmExamples chunk = test.slice(begin, end);
    PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(chunk.keys));
    PSFLOW_ASSIGN_OR_RETURN(Tensor rows, table_.valid() ? table_.lookup(unique.values)
                                                        : checkpoint_table_->lookup(unique.values));
    const DlrmBatch batch{chunk.dense, unique.index, std::move(rows), chunk.labels};
    PSFLOW_ASSIGN_OR_RETURN(Tensor logits, dlrm_logits(spec_, params, batch));
    PSFLOW_ASSIGN_OR_RETURN(Tensor labels, chunk.labels.reshape({end - begin, 1}));
    PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sigmoid_binary_cross_entropy(logits, labels));
    loss_sum += loss.loss * static_cast<double>(end - begin);
    PSFLOW_RETURN_IF_ERROR(auc.update(labels, loss.probabilities));
    PSFLOW_RETURN_IF_ERROR(accuracy.update(labels, loss.probabilities));
  }
  ModelMetrics out{
      n > 0 ? loss_sum / static_cast<double>(n) : 0.0, accuracy.result(), {{"auc", auc.result()}}};
  // psflow eval also says how many examples its figures cover.
  if (!table_.valid()) out.extra.emplace_back("examples", static_cast<double>(n));
  return out;
}

absl::Status DlrmModel::restore_for_evaluation(const std::string& checkpoint_dir) {
  checkpoint_table_.reset();
  PSFLOW_ASSIGN_OR_RETURN(CheckpointTable table,
                          CheckpointTable::read(checkpoint_dir, kDlrmTableName));
  checkpoint_table_ = std::move(table);
  return absl::OkStatus();
}

std::string DlrmModel::run_config(const TrainOptions& o) const {
  return nlohmann::json({{"model", kDlrmModel},
                         {"strategy", o.strategy},
                         {"data_dir", o.data_dir},
                         {"seed", o.seed},
                         {"embedding_dim", extra_.embedding_dim},
                         {"bottom", extra_.bottom},
                         {"top", extra_.top}})
      .dump(2);
}

void DlrmModel::add_summary_fields(const TrainOptions& o, const TrainSummary& run,
                                   nlohmann::json& j) const {
  j["data"] = data_->description;
  j["data_dir"] = o.data_dir;
  j["train_examples"] = data_->train.size();
  j["test_examples"] = data_->test.size();
  j["skipped_lines"] = data_->skipped_lines;
  j["embedding_dim"] = extra_.embedding_dim;
  j["bottom"] = extra_.bottom;
  j["top"] = extra_.top;
  if (table_.valid()) {
    absl::StatusOr<DynamicEmbeddingStats> stats = table_.stats();
    if (stats.ok()) {
      j["table"] = {{"name", kDlrmTableName},
                    {"rows", stats->rows},
                    {"bytes", stats->bytes},
                    {"created", stats->created},
                    {"applies", stats->applies}};
    }
  }
  j.erase("replicas");
}

}  // namespace psflow::internal
