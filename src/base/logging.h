// Minimal logging and invariant checks (the Debian abseil predates absl/log).
#ifndef PSFLOW_BASE_LOGGING_H_
#define PSFLOW_BASE_LOGGING_H_

#include <string_view>

#include "absl/strings/str_cat.h"

namespace psflow::internal {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// What PSFLOW_LOG_LEVEL accepts, for help texts and its warning.
inline constexpr char kLogLevelValues[] =
    "debug, info (the default), warning or error (or 0 to 3; any case)";

// Writes one line to stderr: "I 05:33:43.123 file.cc:42] message". Lines
// below the minimum level (default kInfo; PSFLOW_LOG_LEVEL overrides it at
// start-up, kLogLevelValues; another value is warned about and ignored) are
// dropped. At kInfo a task says what it does (serving, connections,
// restarts, errors) but never a line per call; kDebug may. Since messages
// may carry a client's bytes, a line is cut at 16 KiB, bytes that are not
// UTF-8 are written as \xNN, and each place (file:line) writes at most 100
// lines a second: the rest are dropped and counted on its next line.
// Thread-safe: whole lines never interleave.
void log_message(LogLevel level, std::string_view file, int line, std::string_view message);
void set_min_log_level(LogLevel level);
[[nodiscard]] LogLevel min_log_level();

// Prints the failed condition and message, then aborts.
[[noreturn]] void check_failed(std::string_view file, int line, std::string_view condition,
                               std::string_view message);

}  // namespace psflow::internal

#define PSFLOW_LOG(level, ...)                                                                    \
  do {                                                                                            \
    if (::psflow::internal::LogLevel::k##level >= ::psflow::internal::min_log_level())            \
      ::psflow::internal::log_message(::psflow::internal::LogLevel::k##level, __FILE__, __LINE__, \
                                      ::absl::StrCat(__VA_ARGS__));                               \
  } while (0)

// Invariant check for programming errors (never for input validation).
#define PSFLOW_CHECK(cond, ...)                                                        \
  do {                                                                                 \
    if (!(cond))                                                                       \
      ::psflow::internal::check_failed(__FILE__, __LINE__, #cond,                      \
                                       ::absl::StrCat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

#endif  // PSFLOW_BASE_LOGGING_H_
