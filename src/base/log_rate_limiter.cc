#include "base/log_rate_limiter.h"

namespace psflow::internal {

LogRateLimiter::Decision LogRateLimiter::admit(std::string_view file, int line, absl::Time now) {
  absl::MutexLock lock(&mu_);
  Site& site = sites_[{std::string(file), line}];
  if (now - site.window_start >= window_) {
    site.window_start = now;
    site.lines = 0;
  }
  if (site.lines >= max_lines_) {
    ++site.dropped;
    return {};
  }
  ++site.lines;
  Decision decision{.allowed = true, .dropped = site.dropped};
  site.dropped = 0;
  return decision;
}

}  // namespace psflow::internal
