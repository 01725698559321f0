// Text from a client (names, ids, messages) as errors and log lines show
// it: bounded in length, one line, and valid UTF-8, whatever was sent.
#ifndef PSFLOW_BASE_SHOWN_TEXT_H_
#define PSFLOW_BASE_SHOWN_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>

namespace psflow::internal {

// Most bytes of a client-supplied name an error message echoes.
inline constexpr size_t kMaxShownNameBytes = 128;

// `text` with bytes that are not valid UTF-8 written as \xNN and, when
// `escape_controls`, control bytes as \n, \t or \xNN; cut after
// `max_bytes` of output, followed by "... (N bytes)" giving the length of
// the whole input.
[[nodiscard]] std::string shown_text(std::string_view text, size_t max_bytes,
                                     bool escape_controls = true);

// A name as an error message quotes it: shown_text with kMaxShownNameBytes.
[[nodiscard]] inline std::string shown_name(std::string_view name) {
  return shown_text(name, kMaxShownNameBytes);
}

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_SHOWN_TEXT_H_
