// strategy.reduce / strategy.gather over PerReplica values (TF's
// cross-replica reduce; see psflow/replica_group.h).
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "psflow/distributed_values.h"
#include "psflow/replica_group.h"

namespace psflow::python {
namespace {

// A Python nest whose leaves may be psflow.distribute.PerReplica (objects
// with `_psflow_per_replica` and `.values`). `replicas` gets the component
// count of the distributed leaves, which must all agree.
DistributedNest nest_from_python(py::handle obj, const std::string& what, int depth,
                                 std::optional<int>& replicas) {
  if (depth > 64) raise_value_error(what + ": nested more than 64 levels deep");
  if (py::hasattr(obj, "_psflow_per_replica")) {
    std::vector<Structure> values;
    size_t i = 0;
    for (py::handle v : obj.attr("values")) {
      values.push_back(structure_from_python(v, absl::StrCat(what, ".values[", i, "]")));
      ++i;
    }
    if (values.empty()) raise_value_error(what + ": a PerReplica needs at least one value");
    const int n = static_cast<int>(values.size());
    if (replicas.has_value() && *replicas != n) {
      raise_value_error(
          absl::StrCat(what, ": PerReplica of ", n, " values where others have ", *replicas));
    }
    replicas = n;
    return DistributedNest(PerReplica(std::move(values)));
  }
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    std::vector<DistributedNest> items;
    size_t i = 0;
    for (py::handle item : obj) {
      items.push_back(nest_from_python(item, absl::StrCat(what, "[", i, "]"), depth + 1, replicas));
      ++i;
    }
    return py::isinstance<py::tuple>(obj) ? DistributedNest::tuple(std::move(items))
                                          : DistributedNest::list(std::move(items));
  }
  if (py::isinstance<py::dict>(obj)) {
    std::map<std::string, DistributedNest> fields;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(obj)) {
      if (!py::isinstance<py::str>(key)) raise_type_error(what + ": dict keys must be str");
      std::string name = key.cast<std::string>();
      fields.emplace(
          name, nest_from_python(value, absl::StrCat(what, "['", name, "']"), depth + 1, replicas));
    }
    return DistributedNest::dict(std::move(fields));
  }
  return DistributedNest(structure_from_python(obj, what));
}

}  // namespace

void init_reduce(py::module_& m) {
  m.def(
      "_reduce",
      [](const std::string& reduce_op, py::handle value, std::optional<std::vector<int>> axes) {
        std::optional<int> replicas;
        DistributedNest nest = nest_from_python(value, "reduce: value", 0, replicas);
        ReplicaGroup group(replicas.value_or(1));
        absl::StatusOr<Structure> out = axes.has_value()
                                            ? group.reduce(reduce_op, nest, *axes)
                                            : group.reduce(reduce_op, nest, std::nullopt);
        return structure_to_python(value_or_raise(std::move(out)), true);
      },
      py::arg("reduce_op"), py::arg("value"), py::arg("axes"));
  m.def(
      "_gather",
      [](py::handle value, int axis) {
        std::optional<int> replicas;
        DistributedNest nest = nest_from_python(value, "gather: value", 0, replicas);
        ReplicaGroup group(replicas.value_or(1));
        return structure_to_python(value_or_raise(group.gather(nest, axis)), true);
      },
      py::arg("value"), py::arg("axis"));
}

}  // namespace psflow::python
