// Training pieces of the extension shared by its files: the ps optimizer a
// Python optimizer describes (psflow.keras.optimizers), and the checkpoint
// bindings (psflow.train.Checkpoint / CheckpointManager).
//
// Every function here needs the GIL.
#ifndef PSFLOW_PYTHON_TRAIN_BINDINGS_H_
#define PSFLOW_PYTHON_TRAIN_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <string>

#include "psflow/optimizer.h"
#include "psflow/optimizer_config.h"
#include "psflow/variable.h"

namespace psflow::python {

namespace py = pybind11;

// The configuration of optimizer `kind` (sgd, momentum, adagrad, adam,
// ftrl) with the hyper-parameters in `hyper` (Keras's names; absent ones
// keep their defaults). ValueError naming an unknown kind.
[[nodiscard]] OptimizerConfig optimizer_config_from_python(const std::string& kind,
                                                           const py::dict& hyper);

// The ps optimizer a psflow.keras.optimizers.Optimizer describes, adopting
// its `iterations` variable (no request is made).
[[nodiscard]] Optimizer optimizer_from_python(py::handle optimizer);

void init_checkpoint(py::module_& m);

}  // namespace psflow::python

#endif  // PSFLOW_PYTHON_TRAIN_BINDINGS_H_
