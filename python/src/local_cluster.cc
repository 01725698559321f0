// LocalCluster: ps and worker processes on loopback, children of this one.
#include "psflow/local_cluster.h"

#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "bindings.h"

namespace psflow::python {
namespace {

// Starting, stopping and destroying wait on child processes: without the
// GIL. Thread-safety: as LocalCluster (any thread).
struct Cluster {
  std::unique_ptr<LocalCluster> cluster;

  ~Cluster() {
    if (cluster == nullptr) return;
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release release;
      cluster.reset();
    } else {
      cluster.reset();
    }
  }
};

}  // namespace

void init_local_cluster(py::module_& m) {
  py::class_<Cluster>(m, "_LocalCluster")
      .def(
          py::init(
              [](int num_ps, int num_workers, const std::string& binary, const std::string& host,
                 double startup_timeout_seconds, const std::string& log_dir, int max_restarts,
                 std::vector<std::string> server_flags, bool insecure, const std::string& tls_dir) {
                LocalClusterOptions options;
                options.num_ps = num_ps;
                options.num_workers = num_workers;
                options.binary_path = binary;
                options.host = host;
                options.startup_timeout = absl::Seconds(startup_timeout_seconds);
                options.log_dir = log_dir;
                options.max_restarts = max_restarts;
                options.server_flags = std::move(server_flags);
                options.insecure = insecure;
                options.tls_dir = tls_dir;
                absl::StatusOr<std::unique_ptr<LocalCluster>> started;
                {
                  py::gil_scoped_release release;
                  started = LocalCluster::start(std::move(options));
                }
                auto out = std::make_unique<Cluster>();
                out->cluster = value_or_raise(std::move(started));
                return out;
              }),
          py::arg("num_ps"), py::arg("num_workers"), py::arg("binary"), py::arg("host"),
          py::arg("startup_timeout_seconds"), py::arg("log_dir"), py::arg("max_restarts"),
          py::arg("server_flags"), py::arg("insecure"), py::arg("tls_dir"))
      .def("cluster_spec_json",
           [](const Cluster& c) { return c.cluster->cluster_spec().to_json(); })
      .def(
          "pid",
          [](const Cluster& c, const std::string& job, int index) {
            return static_cast<int64_t>(value_or_raise(c.cluster->pid(job, index)));
          },
          py::arg("job"), py::arg("index"))
      .def(
          "signal_task",
          [](Cluster& c, const std::string& job, int index, int signal) {
            check(c.cluster->signal_task(job, index, signal));
          },
          py::arg("job"), py::arg("index"), py::arg("signal"))
      .def(
          "restart_count",
          [](const Cluster& c, const std::string& job, int index) {
            return value_or_raise(c.cluster->restart_count(job, index));
          },
          py::arg("job"), py::arg("index"))
      .def(
          "wait_for_restart",
          [](Cluster& c, const std::string& job, int index, int restarts, double timeout_seconds) {
            absl::StatusOr<pid_t> pid;
            {
              py::gil_scoped_release release;
              pid =
                  c.cluster->wait_for_restart(job, index, restarts, absl::Seconds(timeout_seconds));
            }
            return static_cast<int64_t>(value_or_raise(std::move(pid)));
          },
          py::arg("job"), py::arg("index"), py::arg("restarts"), py::arg("timeout_seconds"))
      .def(
          "stop",
          [](Cluster& c, double grace_seconds) {
            py::gil_scoped_release release;
            c.cluster->stop(absl::Seconds(grace_seconds));
          },
          py::arg("grace_seconds"));
}

}  // namespace psflow::python
