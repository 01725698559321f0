#include "base/logging.h"

#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/time/clock.h"
#include "base/log_rate_limiter.h"
#include "base/shown_text.h"
#include "base/strings.h"

namespace psflow::internal {
namespace {

// PSFLOW_LOG_LEVEL's value, case-insensitive; kInfo when unset. A value
// that is no level is said once on stderr, and kInfo kept.
LogLevel initial_level() {
  const char* env = std::getenv("PSFLOW_LOG_LEVEL");
  if (env == nullptr || *env == '\0') return LogLevel::kInfo;
  const std::string v = absl::AsciiStrToLower(env);
  if (v == "debug" || v == "0") return LogLevel::kDebug;
  if (v == "info" || v == "1") return LogLevel::kInfo;
  if (v == "warning" || v == "warn" || v == "2") return LogLevel::kWarning;
  if (v == "error" || v == "3") return LogLevel::kError;
  log_message(LogLevel::kWarning, __FILE__, __LINE__,
              absl::StrCat("PSFLOW_LOG_LEVEL='", env, "' is not a log level; use ", kLogLevelValues,
                           ". Logging at info."));
  return LogLevel::kInfo;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(initial_level())};
  return level;
}

std::string_view basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Longest line written; the rest of a message is cut (its length said).
constexpr size_t kMaxLogLineBytes = 16 << 10;

// Lines per call site and second: enough for any honest burst.
LogRateLimiter& rate_limiter() {
  static auto* limiter = new LogRateLimiter(/*max_lines=*/100, absl::Seconds(1));
  return *limiter;
}

}  // namespace

void set_min_log_level(LogLevel level) {
  level_storage().store(static_cast<int>(level), std::memory_order_relaxed);
}

LogLevel min_log_level() {
  return static_cast<LogLevel>(level_storage().load(std::memory_order_relaxed));
}

namespace {

// One line, `dropped` noted at its end.
void write_line(LogLevel level, std::string_view file, int line, std::string_view message,
                int64_t dropped) {
  static constexpr char kLetters[] = {'D', 'I', 'W', 'E'};
  timeval tv{};
  gettimeofday(&tv, nullptr);
  tm parts{};
  localtime_r(&tv.tv_sec, &parts);
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%02d:%02d:%02d.%03d", parts.tm_hour, parts.tm_min,
                parts.tm_sec, static_cast<int>(tv.tv_usec / 1000));
  // One write() per line so concurrent lines never interleave.
  std::string out = absl::StrCat(absl::string_view(&kLetters[static_cast<int>(level)], 1), " ",
                                 stamp, " ", av(basename(file)), ":", line, "] ",
                                 // Messages may carry a client's bytes: valid UTF-8 and bounded.
                                 shown_text(message, kMaxLogLineBytes, /*escape_controls=*/false));
  if (dropped > 0) absl::StrAppend(&out, " (", dropped, " earlier lines from here dropped)");
  out += "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, out.data(), out.size());
}

}  // namespace

void log_message(LogLevel level, std::string_view file, int line, std::string_view message) {
  const LogRateLimiter::Decision admitted = rate_limiter().admit(file, line, absl::Now());
  if (admitted.allowed) write_line(level, file, line, message, admitted.dropped);
}

void check_failed(std::string_view file, int line, std::string_view condition,
                  std::string_view message) {
  // Never rate-limited: the last line before the abort.
  write_line(
      LogLevel::kError, file, line,
      absl::StrCat("Check failed: ", av(condition), message.empty() ? "" : ": ", av(message)), 0);
  std::abort();
}

}  // namespace psflow::internal
