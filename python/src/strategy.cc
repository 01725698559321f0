// ParameterServerStrategy, its scope, and the variable partitioners.
#include "psflow/strategy.h"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "bindings.h"
#include "psflow/cluster_resolver.h"
#include "psflow/partitioners.h"

namespace psflow::python {
namespace {

// A native partitioner (FixedShards, MinSize, MaxSize): called by the
// runtime without the GIL.
// Thread-safety: immutable after construction.
struct NativePartitioner {
  Partitioner fn;
};

// The scope of `with strategy.scope():`, entered on the calling thread.
// Thread-safety: a thread-local guard; exit() on the thread that entered.
struct ScopeGuard {
  std::unique_ptr<StrategyScope> scope;
};

// A Python callable as a Partitioner: called with the GIL taken, as TF
// calls `variable_partitioner(shape, dtype)`; an exception or a bad result
// becomes INVALID_ARGUMENT naming it. The callable is released with the
// GIL held.
Partitioner python_partitioner(py::object fn) {
  std::shared_ptr<py::object> held(new py::object(std::move(fn)), [](py::object* o) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: leak, not crash
    py::gil_scoped_acquire gil;
    delete o;
  });
  return [held](const Shape& shape, DType dtype) -> absl::StatusOr<std::vector<int64_t>> {
    py::gil_scoped_acquire gil;
    try {
      py::object dt = array_from_tensor(Tensor(dtype, {}), true).attr("dtype");
      py::object result = (*held)(py::tuple(py::cast(shape)), dt);
      return result.cast<std::vector<int64_t>>();
    } catch (py::error_already_set& e) {
      return absl::InvalidArgumentError(absl::StrCat("variable_partitioner raised ", e.what()));
    } catch (const py::cast_error& e) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable_partitioner must return a list of ints (partitions per axis): ", e.what()));
    }
  };
}

Partitioner partitioner_from_python(const py::object& obj) {
  if (obj.is_none()) return nullptr;
  if (py::isinstance<NativePartitioner>(obj)) return obj.cast<const NativePartitioner&>().fn;
  if (py::hasattr(obj, "_native")) {
    py::object native = obj.attr("_native");
    if (py::isinstance<NativePartitioner>(native)) {
      return native.cast<const NativePartitioner&>().fn;
    }
  }
  if (PyCallable_Check(obj.ptr())) return python_partitioner(obj);
  raise_type_error(
      "ParameterServerStrategy: variable_partitioner must be a partitioner "
      "(psflow.distribute.experimental.partitioners) or a callable "
      "(shape, dtype) -> list of ints, got " +
      std::string(py::repr(obj)));
}

}  // namespace

void init_strategy(py::module_& m) {
  py::class_<NativePartitioner>(m, "_Partitioner")
      .def_static(
          "fixed_shards",
          [](int num_shards) {
            return NativePartitioner{value_or_raise(fixed_shards_partitioner(num_shards))};
          },
          py::arg("num_shards"))
      .def_static(
          "min_size",
          [](int64_t min_shard_bytes, int max_shards, int bytes_per_string) {
            return NativePartitioner{value_or_raise(
                min_size_partitioner(min_shard_bytes, max_shards, bytes_per_string))};
          },
          py::arg("min_shard_bytes"), py::arg("max_shards"), py::arg("bytes_per_string"))
      .def_static(
          "max_size",
          [](int64_t max_shard_bytes, std::optional<int> max_shards, int bytes_per_string) {
            return NativePartitioner{value_or_raise(
                max_size_partitioner(max_shard_bytes, max_shards, bytes_per_string))};
          },
          py::arg("max_shard_bytes"), py::arg("max_shards"), py::arg("bytes_per_string"))
      .def(
          "__call__",
          [](const NativePartitioner& p, const Shape& shape, const std::string& dtype) {
            absl::StatusOr<DType> dt = dtype_from_name(dtype);
            if (!dt.ok())
              raise_value_error("partitioner: dtype: " + std::string(dt.status().message()));
            return value_or_raise(p.fn(shape, *dt));
          },
          py::arg("shape"), py::arg("dtype"));

  py::class_<ScopeGuard>(m, "_StrategyScope").def("exit", [](ScopeGuard& g) { g.scope.reset(); });

  py::class_<ParameterServerStrategy, std::shared_ptr<ParameterServerStrategy>>(
      m, "_ParameterServerStrategy")
      .def(py::init([](const std::string& cluster_spec_json, std::optional<std::string> task_type,
                       std::optional<int> task_id, std::optional<std::string> rpc_layer,
                       const py::object& partitioner, double variable_timeout_seconds,
                       const std::string& placement) {
             ClusterSpec spec = value_or_raise(ClusterSpec::from_json(cluster_spec_json));
             SimpleClusterResolver resolver(std::move(spec), std::move(task_type), task_id,
                                            std::move(rpc_layer));
             Partitioner fn = partitioner_from_python(partitioner);
             if (!(variable_timeout_seconds > 0)) {
               raise_value_error("ParameterServerStrategy: variable_timeout must be > 0 seconds");
             }
             ParameterServerStrategyOptions options{.variable_timeout =
                                                        absl::Seconds(variable_timeout_seconds)};
             // The names are the C++ API's (variable_placement_name).
             bool known = false;
             for (VariablePlacement p :
                  {VariablePlacement::kFewestBytes, VariablePlacement::kRoundRobin}) {
               if (placement == variable_placement_name(p)) {
                 options.placement = p;
                 known = true;
               }
             }
             if (!known) {
               raise_value_error(
                   "ParameterServerStrategy: placement must be 'fewest_bytes' (the "
                   "default) or 'round_robin' (TF's order), got '" +
                   placement + "'");
             }
             absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> strategy;
             {
               py::gil_scoped_release release;
               strategy = ParameterServerStrategy::create(resolver, std::move(fn), options);
             }
             return std::shared_ptr<ParameterServerStrategy>(value_or_raise(std::move(strategy)));
           }),
           py::arg("cluster_spec_json"), py::arg("task_type"), py::arg("task_id"),
           py::arg("rpc_layer"), py::arg("variable_partitioner"),
           py::arg("variable_timeout_seconds"), py::arg("placement"))
      .def_property_readonly("num_ps", &ParameterServerStrategy::num_ps)
      .def("cluster_spec_json",
           [](const ParameterServerStrategy& s) { return s.cluster_spec().to_json(); })
      .def("enter_scope", [](ParameterServerStrategy& s) {
        // A prvalue initialises the new object directly: the scope is
        // neither copied nor moved.
        return ScopeGuard{std::unique_ptr<StrategyScope>(new StrategyScope(s.scope()))};
      });

  m.def("_has_strategy", &has_strategy);
}

}  // namespace psflow::python
