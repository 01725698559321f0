#include "train/wide_deep.h"

#include <algorithm>
#include <cstdio>
#include <type_traits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "psflow/nn.h"
#include "psflow/status_macros.h"
#include "train/data_files.h"
#include "train/partitioner_flag.h"
#include "train/wide_deep_step.h"

namespace psflow::internal {
namespace {

// Test examples per evaluation chunk: the ids of one chunk are pulled at once.
constexpr int64_t kEvalChunk = 4096;

std::vector<std::string> devices(const ShardedVariable& v) {
  std::vector<std::string> out;
  for (const Variable& part : v.variables()) out.push_back(part.device());
  return out;
}

}  // namespace

ModelDefaults WideDeepModel::defaults() const {
  return {kWideDeepDefaultOptimizer, kWideDeepDefaultLearningRate, kWideDeepDefaultBatchSize};
}

std::string WideDeepModel::data_name(const TrainOptions& options) const {
  return options.data_dir.empty() ? "generated click data" : options.data_dir;
}

absl::Status WideDeepModel::validate(const TrainOptions& o) const {
  if (o.strategy != kParameterServerStrategy) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--strategy '", o.strategy,
        "' does not train wide_deep: its embedding tables live on parameter servers; use "
        "parameter_server"));
  }
  if (o.batch_size < 1 || o.batch_size > (1 << 20)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--batch-size ", o.batch_size, " is out of range; use 1 to 1048576"));
  }
  if (o.data_dir.empty()) PSFLOW_RETURN_IF_ERROR(extra_.generator.validate());
  WideDeepSpec spec;
  spec.embedding_dim = extra_.embedding_dim;
  spec.hidden = extra_.hidden;
  return WideDeepSpec::from_structure(spec.to_structure()).status();
}

std::string WideDeepModel::partitioner_spec(const TrainOptions& options, int num_ps) const {
  if (options.partitioner == kAutoPartitioner) return absl::StrCat("fixed:", std::max(1, num_ps));
  return options.partitioner;
}

absl::Status WideDeepModel::check_data(const TrainOptions& options) const {
  if (options.data_dir.empty()) return absl::OkStatus();  // generated
  // One LIBSVM file, or "train,test" (load_wide_deep_libsvm says what else
  // is wrong with the value).
  for (absl::string_view path : absl::StrSplit(options.data_dir, ',')) {
    if (path.empty()) continue;
    PSFLOW_RETURN_IF_ERROR(check_readable_file(
        std::string(path), "--data-dir: wide_deep's LIBSVM file",
        "give a readable LIBSVM file, 'train_file,test_file', or no --data-dir for generated "
        "click data"));
  }
  return absl::OkStatus();
}

absl::Status WideDeepModel::load(const TrainOptions& options) {
  source_ = WideDeepDataSource();
  if (options.data_dir.empty()) {
    source_.generator_options = extra_.generator;
    source_.generator_options.seed = options.seed;
  } else {
    source_.generator = false;
    source_.path = options.data_dir;
    source_.seed = options.seed;
  }
  PSFLOW_ASSIGN_OR_RETURN(data_, load_wide_deep_data(source_));
  if (data_->train.size() < options.batch_size) {
    return absl::InvalidArgumentError(absl::StrCat("--batch-size ", options.batch_size,
                                                   " is larger than the training set (",
                                                   data_->train.size(), " examples)"));
  }
  if (options.out != nullptr) {
    std::fprintf(options.out, "wide_deep: %s\n", data_->description.c_str());
    std::fflush(options.out);
  }
  spec_.vocab_size = data_->vocab_size;
  spec_.dense_features = data_->dense_features;
  spec_.embedding_dim = extra_.embedding_dim;
  spec_.hidden = extra_.hidden;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ShardedVariable>> WideDeepModel::create_variables(uint64_t seed) {
  PSFLOW_ASSIGN_OR_RETURN(std::vector<ShardedVariable> vars,
                          create_wide_deep_variables(spec_, seed));
  wide_table_devices_ = devices(vars[kWideTable]);
  deep_table_devices_ = devices(vars[kDeepTable]);
  return vars;
}

std::string_view WideDeepModel::step_function() const { return kWideDeepStepFunction; }

std::string_view WideDeepModel::dataset_function() const { return kWideDeepDataset; }

Structure WideDeepModel::dataset_args(const TrainOptions& options) const {
  return Structure::dict({{"source", source_.to_structure()},
                          {"batch_size", options.batch_size},
                          {"seed", static_cast<int64_t>(options.seed)}});
}

std::unique_ptr<EpochTotals> WideDeepModel::new_totals() const {
  return std::make_unique<StepResultTotals<WideDeepStepMetrics>>();
}

absl::StatusOr<ModelMetrics> WideDeepModel::evaluate(
    const std::vector<ShardedVariable>& variables) const {
  const WideDeepExamples& test = data_->test;
  const int64_t n = test.size();
  double loss_sum = 0.0;
  nn::AUC auc;
  nn::BinaryAccuracy accuracy;
  for (int64_t begin = 0; begin < n; begin += kEvalChunk) {
    const int64_t end = std::min(n, begin + kEvalChunk);
    const WideDeepExamples chunk = test.slice(begin, end);
    PSFLOW_ASSIGN_OR_RETURN(nn::UniqueIds unique, nn::unique_ids(chunk.ids));
    PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> params,
                            pull_wide_deep_parameters(variables, unique.values));
    const WideDeepBatch batch{chunk.dense, unique.index, chunk.weights, chunk.labels};
    PSFLOW_ASSIGN_OR_RETURN(Tensor logits, wide_deep_logits(spec_, params, batch));
    PSFLOW_ASSIGN_OR_RETURN(Tensor labels, chunk.labels.reshape({end - begin, 1}));
    PSFLOW_ASSIGN_OR_RETURN(nn::LossResult loss, nn::sigmoid_binary_cross_entropy(logits, labels));
    loss_sum += loss.loss * static_cast<double>(end - begin);
    PSFLOW_RETURN_IF_ERROR(auc.update(labels, loss.probabilities));
    PSFLOW_RETURN_IF_ERROR(accuracy.update(labels, loss.probabilities));
  }
  return ModelMetrics{
      n > 0 ? loss_sum / static_cast<double>(n) : 0.0, accuracy.result(), {{"auc", auc.result()}}};
}

std::string WideDeepModel::run_config(const TrainOptions& o) const {
  const WideDeepGeneratorOptions& g = extra_.generator;
  return nlohmann::json({{"model", kWideDeepModel},
                         {"strategy", o.strategy},
                         {"data_dir", o.data_dir},
                         {"seed", o.seed},
                         {"generator",
                          {{"train_examples", g.train_examples},
                           {"test_examples", g.test_examples},
                           {"vocab_size", g.vocab_size},
                           {"dense_features", g.dense_features},
                           {"bag_size", g.bag_size}}},
                         {"embedding_dim", extra_.embedding_dim},
                         {"hidden", extra_.hidden}})
      .dump(2);
}

absl::StatusOr<std::unique_ptr<WideDeepModel>> WideDeepModel::from_run_config(
    const nlohmann::json& j, const std::string& path, TrainOptions* options) {
  auto malformed = [&](const char* field, const char* expected) {
    return absl::InvalidArgumentError(absl::StrCat(path, " is malformed: \"", field, "\" must be ",
                                                   expected, " (as psflow train writes it)"));
  };
  auto integer = [&](const nlohmann::json& in, const char* field, auto* out) -> absl::Status {
    if (!in.contains(field) || !in[field].is_number_integer()) {
      return malformed(field, "an integer");
    }
    *out = in[field].get<std::decay_t<decltype(*out)>>();
    return absl::OkStatus();
  };
  WideDeepOptions extra;
  PSFLOW_RETURN_IF_ERROR(integer(j, "seed", &options->seed));
  PSFLOW_RETURN_IF_ERROR(integer(j, "embedding_dim", &extra.embedding_dim));
  if (!j.contains("generator") || !j["generator"].is_object()) {
    return malformed("generator", "an object of the generator's sizes");
  }
  const nlohmann::json& g = j["generator"];
  PSFLOW_RETURN_IF_ERROR(integer(g, "train_examples", &extra.generator.train_examples));
  PSFLOW_RETURN_IF_ERROR(integer(g, "test_examples", &extra.generator.test_examples));
  PSFLOW_RETURN_IF_ERROR(integer(g, "vocab_size", &extra.generator.vocab_size));
  PSFLOW_RETURN_IF_ERROR(integer(g, "dense_features", &extra.generator.dense_features));
  PSFLOW_RETURN_IF_ERROR(integer(g, "bag_size", &extra.generator.bag_size));
  if (!j.contains("hidden") || !j["hidden"].is_array()) {
    return malformed("hidden", "a list of layer sizes");
  }
  extra.hidden.clear();
  for (const nlohmann::json& h : j["hidden"]) {
    if (!h.is_number_integer()) return malformed("hidden", "a list of layer sizes");
    extra.hidden.push_back(h.get<int64_t>());
  }
  auto model = std::make_unique<WideDeepModel>(std::move(extra));
  options->model = kWideDeepModel;
  options->strategy = kParameterServerStrategy;
  if (absl::Status valid = model->validate(*options); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", valid.message()));
  }
  return model;
}

void WideDeepModel::add_summary_fields(const TrainOptions& o, const TrainSummary& run,
                                       nlohmann::json& j) const {
  j["data"] = data_->description;
  j["data_dir"] = o.data_dir;
  j["embedding_dim"] = extra_.embedding_dim;
  j["hidden"] = extra_.hidden;
  if (o.data_dir.empty()) {
    const WideDeepGeneratorOptions& g = extra_.generator;
    j["generator"] = {{"train_examples", g.train_examples},
                      {"test_examples", g.test_examples},
                      {"vocab_size", g.vocab_size},
                      {"dense_features", g.dense_features},
                      {"bag_size", g.bag_size},
                      {"seed", o.seed}};
  }
  j["wide_table_devices"] = wide_table_devices_;
  j["deep_table_devices"] = deep_table_devices_;
  j.erase("replicas");
}

}  // namespace psflow::internal
