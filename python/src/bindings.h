// Shared pieces of the psflow._psflow extension: the per-concept init
// functions and the conversions between Python values and psflow's.
//
// Every function here needs the GIL unless it says otherwise. Calls into
// the runtime that may block (network, waits) release it around the C++
// call only, never while touching Python objects.
#ifndef PSFLOW_PYTHON_BINDINGS_H_
#define PSFLOW_PYTHON_BINDINGS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/remote_value.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"
#include "psflow/variable.h"

namespace psflow::python {

namespace py = pybind11;

void init_errors(py::module_& m);
void init_values(py::module_& m);
void init_cluster(py::module_& m);
void init_strategy(py::module_& m);
void init_variable(py::module_& m);
void init_coordinator(py::module_& m);
void init_local_cluster(py::module_& m);
void init_reduce(py::module_& m);
void init_python_steps(py::module_& m);
void init_dynamic_embedding(py::module_& m);

// Raises the psflow.errors exception named after `status`'s code (TF's
// names: InvalidArgumentError, UnavailableError, ...), message kept.
// `status` must not be OK.
[[noreturn]] void raise_status(const absl::Status& status);

inline void check(const absl::Status& status) {
  if (!status.ok()) raise_status(status);
}
template <typename T>
T value_or_raise(absl::StatusOr<T> value) {
  if (!value.ok()) raise_status(value.status());
  return *std::move(value);
}

// Raises TypeError / ValueError with `message` (Python's own exceptions,
// for bad arguments given from Python).
[[noreturn]] void raise_type_error(const std::string& message);
[[noreturn]] void raise_value_error(const std::string& message);

// NumPy <-> Tensor. In: a numpy array or scalar (np.float32(1)) of a
// supported dtype (float32, float64, int32, int64, uint8, bool, and bytes
// or str for string tensors); copied into a new buffer, so that the
// runtime never holds a Python object (it may release tensors on threads
// without the GIL). TypeError naming `what` for any other type or dtype.
[[nodiscard]] Tensor tensor_from_python(py::handle obj, std::string_view what);
// Out: an array viewing the tensor's buffer without a copy (the array's
// base keeps the buffer alive); string tensors give an object array of
// bytes. `writable` false marks the array read-only: for values other
// readers share (a RemoteValue's result).
[[nodiscard]] py::object array_from_tensor(const Tensor& tensor, bool writable);

// The variable `obj` is (a psflow.Variable), or nullptr.
[[nodiscard]] const ShardedVariable* variable_of(py::handle obj);

// Python -> Structure: None, bool, int (int64), float, str / bytes (string),
// numpy arrays and scalars (tensors), psflow.Variable and PerWorkerIterator
// (their handles), tuple, list, dict with str keys, nested. TypeError /
// ValueError naming the path of a bad leaf, e.g. "args[1]['w']".
//
[[nodiscard]] Structure structure_from_python(py::handle obj, const std::string& what);
// The same, RemoteValue leaves allowed (schedule's arguments).
[[nodiscard]] RemoteStructure remote_structure_from_python(py::handle obj, const std::string& what);
// Structure -> Python: tensors as arrays (see array_from_tensor), strings
// as str (bytes when not UTF-8), tuples, lists, dicts.
[[nodiscard]] py::object structure_to_python(const Structure& s, bool writable);

}  // namespace psflow::python

#endif  // PSFLOW_PYTHON_BINDINGS_H_
