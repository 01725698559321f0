// ClusterCoordinator and RemoteValue.
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "bindings.h"
#include "psflow/cluster_coordinator.h"
#include "psflow/per_worker.h"
#include "psflow/remote_value.h"
#include "psflow/strategy.h"

namespace psflow::python {
namespace {

// The coordinator of one strategy, which it keeps alive. Destroying it
// (the last handle) waits for running closures: without the GIL.
// Thread-safety: as ClusterCoordinator (thread-safe).
struct Coordinator {
  std::shared_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<ClusterCoordinator> coordinator;

  ~Coordinator() {
    if (coordinator == nullptr) return;
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      coordinator.reset();
    } else {
      coordinator.reset();
    }
  }
};

py::object fetch_value(const RemoteValue& v) {
  absl::StatusOr<Structure> value;
  {
    py::gil_scoped_release release;
    value = v.fetch();
  }
  // The value is shared by every fetch of this RemoteValue: read-only.
  return structure_to_python(value_or_raise(std::move(value)), false);
}

}  // namespace

void init_coordinator(py::module_& m) {
  py::class_<RemoteValue>(m, "RemoteValue", R"(The eventual result of a scheduled function.

TF's RemoteValue: fetch() waits for the function and returns its value
(numpy arrays, read-only: every fetch shares them) or raises its error
(psflow.errors). A RemoteValue may also be an argument of a later
schedule(), which then waits for it.)")
      .def("fetch", &fetch_value, "Waits for the value (without the GIL) and returns it.")
      .def("get", &fetch_value, "Same as fetch().")
      .def("is_ready", &RemoteValue::is_ready)
      .def(
          "wait",
          [](const RemoteValue& v, std::optional<double> timeout) {
            py::gil_scoped_release release;
            if (!timeout.has_value()) {
              v.wait();
              return true;
            }
            return v.wait(absl::Seconds(*timeout));
          },
          py::arg("timeout") = py::none(),
          "Waits until ready, or `timeout` seconds; returns whether it is ready.")
      .def_property_readonly(
          "status",
          [](const RemoteValue& v) { return std::string(remote_value_status_name(v.status())); })
      .def_property_readonly("closure_id", &RemoteValue::closure_id)
      .def_property_readonly("function_name", &RemoteValue::function_name)
      .def("__repr__", &RemoteValue::debug_string);

  py::class_<PerWorkerIterator>(m, "PerWorkerIterator", R"(One iterator per worker (TF's
PerWorkerValues of iterators): pass it in schedule() arguments; the function
reads its worker's next element. Keep it while functions use it: the workers
drop their iterators once it is gone.)")
      // iter(dataset) needs an iterator type; its elements are read on the
      // workers only (TF raises the same).
      .def("__next__",
           [](const PerWorkerIterator&) {
             PyErr_SetString(PyExc_NotImplementedError,
                             "Iterating over a PerWorkerIterator on the coordinator is not "
                             "supported: pass it to a scheduled function, which reads its "
                             "worker's next element");
             throw py::error_already_set();
           })
      .def("__repr__", [](const PerWorkerIterator& it) {
        return "<psflow PerWorkerIterator " + it.handle().debug_string() + ">";
      });
  py::class_<PerWorkerDataset>(m, "PerWorkerDataset",
                               "TF's PerWorkerDataset: iter() gives a fresh iterator on every "
                               "worker.")
      .def("__iter__", &PerWorkerDataset::iter)
      .def("iter", &PerWorkerDataset::iter)
      .def_property_readonly("dataset_fn", &PerWorkerDataset::dataset_fn);

  py::class_<Coordinator>(m, "_ClusterCoordinator")
      .def(py::init([](std::shared_ptr<ParameterServerStrategy> strategy,
                       int max_in_flight_per_worker, double worker_timeout_seconds) {
             if (strategy == nullptr) raise_type_error("ClusterCoordinator: strategy is None");
             if (max_in_flight_per_worker < 1) {
               raise_value_error("ClusterCoordinator: max_in_flight_per_worker must be >= 1");
             }
             if (!(worker_timeout_seconds > 0)) {
               raise_value_error("ClusterCoordinator: worker_timeout must be > 0 seconds");
             }
             ClusterCoordinatorOptions options;
             options.max_in_flight_per_worker = max_in_flight_per_worker;
             options.worker_timeout = absl::Seconds(worker_timeout_seconds);
             absl::StatusOr<std::unique_ptr<ClusterCoordinator>> c;
             {
               py::gil_scoped_release release;
               c = ClusterCoordinator::create(*strategy, options);
             }
             auto out = std::make_unique<Coordinator>();
             out->strategy = std::move(strategy);
             out->coordinator = value_or_raise(std::move(c));
             return out;
           }),
           py::arg("strategy"), py::arg("max_in_flight_per_worker"),
           py::arg("worker_timeout_seconds"))
      .def(
          "schedule",
          [](Coordinator& c, const std::string& function_name, py::handle args) {
            RemoteStructure structure = remote_structure_from_python(args, "schedule: args");
            absl::StatusOr<RemoteValue> v;
            {
              // May block while the queue is full.
              py::gil_scoped_release release;
              v = c.coordinator->schedule(function_name, std::move(structure));
            }
            return value_or_raise(std::move(v));
          },
          py::arg("function_name"), py::arg("args"))
      .def("join",
           [](Coordinator& c) {
             absl::Status status;
             {
               py::gil_scoped_release release;
               status = c.coordinator->join();
             }
             check(status);
           })
      .def("done",
           [](Coordinator& c) {
             absl::StatusOr<bool> done;
             {
               py::gil_scoped_release release;
               done = c.coordinator->done();
             }
             return value_or_raise(std::move(done));
           })
      .def(
          "fetch_all",
          [](Coordinator& c, const std::vector<RemoteValue>& values) {
            absl::StatusOr<std::vector<Structure>> fetched;
            {
              py::gil_scoped_release release;
              fetched = c.coordinator->fetch(values);
            }
            py::list out;
            for (const Structure& s : value_or_raise(std::move(fetched))) {
              out.append(structure_to_python(s, false));
            }
            return out;
          },
          py::arg("values"))
      .def(
          "create_per_worker_dataset",
          [](Coordinator& c, const std::string& dataset_fn, py::handle args) {
            Structure structure = structure_from_python(args, "create_per_worker_dataset: args");
            absl::StatusOr<PerWorkerDataset> dataset;
            {
              py::gil_scoped_release release;
              dataset = c.coordinator->create_per_worker_dataset(dataset_fn, std::move(structure));
            }
            return value_or_raise(std::move(dataset));
          },
          py::arg("dataset_fn"), py::arg("args"))
      .def_property_readonly("num_workers",
                             [](const Coordinator& c) { return c.coordinator->num_workers(); })
      .def("task_states", [](const Coordinator& c) {
        py::list out;
        for (const TaskState& s : c.coordinator->get_task_states()) {
          out.append(py::make_tuple(
              s.task, s.error.ok() ? py::object(py::none())
                                   : py::object(py::str(std::string(s.error.message())))));
        }
        return out;
      });
}

}  // namespace psflow::python
