// TFConfigClusterResolver: TF's tfconfig_cluster_resolver.py, including its
// "re-read TF_CONFIG on every call" behaviour. This file and the launcher are
// the only places allowed to call getenv.
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "cluster/cluster_spec_json.h"
#include "cluster/master.h"
#include "cluster/tf_json.h"
#include "psflow/cluster_resolver.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;
using internal::cluster_spec_from_json_value;
using internal::master_address;
using internal::master_is_local;
using internal::parse_tf_json;
using internal::py_int;
using internal::py_repr_abbrev;
using internal::py_str;
using internal::TfJson;

namespace {

constexpr char kTfConfigEnv[] = "TF_CONFIG";
constexpr std::string_view kTfConfigExample =
    R"({"cluster": {"chief": ["host:port"], "worker": ["host:port"], "ps": ["host:port"]}, )"
    R"("task": {"type": "worker", "index": 0}})";

// One snapshot of TF_CONFIG. A call parses it once and answers from it, so
// that e.g. master() never mixes the cluster of one value with the task of
// another; the next call reads the variable again.
absl::StatusOr<TfJson> load_tf_config(const std::optional<std::string>& given) {
  std::string text;
  if (given.has_value()) {
    text = *given;
  } else if (const char* env = std::getenv(kTfConfigEnv); env != nullptr) {
    text = env;  // Copied at once: a later setenv may free the buffer.
  } else {
    text = "{}";  // os.environ.get("TF_CONFIG", "{}")
  }
  // As in TF, a set-but-empty TF_CONFIG is malformed JSON, not "no config".
  PSFLOW_ASSIGN_OR_RETURN(TfJson config,
                          parse_tf_json(text, "TF_CONFIG",
                                        absl::StrCat("set TF_CONFIG to a JSON object like ",
                                                     av(kTfConfigExample), ", or unset it")));
  if (!config.is_object()) {
    // TF would treat a list or string as having no keys and fail later in
    // odd ways; a clear error is more useful.
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG must be a JSON object, got ", py_repr_abbrev(config),
                     "; set TF_CONFIG to a JSON object like ", av(kTfConfigExample), "."));
  }
  return config;
}

// Returns the "task" object, or nullptr when TF_CONFIG has none.
absl::StatusOr<const TfJson*> task_of(const TfJson& config) {
  const auto it = config.find("task");
  if (it == config.end()) return nullptr;
  if (!it->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "TF_CONFIG.task must be an object like {\"type\": \"worker\", \"index\": 0}, got ",
        py_repr_abbrev(*it), "."));
  }
  return &*it;
}

absl::StatusOr<std::optional<std::string>> task_type_of(const TfJson& config) {
  PSFLOW_ASSIGN_OR_RETURN(const TfJson* task, task_of(config));
  if (task == nullptr) return std::nullopt;
  const auto it = task->find("type");
  if (it == task->end()) return std::nullopt;
  return py_str(*it);  // str(task["type"]): 123456 -> "123456"
}

absl::StatusOr<std::optional<int>> task_id_of(const TfJson& config) {
  PSFLOW_ASSIGN_OR_RETURN(const TfJson* task, task_of(config));
  if (task == nullptr) return std::nullopt;
  const auto it = task->find("index");
  if (it == task->end()) return std::nullopt;
  absl::StatusOr<int> index = py_int(*it);  // int(task["index"]): "1" -> 1
  if (!index.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("TF_CONFIG.task.index must be an integer, got ", py_repr_abbrev(*it), ": ",
                     index.status().message(),
                     ". Set \"index\" to the task's 0-based position in its job, like "
                     "{\"type\": \"worker\", \"index\": 0}."));
  }
  return *index;
}

// A top-level string field of TF_CONFIG; null counts as absent (TF tests
// `is not None`). TF would pass any other type on; psflow rejects it.
absl::StatusOr<std::optional<std::string>> string_field_of(const TfJson& config,
                                                           std::string_view key,
                                                           std::string_view example) {
  const auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("TF_CONFIG.", av(key), " must be a string like ",
                                                   av(example), ", got ", py_repr_abbrev(*it),
                                                   "."));
  }
  return it->get<std::string>();
}

absl::StatusOr<ClusterSpec> cluster_spec_of(const TfJson& config) {
  const auto it = config.find("cluster");
  if (it == config.end()) return ClusterSpec();
  return cluster_spec_from_json_value(*it);
}

}  // namespace

TFConfigClusterResolver::TFConfigClusterResolver(Options options) : options_(std::move(options)) {}

absl::StatusOr<ClusterSpec> TFConfigClusterResolver::cluster_spec() const {
  PSFLOW_ASSIGN_OR_RETURN(TfJson config, load_tf_config(options_.tf_config_json));
  return cluster_spec_of(config);
}

absl::StatusOr<std::optional<std::string>> TFConfigClusterResolver::task_type() const {
  if (options_.task_type.has_value()) return options_.task_type;
  PSFLOW_ASSIGN_OR_RETURN(TfJson config, load_tf_config(options_.tf_config_json));
  return task_type_of(config);
}

absl::StatusOr<std::optional<int>> TFConfigClusterResolver::task_id() const {
  if (options_.task_id.has_value()) return options_.task_id;
  PSFLOW_ASSIGN_OR_RETURN(TfJson config, load_tf_config(options_.tf_config_json));
  return task_id_of(config);
}

absl::StatusOr<std::optional<std::string>> TFConfigClusterResolver::rpc_layer() const {
  if (options_.rpc_layer.has_value()) return options_.rpc_layer;
  PSFLOW_ASSIGN_OR_RETURN(TfJson config, load_tf_config(options_.tf_config_json));
  return string_field_of(config, "rpc_layer", "\"grpc\"");
}

absl::StatusOr<std::string> TFConfigClusterResolver::master(
    std::optional<std::string> task_type, std::optional<int> task_id,
    std::optional<std::string> rpc_layer) const {
  PSFLOW_ASSIGN_OR_RETURN(TfJson config, load_tf_config(options_.tf_config_json));
  // session_master wins over everything, even when it is "".
  PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> session_master,
                          string_field_of(config, "session_master", "\"host:port\""));
  if (session_master.has_value()) return *std::move(session_master);

  PSFLOW_ASSIGN_OR_RETURN(ClusterSpec spec, cluster_spec_of(config));
  if (master_is_local(spec)) return std::string();
  // Precedence per field: argument, then constructor override, then TF_CONFIG.
  if (!task_type.has_value()) task_type = options_.task_type;
  if (!task_type.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(task_type, task_type_of(config));
  }
  if (!task_id.has_value()) task_id = options_.task_id;
  if (!task_id.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(task_id, task_id_of(config));
  }
  if (!rpc_layer.has_value()) rpc_layer = options_.rpc_layer;
  if (!rpc_layer.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(rpc_layer, string_field_of(config, "rpc_layer", "\"grpc\""));
  }
  return master_address(spec, task_type, task_id, rpc_layer);
}

bool TFConfigClusterResolver::is_configured() const {
  if (options_.tf_config_json.has_value()) return true;
  const char* env = std::getenv(kTfConfigEnv);
  return env != nullptr && env[0] != '\0';
}

}  // namespace psflow
