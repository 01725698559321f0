// How many lines one logging call site may write: a client that makes a
// task log a warning per request (a bad name, a non-UTF-8 string) must not
// be able to fill its disk or drown the lines that matter.
#ifndef PSFLOW_BASE_LOG_RATE_LIMITER_H_
#define PSFLOW_BASE_LOG_RATE_LIMITER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace psflow::internal {

// Allows at most `max_lines` lines per call site (file, line) in each
// `window`; the rest are dropped and counted, and the next line allowed
// says how many were. Call sites are the program's, so the table is
// bounded by the code, not by the input.
// Thread-safety: thread-safe.
class LogRateLimiter {
 public:
  LogRateLimiter(int64_t max_lines, absl::Duration window)
      : max_lines_(max_lines), window_(window) {}

  // Whether a line from `file`:`line` may be written at `now`, and if so
  // how many lines of that site were dropped since the last one written.
  struct Decision {
    bool allowed = false;
    int64_t dropped = 0;
  };
  [[nodiscard]] Decision admit(std::string_view file, int line, absl::Time now)
      ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Site {
    absl::Time window_start = absl::InfinitePast();
    int64_t lines = 0;
    int64_t dropped = 0;
  };

  const int64_t max_lines_;
  const absl::Duration window_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::pair<std::string, int>, Site> sites_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_LOG_RATE_LIMITER_H_
