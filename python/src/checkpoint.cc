// psflow.train.Checkpoint and CheckpointManager over the C++ ones
// (include/psflow/checkpoint.h): variables and an optimizer's iterations
// and slots, and dynamic embedding tables (rows, slots, last-seen steps),
// saved to and restored from safetensors directories.
#include "psflow/checkpoint.h"

#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "train_bindings.h"

namespace psflow::python {

void init_checkpoint(py::module_& m) {
  py::class_<Checkpoint>(m, "_Checkpoint")
      .def(py::init([](const py::dict& variables, py::handle optimizer, const py::dict& tables) {
             std::map<std::string, ShardedVariable> tracked;
             for (auto [key, value] : variables) {
               const ShardedVariable* v = variable_of(value);
               if (v == nullptr) {
                 raise_type_error(absl::StrCat("Checkpoint: '", py::str(key).cast<std::string>(),
                                               "' is not a psflow.Variable"));
               }
               tracked.emplace(py::str(key).cast<std::string>(), *v);
             }
             std::map<std::string, DynamicEmbedding> tracked_tables;
             for (auto [key, value] : tables) {
               if (!py::isinstance<DynamicEmbedding>(value)) {
                 raise_type_error(absl::StrCat("Checkpoint: '", py::str(key).cast<std::string>(),
                                               "' is not a psflow dynamic embedding table"));
               }
               tracked_tables.emplace(py::str(key).cast<std::string>(),
                                      value.cast<const DynamicEmbedding&>());
             }
             std::optional<Optimizer> opt;
             if (!optimizer.is_none()) opt = optimizer_from_python(optimizer);
             return value_or_raise(
                 Checkpoint::create(std::move(tracked), std::move(opt), std::move(tracked_tables)));
           }),
           py::arg("variables"), py::arg("optimizer"), py::arg("tables"))
      .def(
          "write",
          [](const Checkpoint& c, const std::string& path) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = c.save(path);
            }
            check(status);
          },
          py::arg("path"))
      .def(
          "restore",
          [](const Checkpoint& c, const std::string& path) {
            absl::Status status;
            {
              py::gil_scoped_release release;
              status = c.restore(path);
            }
            check(status);
          },
          py::arg("path"));

  py::class_<CheckpointManager>(m, "_CheckpointManager")
      .def(py::init([](const Checkpoint& checkpoint, const std::string& directory,
                       std::optional<int> max_to_keep) {
             absl::StatusOr<CheckpointManager> made;
             {
               py::gil_scoped_release release;
               made = CheckpointManager::create(checkpoint, directory, max_to_keep);
             }
             return value_or_raise(std::move(made));
           }),
           py::arg("checkpoint"), py::arg("directory"), py::arg("max_to_keep"))
      .def("save",
           [](CheckpointManager& manager) {
             absl::StatusOr<std::string> path;
             {
               py::gil_scoped_release release;
               path = manager.save();
             }
             return value_or_raise(std::move(path));
           })
      .def_property_readonly("latest_checkpoint", &CheckpointManager::latest_checkpoint)
      .def_property_readonly("checkpoints", &CheckpointManager::checkpoints)
      .def_property_readonly("directory", &CheckpointManager::directory)
      .def("restore_or_initialize", [](CheckpointManager& manager) {
        absl::StatusOr<std::optional<std::string>> restored;
        {
          py::gil_scoped_release release;
          restored = manager.restore_or_initialize();
        }
        return value_or_raise(std::move(restored));
      });
}

}  // namespace psflow::python
