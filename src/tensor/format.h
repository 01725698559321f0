// Python-like text for values in debug strings (internal).
#ifndef PSFLOW_TENSOR_FORMAT_H_
#define PSFLOW_TENSOR_FORMAT_H_

#include <string>
#include <string_view>

namespace psflow::internal {

// repr() of a Python str: 'abc', "it's", with \n \t \\ and control bytes
// escaped. Bytes >= 0x80 pass through (assumed UTF-8).
void append_python_string(std::string* out, std::string_view s);
// repr() of a Python float: 1.0, 0.1, 1e-05, 1e+16, inf, nan.
void append_python_float(std::string* out, double v);
// Shortest round-trip text without a forced ".0": 1, 0.5, 1e+20 (the
// element style of a tensor printout).
void append_shortest(std::string* out, double v);
void append_shortest(std::string* out, float v);

}  // namespace psflow::internal

#endif  // PSFLOW_TENSOR_FORMAT_H_
