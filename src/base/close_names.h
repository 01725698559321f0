// "Did you mean" suggestions for names that were not found.
#ifndef PSFLOW_BASE_CLOSE_NAMES_H_
#define PSFLOW_BASE_CLOSE_NAMES_H_

#include <string>
#include <string_view>
#include <vector>

namespace psflow::internal {

// Edit distance (insertions, deletions, substitutions), ignoring ASCII case.
[[nodiscard]] size_t edit_distance(std::string_view a, std::string_view b);

// Up to `max_results` of `candidates` that look like a misspelling of
// `name`, closest first: within an edit distance of about a third of the
// name's length, or containing it / contained in it.
[[nodiscard]] std::vector<std::string> close_names(std::string_view name,
                                                   const std::vector<std::string>& candidates,
                                                   size_t max_results = 5);

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_CLOSE_NAMES_H_
