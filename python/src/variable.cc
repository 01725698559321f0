// psflow.Variable: TF's tf.Variable / ShardedVariable over psflow's
// ShardedVariable (a one-part ShardedVariable when not partitioned).
#include "psflow/variable.h"

#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bindings.h"
#include "psflow/strategy.h"
#include "psflow/variable_policy.h"

namespace psflow::python {
namespace {

py::module_ numpy() { return py::module_::import("numpy"); }

py::tuple shape_tuple(const Shape& shape) { return py::tuple(py::cast(shape)); }

// TF's conversion of an initial value: a callable is called; Python
// numbers and lists default to float32 / int32 as in TF; `dtype` casts.
py::array initial_array(py::object initial_value, const py::object& dtype) {
  if (PyCallable_Check(initial_value.ptr())) initial_value = initial_value();
  if (!dtype.is_none()) return numpy().attr("asarray")(initial_value, py::arg("dtype") = dtype);
  const bool from_numpy = py::isinstance<py::array>(initial_value) ||
                          py::isinstance(initial_value, numpy().attr("generic"));
  py::array array = numpy().attr("asarray")(initial_value);
  if (!from_numpy) {
    const char kind = array.dtype().kind();
    if (kind == 'f') array = array.attr("astype")(numpy().attr("float32"));
    if (kind == 'i') array = array.attr("astype")(numpy().attr("int32"));
  }
  return array;
}

// A value for an update of `v`: numpy arrays must have its dtype and shape
// (TypeError / ValueError otherwise, naming `what`); other values are
// converted to its dtype.
Tensor update_tensor(const ShardedVariable& v, py::handle value, const std::string& what,
                     std::optional<Shape> expected_shape) {
  py::object dtype = array_from_tensor(Tensor(v.dtype(), {}), true).attr("dtype");
  py::array array = py::isinstance<py::array>(value)
                        ? py::reinterpret_borrow<py::array>(value)
                        : py::array(numpy().attr("asarray")(value, py::arg("dtype") = dtype));
  if (!array.dtype().equal(py::dtype::from_args(dtype))) {
    raise_type_error(absl::StrCat(what, ": dtype ", std::string(py::str(array.dtype())),
                                  " does not match variable '", v.name(), "' of dtype ",
                                  std::string(dtype_name(v.dtype())), "; cast it with .astype()"));
  }
  Tensor t = tensor_from_python(array, what);
  if (expected_shape.has_value() && t.shape() != *expected_shape) {
    raise_value_error(absl::StrCat(what, ": shape ", shape_string(t.shape()),
                                   " does not match variable '", v.name(), "' of shape ",
                                   shape_string(*expected_shape)));
  }
  return t;
}

template <typename Op>
void update(const ShardedVariable& v, py::handle value, const char* what, Op op) {
  Tensor t = update_tensor(v, value, what, v.shape());
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = op(v, t);
  }
  check(status);
}

Tensor index_tensor(py::handle indices, const char* what) {
  py::array array = numpy().attr("asarray")(indices);
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    raise_type_error(absl::StrCat(what, ": indices must be integers, got dtype ",
                                  std::string(py::str(array.dtype()))));
  }
  if (!array.dtype().equal(py::dtype::of<int32_t>())) {
    array = array.attr("astype")(numpy().attr("int64"));
  }
  return tensor_from_python(array, what);
}

template <typename Op>
void scatter(const ShardedVariable& v, py::handle sparse_delta, const char* what, Op op) {
  if (!py::hasattr(sparse_delta, "values") || !py::hasattr(sparse_delta, "indices")) {
    raise_type_error(absl::StrCat(what, ": expected a psflow.IndexedSlices(values, indices)"));
  }
  IndexedSlices slices;
  slices.indices = index_tensor(sparse_delta.attr("indices"), what);
  slices.values = update_tensor(v, sparse_delta.attr("values"), what, std::nullopt);
  absl::Status status;
  {
    py::gil_scoped_release release;
    status = op(v, slices);
  }
  check(status);
}

py::object read(const ShardedVariable& v) {
  absl::StatusOr<Tensor> value;
  {
    py::gil_scoped_release release;
    value = v.read_value();
  }
  return array_from_tensor(value_or_raise(std::move(value)), true);
}

ShardedVariable make_variable(py::object initial_value, py::object name, py::object dtype,
                              py::object trainable, py::object aggregation,
                              py::object synchronization) {
  VariableOptions options;
  if (!name.is_none()) {
    if (!py::isinstance<py::str>(name)) {
      raise_type_error("Variable: name must be a str, got " + std::string(py::repr(name)));
    }
    options.name = name.cast<std::string>();
  }
  if (!trainable.is_none()) options.trainable = trainable.cast<bool>();
  if (!aggregation.is_none()) {
    absl::StatusOr<VariableAggregation> a =
        variable_aggregation_from_name(py::str(aggregation).cast<std::string>());
    if (!a.ok()) raise_value_error("Variable: aggregation: " + std::string(a.status().message()));
    options.aggregation = *a;
  }
  if (!synchronization.is_none()) {
    absl::StatusOr<VariableSynchronization> s =
        variable_synchronization_from_name(py::str(synchronization).cast<std::string>());
    if (!s.ok()) {
      raise_value_error("Variable: synchronization: " + std::string(s.status().message()));
    }
    options.synchronization = *s;
  }
  Tensor value =
      tensor_from_python(initial_array(std::move(initial_value), dtype), "Variable: initial_value");
  absl::StatusOr<ShardedVariable> v;
  {
    py::gil_scoped_release release;
    v = create_variable(std::move(value), std::move(options));
  }
  return value_or_raise(std::move(v));
}

}  // namespace

const ShardedVariable* variable_of(py::handle obj) {
  if (!py::isinstance<ShardedVariable>(obj)) return nullptr;
  return &obj.cast<const ShardedVariable&>();
}

void init_variable(py::module_& m) {
  py::class_<ShardedVariable>(m, "Variable", R"(A variable stored on the parameter servers.

Variable(initial_value, name=None, dtype=None, trainable=None,
         aggregation=None, synchronization=None)

TF's tf.Variable: created inside `strategy.scope()` it is placed on the
strategy's ps tasks (and split into parts when the strategy's
variable_partitioner says so: TF's ShardedVariable, whose parts are
`.variables`); outside any scope it lives in this process. Every operation
is one request per ps task, made without holding the GIL.)")
      .def(py::init(&make_variable), py::arg("initial_value"), py::arg("name") = py::none(),
           py::arg("dtype") = py::none(), py::arg("trainable") = py::none(),
           py::arg("aggregation") = py::none(), py::arg("synchronization") = py::none())
      .def_property_readonly("name", &ShardedVariable::name)
      .def_property_readonly("dtype",
                             [](const ShardedVariable& v) {
                               return array_from_tensor(Tensor(v.dtype(), {}), true).attr("dtype");
                             })
      .def_property_readonly("shape",
                             [](const ShardedVariable& v) { return shape_tuple(v.shape()); })
      .def_property_readonly("trainable", &ShardedVariable::trainable)
      .def_property_readonly("aggregation",
                             [](const ShardedVariable& v) {
                               return std::string(variable_aggregation_name(v.aggregation()));
                             })
      .def_property_readonly(
          "synchronization",
          [](const ShardedVariable& v) {
            return std::string(variable_synchronization_name(v.synchronization()));
          })
      .def_property_readonly("device",
                             [](const ShardedVariable& v) {
                               return v.num_parts() == 1 ? v.variables()[0].device()
                                                         : std::string();
                             })
      .def_property_readonly(
          "variables",
          [](const ShardedVariable& v) {
            std::vector<ShardedVariable> parts(v.variables().begin(), v.variables().end());
            return parts;
          },
          "The parts, in row order (one for an unsharded variable).")
      .def_property_readonly("num_parts", &ShardedVariable::num_parts)
      .def_property_readonly(
          "handle",
          [](const ShardedVariable& v) {
            return structure_to_python(v.handle().to_structure(), true);
          },
          "The variable's handle as scheduled functions receive it.")
      .def("read_value", &read, "The current value, a numpy array.")
      .def("numpy", &read)
      .def("value", &read)
      .def(
          "__array__",
          [](const ShardedVariable& v, py::object dtype) {
            py::object value = read(v);
            return dtype.is_none() ? value : value.attr("astype")(dtype);
          },
          py::arg("dtype") = py::none())
      .def(
          "assign",
          [](const ShardedVariable& v, py::handle value) {
            update(v, value, "assign: value",
                   [](const ShardedVariable& var, const Tensor& t) { return var.assign(t); });
            return v;
          },
          py::arg("value"))
      .def(
          "assign_add",
          [](const ShardedVariable& v, py::handle delta) {
            update(v, delta, "assign_add: delta",
                   [](const ShardedVariable& var, const Tensor& t) { return var.assign_add(t); });
            return v;
          },
          py::arg("delta"))
      .def(
          "assign_sub",
          [](const ShardedVariable& v, py::handle delta) {
            update(v, delta, "assign_sub: delta",
                   [](const ShardedVariable& var, const Tensor& t) { return var.assign_sub(t); });
            return v;
          },
          py::arg("delta"))
      .def(
          "sparse_read",
          [](const ShardedVariable& v, py::handle indices) {
            Tensor ids = index_tensor(indices, "sparse_read: indices");
            absl::StatusOr<Tensor> rows;
            {
              py::gil_scoped_release release;
              rows = v.sparse_read(ids);
            }
            return array_from_tensor(value_or_raise(std::move(rows)), true);
          },
          py::arg("indices"))
      .def(
          "scatter_add",
          [](const ShardedVariable& v, py::handle sparse_delta) {
            scatter(v, sparse_delta, "scatter_add: sparse_delta",
                    [](const ShardedVariable& var, const IndexedSlices& s) {
                      return var.scatter_add(s);
                    });
            return v;
          },
          py::arg("sparse_delta"))
      .def(
          "scatter_update",
          [](const ShardedVariable& v, py::handle sparse_delta) {
            scatter(v, sparse_delta, "scatter_update: sparse_delta",
                    [](const ShardedVariable& var, const IndexedSlices& s) {
                      return var.scatter_update(s);
                    });
            return v;
          },
          py::arg("sparse_delta"))
      .def("__repr__", [](const ShardedVariable& v) {
        std::vector<std::string> places;
        for (const Variable& part : v.variables()) places.push_back(part.device());
        return absl::StrCat("<psflow.Variable '", v.name(), "' shape=", shape_string(v.shape()),
                            " dtype=", std::string(dtype_name(v.dtype())), " parts=", v.num_parts(),
                            " on ", absl::StrJoin(places, ", "), ">");
      });
}

}  // namespace psflow::python
