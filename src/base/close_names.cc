#include "base/close_names.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "base/strings.h"

namespace psflow::internal {

size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the dynamic-programming table at a time.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = absl::ascii_tolower(static_cast<unsigned char>(a[i - 1])) ==
                        absl::ascii_tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({above + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::vector<std::string> close_names(std::string_view name,
                                     const std::vector<std::string>& candidates,
                                     size_t max_results) {
  // Longer is no typo, and its edit distances would cost time quadratic in
  // a client's input.
  constexpr size_t kMaxTypoBytes = 256;
  if (name.size() > kMaxTypoBytes) return {};
  const size_t limit = std::max<size_t>(2, name.size() / 3);
  const std::string lower_name = absl::AsciiStrToLower(av(name));
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(name, candidate);
    const std::string lower_candidate = absl::AsciiStrToLower(candidate);
    const bool contains = !name.empty() && (absl::StrContains(lower_candidate, lower_name) ||
                                            absl::StrContains(lower_name, lower_candidate));
    if (distance <= limit || contains) scored.emplace_back(distance, candidate);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max_results; ++i) {
    out.push_back(std::move(scored[i].second));
  }
  return out;
}

}  // namespace psflow::internal
