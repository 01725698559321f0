// Cluster resolvers: TF_CONFIG parsing as TF's TFConfigClusterResolver
// (the C++ one, so that both front ends read TF_CONFIG alike).
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "bindings.h"
#include "psflow/cluster_resolver.h"
#include "psflow/cluster_spec.h"

namespace psflow::python {

void init_cluster(py::module_& m) {
  py::class_<TFConfigClusterResolver>(m, "_TFConfigClusterResolver")
      .def(py::init([](std::optional<std::string> task_type, std::optional<int> task_id,
                       std::optional<std::string> rpc_layer) {
             return TFConfigClusterResolver({.task_type = std::move(task_type),
                                             .task_id = task_id,
                                             .rpc_layer = std::move(rpc_layer)});
           }),
           py::arg("task_type") = py::none(), py::arg("task_id") = py::none(),
           py::arg("rpc_layer") = py::none())
      .def("cluster_spec_json",
           [](const TFConfigClusterResolver& r) {
             return value_or_raise(r.cluster_spec()).to_json();
           })
      .def("task_type",
           [](const TFConfigClusterResolver& r) { return value_or_raise(r.task_type()); })
      .def("task_id", [](const TFConfigClusterResolver& r) { return value_or_raise(r.task_id()); })
      .def("rpc_layer",
           [](const TFConfigClusterResolver& r) { return value_or_raise(r.rpc_layer()); })
      .def(
          "master",
          [](const TFConfigClusterResolver& r, std::optional<std::string> task_type,
             std::optional<int> task_id, std::optional<std::string> rpc_layer) {
            return value_or_raise(r.master(std::move(task_type), task_id, std::move(rpc_layer)));
          },
          py::arg("task_type") = py::none(), py::arg("task_id") = py::none(),
          py::arg("rpc_layer") = py::none())
      .def("is_configured", &TFConfigClusterResolver::is_configured);

  // ClusterSpec.from_json's checks (TF's messages), giving back the
  // canonical JSON.
  m.def(
      "_cluster_spec_json",
      [](const std::string& json) {
        return value_or_raise(ClusterSpec::from_json(json)).to_json();
      },
      py::arg("json"));
  m.def(
      "_validate_parameter_server_cluster",
      [](const std::string& json, std::optional<std::string> task_type,
         std::optional<int> task_id) {
        check(validate_parameter_server_cluster(value_or_raise(ClusterSpec::from_json(json)),
                                                task_type, task_id));
      },
      py::arg("cluster_spec_json"), py::arg("task_type"), py::arg("task_id"));
}

}  // namespace psflow::python
