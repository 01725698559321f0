#include "cluster/tf_json.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// How many bytes of context a parse error shows on each side of the position.
constexpr std::size_t kSnippetContext = 20;
// Nesting deeper than this is printed as "[...]" / "{...}" so that repr of a
// hostile value cannot exhaust the stack.
constexpr int kMaxReprDepth = 64;

void append_escaped_byte(std::string& out, unsigned char c) {
  switch (c) {
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20 || c == 0x7f) {
        out += absl::StrFormat("\\x%02x", c);
      } else {
        out += static_cast<char>(c);
      }
  }
}

void append_repr(std::string& out, const TfJson& value, int depth) {
  switch (value.type()) {
    case TfJson::value_t::null: out += "None"; return;
    case TfJson::value_t::boolean: out += value.get<bool>() ? "True" : "False"; return;
    case TfJson::value_t::number_integer:
    case TfJson::value_t::number_unsigned:
    case TfJson::value_t::number_float:
      // nlohmann prints floats in the shortest round-trip form ("1.5",
      // "100.0", "1e+20"), which is what Python's repr() prints too.
      out += value.dump();
      return;
    case TfJson::value_t::string:
      out += py_repr_string(value.get_ref<const std::string&>());
      return;
    case TfJson::value_t::array:
    case TfJson::value_t::object: {
      const bool is_object = value.is_object();
      if (depth >= kMaxReprDepth) {
        out += is_object ? "{...}" : "[...]";
        return;
      }
      out += is_object ? '{' : '[';
      bool first = true;
      for (const auto& item : value.items()) {
        if (!first) out += ", ";
        first = false;
        if (is_object) {
          out += py_repr_string(item.key());
          out += ": ";
        }
        append_repr(out, item.value(), depth + 1);
      }
      out += is_object ? '}' : ']';
      return;
    }
    case TfJson::value_t::binary:
    case TfJson::value_t::discarded:
      // Never produced by parsing JSON text.
      out += "<?>";
      return;
  }
}

absl::Status invalid_literal(std::string_view literal) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid literal for int() with base 10: ", py_repr_string(literal)));
}

absl::Status out_of_range(std::string_view shown) {
  return absl::OutOfRangeError(absl::StrCat("int value ", av(shown), " is outside [",
                                            std::numeric_limits<int>::min(), ", ",
                                            std::numeric_limits<int>::max(), "]"));
}

bool is_py_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

}  // namespace

absl::StatusOr<TfJson> parse_tf_json(std::string_view text, std::string_view what,
                                     std::string_view fix) {
  try {
    return TfJson::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is the 1-based index of the last byte read; at end of input it
    // is one past the text.
    const std::size_t at = e.byte == 0 ? 0 : std::min<std::size_t>(e.byte - 1, text.size());
    const std::size_t begin = at > kSnippetContext ? at - kSnippetContext : 0;
    const std::size_t end = std::min(text.size(), at + kSnippetContext);
    std::string snippet = begin > 0 ? "..." : "";
    for (std::size_t i = begin; i < end; ++i) {
      append_escaped_byte(snippet, static_cast<unsigned char>(text[i]));
    }
    if (end < text.size()) snippet += "...";
    const std::string near = at >= text.size() ? absl::StrCat("'", snippet, "' (end of input)")
                                               : absl::StrCat("'", snippet, "'");
    // Drop nlohmann's "[json.exception.parse_error.101] " tag; keep its
    // line/column and expectation.
    std::string_view detail = e.what();
    if (const auto tag_end = detail.find("] ");
        !detail.empty() && detail.front() == '[' && tag_end != std::string_view::npos) {
      detail.remove_prefix(tag_end + 2);
    }
    return absl::InvalidArgumentError(absl::StrCat(av(what), " is not valid JSON at byte ", e.byte,
                                                   " near ", near, ": ", av(detail), "; ",
                                                   av(fix)));
  } catch (const nlohmann::json::exception& e) {
    // E.g. a number literal too large for a double.
    return absl::InvalidArgumentError(
        absl::StrCat(av(what), " is not usable JSON: ", e.what(), "; ", av(fix)));
  }
}

std::string py_repr_string(std::string_view s) {
  // Python prefers single quotes and switches to double quotes only when
  // that avoids escaping.
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote) {
      out += '\\';
      out += c;
    } else {
      append_escaped_byte(out, static_cast<unsigned char>(c));
    }
  }
  out += quote;
  return out;
}

std::string py_repr(const TfJson& value) {
  std::string out;
  append_repr(out, value, 0);
  return out;
}

std::string py_repr_abbrev(const TfJson& value, std::size_t max_chars) {
  std::string repr = py_repr(value);
  if (repr.size() > max_chars) {
    repr.resize(max_chars);
    repr += "...";
  }
  return repr;
}

std::string py_str(const TfJson& value) {
  if (value.is_string()) return value.get<std::string>();
  return py_repr(value);
}

absl::StatusOr<int> py_int_from_string(std::string_view literal) {
  std::string_view s = literal;
  while (!s.empty() && is_py_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_py_space(s.back())) s.remove_suffix(1);
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return invalid_literal(literal);
  // Magnitude up to -INT_MIN, accumulated in 64 bits; stop early on overflow
  // but keep validating the syntax so that "99999999999x" is a syntax error.
  constexpr std::int64_t kLimit = -static_cast<std::int64_t>(std::numeric_limits<int>::min());
  std::int64_t magnitude = 0;
  bool overflow = false;
  bool previous_was_digit = false;
  for (char c : s) {
    if (c == '_') {
      // Underscores only between two digits.
      if (!previous_was_digit) return invalid_literal(literal);
      previous_was_digit = false;
      continue;
    }
    if (c < '0' || c > '9') return invalid_literal(literal);
    previous_was_digit = true;
    if (!overflow) {
      magnitude = magnitude * 10 + (c - '0');
      if (magnitude > kLimit) overflow = true;
    }
  }
  if (!previous_was_digit) return invalid_literal(literal);  // trailing '_'
  const std::int64_t value = negative ? -magnitude : magnitude;
  if (overflow || value > std::numeric_limits<int>::max()) return out_of_range(literal);
  return static_cast<int>(value);
}

absl::StatusOr<int> py_int(const TfJson& value) {
  switch (value.type()) {
    case TfJson::value_t::boolean: return value.get<bool>() ? 1 : 0;
    case TfJson::value_t::number_integer: {
      const std::int64_t v = value.get<std::int64_t>();
      if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
        return out_of_range(value.dump());
      }
      return static_cast<int>(v);
    }
    case TfJson::value_t::number_unsigned: {
      const std::uint64_t v = value.get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<int>::max())) {
        return out_of_range(value.dump());
      }
      return static_cast<int>(v);
    }
    case TfJson::value_t::number_float: {
      const double v = value.get<double>();
      if (std::isnan(v)) return absl::InvalidArgumentError("cannot convert float NaN to integer");
      if (std::isinf(v)) return absl::OutOfRangeError("cannot convert float infinity to integer");
      const double truncated = std::trunc(v);  // int(1.9) == 1, int(-1.9) == -1
      if (truncated < std::numeric_limits<int>::min() ||
          truncated > std::numeric_limits<int>::max()) {
        return out_of_range(value.dump());
      }
      return static_cast<int>(truncated);
    }
    case TfJson::value_t::string: return py_int_from_string(value.get_ref<const std::string&>());
    case TfJson::value_t::null:
    case TfJson::value_t::array:
    case TfJson::value_t::object:
    case TfJson::value_t::binary:
    case TfJson::value_t::discarded: break;
  }
  const char* type_name = value.is_null() ? "NoneType" : value.is_array() ? "list" : "dict";
  return absl::InvalidArgumentError(
      absl::StrCat("int() argument must be a string, a bytes-like object or a real number, not '",
                   type_name, "'"));
}

}  // namespace psflow::internal
