// absl::Status -> the psflow.errors exception of its code (TF's names).
#include <string>

#include "absl/status/status.h"
#include "bindings.h"

namespace psflow::python {

void raise_status(const absl::Status& status) {
  py::object errors = py::module_::import("psflow.errors");
  py::object cls = errors.attr("exception_type_from_error_code")(static_cast<int>(status.code()));
  py::object exception = cls(py::none(), py::none(), std::string(status.message()));
  PyErr_SetObject(cls.ptr(), exception.ptr());
  throw py::error_already_set();
}

void raise_type_error(const std::string& message) { throw py::type_error(message); }
void raise_value_error(const std::string& message) { throw py::value_error(message); }

void init_errors(py::module_& m) {
  // Lets the tests check the mapping of every code without a cluster.
  m.def(
      "_raise_status",
      [](int code, const std::string& message) {
        if (code <= 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
          raise_value_error("_raise_status: code must be an error code 1..16, got " +
                            std::to_string(code));
        }
        raise_status(absl::Status(static_cast<absl::StatusCode>(code), message));
      },
      py::arg("code"), py::arg("message"));
}

}  // namespace psflow::python
