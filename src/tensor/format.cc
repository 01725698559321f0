#include "tensor/format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <system_error>

#include "base/logging.h"

namespace psflow::internal {
namespace {

template <typename T>
void append_chars(std::string* out, T v) {
  char buf[64];
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  PSFLOW_CHECK(r.ec == std::errc());
  out->append(buf, r.ptr);
}

}  // namespace

void append_python_string(std::string* out, std::string_view s) {
  // Python prefers single quotes unless the text holds ' and no ".
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  out->push_back(quote);
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == quote || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back(quote);
}

void append_python_float(std::string* out, double v) {
  if (std::isnan(v)) {
    out->append("nan");
    return;
  }
  if (std::isinf(v)) {
    out->append(v < 0 ? "-inf" : "inf");
    return;
  }
  // Shortest round-trip digits in scientific form, "d.ddde+XX", then laid
  // out the way Python's float.__repr__ does: positional for exponents in
  // [-4, 16), scientific with a two-digit exponent otherwise.
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  PSFLOW_CHECK(r.ec == std::errc());
  const std::string_view sci(buf, static_cast<size_t>(r.ptr - buf));
  const size_t e_pos = sci.find('e');
  std::string_view mantissa = sci.substr(0, e_pos);
  const int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  if (!mantissa.empty() && mantissa.front() == '-') {
    out->push_back('-');
    mantissa.remove_prefix(1);
  }
  std::string digits;
  for (const char c : mantissa) {
    if (c != '.') digits.push_back(c);
  }
  if (exponent < -4 || exponent >= 16) {
    out->push_back(digits[0]);
    if (digits.size() > 1) {
      out->push_back('.');
      out->append(digits, 1);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    out->append(exp_buf);
  } else if (exponent < 0) {
    out->append("0.");
    out->append(static_cast<size_t>(-exponent - 1), '0');
    out->append(digits);
  } else {
    const size_t int_digits = static_cast<size_t>(exponent) + 1;
    if (digits.size() <= int_digits) {
      out->append(digits);
      out->append(int_digits - digits.size(), '0');
      out->append(".0");
    } else {
      out->append(digits, 0, int_digits);
      out->push_back('.');
      out->append(digits, int_digits);
    }
  }
}

namespace {

// nan and the infinities as Python prints them; the shortest round-trip
// digits otherwise.
template <typename T>
void append_shortest_of(std::string* out, T v) {
  if (std::isnan(v)) {
    out->append("nan");
  } else if (std::isinf(v)) {
    out->append(v < 0 ? "-inf" : "inf");
  } else {
    append_chars(out, v);
  }
}

}  // namespace

void append_shortest(std::string* out, double v) { append_shortest_of(out, v); }

void append_shortest(std::string* out, float v) { append_shortest_of(out, v); }

}  // namespace psflow::internal
