// Decoding the already-parsed "cluster" value of TF_CONFIG into a
// ClusterSpec; shared by ClusterSpec::from_json and TFConfigClusterResolver so
// that TF_CONFIG is parsed once per call.
#ifndef PSFLOW_CLUSTER_CLUSTER_SPEC_JSON_H_
#define PSFLOW_CLUSTER_CLUSTER_SPEC_JSON_H_

#include "absl/status/statusor.h"
#include "cluster/tf_json.h"
#include "psflow/cluster_spec.h"

namespace psflow::internal {

// tf.train.ClusterSpec(dict) over a decoded JSON value, checks in TF's order:
// every job (in document order) must be a list or an {index: address} object
// whose keys int() accepts; then every address (jobs and indices sorted) must
// be a string. Stricter than TF: negative indices and two keys naming the
// same index ("1" and "01") are rejected instead of silently kept.
// INVALID_ARGUMENT with TF's message plus the fix.
[[nodiscard]] absl::StatusOr<ClusterSpec> cluster_spec_from_json_value(const TfJson& cluster);

}  // namespace psflow::internal

#endif  // PSFLOW_CLUSTER_CLUSTER_SPEC_JSON_H_
