// TF_CONFIG as TensorFlow's Python reads it: `json.loads` followed by `str()`
// and `int()` casts. These helpers reproduce those semantics over
// nlohmann::ordered_json (ordered, so that "document order" rules of Python
// dicts can be mirrored) and turn Python's exceptions into absl::Status.
#ifndef PSFLOW_CLUSTER_TF_JSON_H_
#define PSFLOW_CLUSTER_TF_JSON_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace psflow::internal {

using TfJson = nlohmann::ordered_json;

// Parses `text` as one JSON value. On malformed input returns
// INVALID_ARGUMENT "<what> is not valid JSON at byte N near '<snippet>': <parser
// detail>; <fix>", where N is the 1-based byte the parser stopped at.
[[nodiscard]] absl::StatusOr<TfJson> parse_tf_json(std::string_view text, std::string_view what,
                                                   std::string_view fix);

// Python's repr() of the value json.loads would produce: 'a', 1, True, None,
// ['a', 1], {'k': 'v'}. Used to quote offending values the way TF does.
[[nodiscard]] std::string py_repr(const TfJson& value);
[[nodiscard]] std::string py_repr_string(std::string_view s);

// py_repr() cut to `max_chars` (then "..."), for quoting values in messages.
[[nodiscard]] std::string py_repr_abbrev(const TfJson& value, std::size_t max_chars = 80);

// Python's str(): strings as-is, everything else as repr() (123456 ->
// "123456", true -> "True", null -> "None").
[[nodiscard]] std::string py_str(const TfJson& value);

// Python's int() narrowed to int: integers as-is, floats truncated toward
// zero, booleans 0/1, strings parsed base 10 (surrounding whitespace, a sign
// and single underscores between digits allowed). INVALID_ARGUMENT with
// Python's message ("invalid literal for int() with base 10: 'abc'", "int()
// argument must be ... not 'NoneType'"), or OUT_OF_RANGE when the value does
// not fit in an int. Callers add context and the fix.
[[nodiscard]] absl::StatusOr<int> py_int(const TfJson& value);
[[nodiscard]] absl::StatusOr<int> py_int_from_string(std::string_view literal);

}  // namespace psflow::internal

#endif  // PSFLOW_CLUSTER_TF_JSON_H_
