// TF_CONFIG and cluster spec JSON (src/cluster/tf_json.cc,
// tf_config_cluster_resolver.cc, cluster_spec.cc, validate.cc): the input
// is TF_CONFIG's text, resolved as a task resolves it at start (cluster,
// task type and id, rpc layer, master) and checked as
// ParameterServerStrategy checks it; the same text is also read as a
// cluster spec on its own (ClusterSpec::from_json). A spec that parses
// must print as JSON that parses back to the same spec.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "fuzz_input.h"
#include "psflow/cluster_resolver.h"
#include "psflow/cluster_spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  const std::string text(as_bytes(data, size));
  TFConfigClusterResolver resolver(TFConfigClusterResolver::Options{.tf_config_json = text});
  absl::StatusOr<ClusterSpec> spec = resolver.cluster_spec();
  absl::StatusOr<std::optional<std::string>> type = resolver.task_type();
  absl::StatusOr<std::optional<int>> id = resolver.task_id();
  (void)resolver.rpc_layer();
  (void)resolver.master();
  if (spec.ok() && type.ok() && id.ok()) {
    (void)validate_parameter_server_cluster(*spec, *type, *id);
    if (type->has_value() && id->has_value()) (void)resolver.master(**type, **id);
  }
  absl::StatusOr<ClusterSpec> alone = ClusterSpec::from_json(text);
  if (alone.ok()) {
    absl::StatusOr<ClusterSpec> again = ClusterSpec::from_json(alone->to_json());
    check(again.ok() && again->to_json() == alone->to_json());
  }
  return 0;
}
