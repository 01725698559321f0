// Python values <-> psflow Tensors and Structures.
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bindings.h"
#include "psflow/dtype.h"
#include "psflow/per_worker.h"
#include "psflow/variable.h"

namespace psflow::python {
namespace {

// Deeper nests than this are refused (a list that contains itself, or a
// mistake): the conversions recurse.
constexpr int kMaxDepth = 64;

py::module_ numpy() { return py::module_::import("numpy"); }

// The DType of a numpy dtype; kInvalid when psflow has none.
DType dtype_from_numpy(const py::dtype& dt) {
  if (dt.equal(py::dtype::of<float>())) return DType::kFloat32;
  if (dt.equal(py::dtype::of<double>())) return DType::kFloat64;
  if (dt.equal(py::dtype::of<int32_t>())) return DType::kInt32;
  if (dt.equal(py::dtype::of<int64_t>())) return DType::kInt64;
  if (dt.equal(py::dtype::of<uint8_t>())) return DType::kUInt8;
  if (dt.equal(py::dtype::of<bool>())) return DType::kBool;
  const char kind = dt.kind();
  if (kind == 'S' || kind == 'U') return DType::kString;
  return DType::kInvalid;
}

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return py::dtype::of<float>();
    case DType::kFloat64: return py::dtype::of<double>();
    case DType::kInt32: return py::dtype::of<int32_t>();
    case DType::kInt64: return py::dtype::of<int64_t>();
    case DType::kUInt8: return py::dtype::of<uint8_t>();
    case DType::kBool: return py::dtype::of<bool>();
    default: return py::dtype("O");
  }
}

std::string python_type_name(py::handle obj) {
  return py::str(py::type::handle_of(obj).attr("__qualname__"));
}

Tensor tensor_from_array(const py::array& input, std::string_view what) {
  const DType dtype = dtype_from_numpy(input.dtype());
  if (dtype == DType::kInvalid) {
    raise_type_error(absl::StrCat(
        std::string(what), ": numpy dtype ", std::string(py::str(input.dtype())),
        " has no psflow dtype; use float32, float64, int32, int64, uint8, bool or bytes/str "
        "(e.g. array.astype(numpy.float32))"));
  }
  Shape shape(input.shape(), input.shape() + input.ndim());
  if (dtype == DType::kString) {
    py::list items = input.attr("ravel")().attr("tolist")();
    std::vector<std::string> values;
    values.reserve(items.size());
    for (py::handle item : items) {
      if (py::isinstance<py::bytes>(item)) {
        values.push_back(item.cast<std::string>());
      } else {
        values.push_back(py::str(item).cast<std::string>());
      }
    }
    return Tensor::from_strings(std::move(values), shape.empty() ? Shape{} : shape)
        .reshape(shape)
        .value();
  }
  // Any layout is accepted; the bytes are copied in C order.
  py::array contiguous = py::array::ensure(input, py::array::c_style);
  Tensor tensor(dtype, shape);
  if (tensor.byte_size() > 0) {
    std::memcpy(tensor.mutable_raw_data(), contiguous.data(), tensor.byte_size());
  }
  return tensor;
}

void release_tensor(PyObject* capsule) {
  delete static_cast<Tensor*>(PyCapsule_GetPointer(capsule, "psflow.Tensor"));
}

}  // namespace

Tensor tensor_from_python(py::handle obj, std::string_view what) {
  if (py::isinstance<py::array>(obj)) {
    return tensor_from_array(py::reinterpret_borrow<py::array>(obj), what);
  }
  py::object generic = numpy().attr("generic");
  if (py::isinstance(obj, generic)) {
    return tensor_from_array(numpy().attr("asarray")(obj), what);
  }
  raise_type_error(absl::StrCat(std::string(what), ": expected a numpy array, got ",
                                python_type_name(obj), " (a torch tensor: pass tensor.numpy())"));
}

py::object array_from_tensor(const Tensor& tensor, bool writable) {
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  if (tensor.dtype() == DType::kString) {
    py::list items;
    for (int64_t i = 0; i < tensor.num_elements(); ++i)
      items.append(py::bytes(tensor.string_at(i)));
    py::array flat = numpy().attr("array")(items, py::arg("dtype") = "O");
    return flat.attr("reshape")(py::tuple(py::cast(shape)));
  }
  // The base owns a copy of the tensor (one more reference to its buffer):
  // the array reads the tensor's bytes in place for as long as it lives.
  auto* owner = new Tensor(tensor);
  py::capsule base(owner, "psflow.Tensor", &release_tensor);
  py::array out(numpy_dtype(tensor.dtype()), shape, tensor.raw_data(), base);
  if (!writable) out.attr("flags").attr("writeable") = false;
  return out;
}

namespace {

template <typename Leaf, typename Node>
Node convert(py::handle obj, const std::string& what, int depth, const Leaf& leaf) {
  if (depth > kMaxDepth) {
    raise_value_error(absl::StrCat(what, ": nested more than ", kMaxDepth,
                                   " levels deep (does a list contain itself?)"));
  }
  if (obj.is_none()) return Node();
  if (PyBool_Check(obj.ptr())) return Node(Structure(obj.cast<bool>()));
  if (std::optional<Node> special = leaf(obj, what); special.has_value()) return *special;
  if (py::isinstance<py::array>(obj) || py::isinstance(obj, numpy().attr("generic"))) {
    return Node(Structure(tensor_from_python(obj, what)));
  }
  if (PyLong_Check(obj.ptr())) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow != 0) {
      raise_value_error(
          absl::StrCat(what, ": int ", std::string(py::str(obj)), " does not fit in int64"));
    }
    return Node(Structure(static_cast<int64_t>(v)));
  }
  if (PyFloat_Check(obj.ptr())) return Node(Structure(obj.cast<double>()));
  if (py::isinstance<py::str>(obj) || py::isinstance<py::bytes>(obj)) {
    return Node(Structure(obj.cast<std::string>()));
  }
  if (py::isinstance<py::tuple>(obj) || py::isinstance<py::list>(obj)) {
    std::vector<Node> items;
    size_t i = 0;
    for (py::handle item : obj) {
      items.push_back(convert<Leaf, Node>(item, absl::StrCat(what, "[", i, "]"), depth + 1, leaf));
      ++i;
    }
    return py::isinstance<py::tuple>(obj) ? Node::tuple(std::move(items))
                                          : Node::list(std::move(items));
  }
  if (py::isinstance<py::dict>(obj)) {
    typename Node::Fields fields;
    for (auto [key, value] : py::reinterpret_borrow<py::dict>(obj)) {
      if (!py::isinstance<py::str>(key)) {
        raise_type_error(absl::StrCat(what, ": dict keys must be str, got ", python_type_name(key),
                                      " ", std::string(py::repr(key))));
      }
      std::string name = py::str(key).cast<std::string>();
      fields.emplace(
          name, convert<Leaf, Node>(value, absl::StrCat(what, "['", name, "']"), depth + 1, leaf));
    }
    return Node::dict(std::move(fields));
  }
  raise_type_error(absl::StrCat(
      what, ": cannot convert ", python_type_name(obj),
      " to a psflow value; use None, bool, int, float, str, bytes, numpy arrays, "
      "psflow.Variable, or tuples, lists and dicts of them (a torch tensor: tensor.numpy())"));
}

// Variables and per-worker iterators travel as their handles (workers
// rebuild them).
std::optional<Structure> variable_leaf(py::handle obj, const std::string&) {
  if (const ShardedVariable* v = variable_of(obj)) return v->handle().to_structure();
  if (py::isinstance<PerWorkerIterator>(obj)) return obj.cast<const PerWorkerIterator&>().handle();
  return std::nullopt;
}

}  // namespace

Structure structure_from_python(py::handle obj, const std::string& what) {
  return convert<decltype(&variable_leaf), Structure>(obj, what, 0, &variable_leaf);
}

RemoteStructure remote_structure_from_python(py::handle obj, const std::string& what) {
  auto leaf = [](py::handle o, const std::string& w) -> std::optional<RemoteStructure> {
    if (py::isinstance<RemoteValue>(o)) return RemoteStructure(o.cast<RemoteValue>());
    if (std::optional<Structure> v = variable_leaf(o, w)) return RemoteStructure(*std::move(v));
    return std::nullopt;
  };
  return convert<decltype(leaf), RemoteStructure>(obj, what, 0, leaf);
}

py::object structure_to_python(const Structure& s, bool writable) {
  switch (s.kind()) {
    case Structure::Kind::kNone: return py::none();
    case Structure::Kind::kTensor: return array_from_tensor(s.tensor(), writable);
    case Structure::Kind::kInt: return py::int_(s.int_value());
    case Structure::Kind::kFloat: return py::float_(s.float_value());
    case Structure::Kind::kBool: return py::bool_(s.bool_value());
    case Structure::Kind::kString: {
      const std::string& v = s.string_value();
      PyObject* text = PyUnicode_DecodeUTF8(v.data(), static_cast<py::ssize_t>(v.size()), nullptr);
      if (text != nullptr) return py::reinterpret_steal<py::object>(text);
      PyErr_Clear();
      return py::bytes(v);
    }
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      py::list items;
      for (const Structure& item : s.items()) items.append(structure_to_python(item, writable));
      if (s.kind() == Structure::Kind::kList) return items;
      return py::tuple(items);
    }
    case Structure::Kind::kDict: {
      py::dict fields;
      for (const auto& [key, value] : s.fields()) {
        fields[py::str(key)] = structure_to_python(value, writable);
      }
      return fields;
    }
  }
  return py::none();
}

void init_values(py::module_& m) {
  // Round trips for the tests: Python -> Structure -> Python, and the
  // Structure's printout.
  m.def(
      "_round_trip",
      [](py::handle value) {
        return structure_to_python(structure_from_python(value, "value"), true);
      },
      py::arg("value"));
  m.def(
      "_debug_string",
      [](py::handle value) { return structure_from_python(value, "value").debug_string(); },
      py::arg("value"));
}

}  // namespace psflow::python
