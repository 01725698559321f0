#include "base/shown_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace psflow::internal {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 when none
// does (a stray continuation byte, an overlong form, a surrogate, a
// truncated sequence, or beyond U+10FFFF).
size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xbf;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3;
    if (b0 == 0xe0) lo = 0xa0;
    if (b0 == 0xed) hi = 0x9f;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4;
    if (b0 == 0xf0) lo = 0x90;
    if (b0 == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

}  // namespace

std::string shown_text(std::string_view text, size_t max_bytes, bool escape_controls) {
  std::string out;
  out.reserve(std::min(text.size(), max_bytes) + 32);
  size_t i = 0;
  while (i < text.size() && out.size() < max_bytes) {
    const auto b = static_cast<unsigned char>(text[i]);
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      absl::StrAppend(&out, "\\x", absl::Hex(b, absl::kZeroPad2));
      ++i;
    } else if (n == 1 && escape_controls && (b < 0x20 || b == 0x7f)) {
      if (b == '\n') {
        out += "\\n";
      } else if (b == '\t') {
        out += "\\t";
      } else {
        absl::StrAppend(&out, "\\x", absl::Hex(b, absl::kZeroPad2));
      }
      ++i;
    } else {
      out.append(text.data() + i, n);
      i += n;
    }
  }
  if (i < text.size()) absl::StrAppend(&out, "... (", text.size(), " bytes)");
  return out;
}

}  // namespace psflow::internal
