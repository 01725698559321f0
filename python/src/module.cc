// The extension module psflow._psflow: one init function per concept.
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "train_bindings.h"

PYBIND11_MODULE(_psflow, m) {
  m.doc() = "psflow's C++ runtime; use the psflow package, not this module.";
  psflow::python::init_errors(m);
  psflow::python::init_values(m);
  psflow::python::init_cluster(m);
  psflow::python::init_strategy(m);
  psflow::python::init_variable(m);
  psflow::python::init_coordinator(m);
  psflow::python::init_local_cluster(m);
  psflow::python::init_reduce(m);
  psflow::python::init_python_steps(m);
  psflow::python::init_dynamic_embedding(m);
  psflow::python::init_checkpoint(m);
}
