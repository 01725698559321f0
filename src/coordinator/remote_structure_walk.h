// Traversals of RemoteStructure shared by schedule, dispatch and fetch
// (internal).
#ifndef PSFLOW_COORDINATOR_REMOTE_STRUCTURE_WALK_H_
#define PSFLOW_COORDINATOR_REMOTE_STRUCTURE_WALK_H_

#include <string>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "psflow/remote_value.h"
#include "psflow/structure.h"

namespace psflow::internal {

// Calls `visit(path, value)` for every RemoteValue leaf in nest order, where
// path is `root` followed by Python-like subscripts ("args[1]['x']"), until
// `visit` returns false.
void for_each_remote_value(
    const RemoteStructure& s, std::string_view root,
    absl::FunctionRef<bool(const std::string& path, const RemoteValue& value)> visit);

// The Structure with every RemoteValue leaf replaced by `resolve(value)`;
// the first error in nest order is returned instead.
[[nodiscard]] absl::StatusOr<Structure> resolve_remote_values(
    const RemoteStructure& s,
    absl::FunctionRef<absl::StatusOr<Structure>(const RemoteValue& value)> resolve);

}  // namespace psflow::internal

#endif  // PSFLOW_COORDINATOR_REMOTE_STRUCTURE_WALK_H_
