// Bridges std::string_view to absl. Debian's abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW == 0), which does not
// accept std::string_view implicitly: wrap such arguments with av().
#ifndef PSFLOW_BASE_STRINGS_H_
#define PSFLOW_BASE_STRINGS_H_

#include <string_view>

#include "absl/strings/string_view.h"

namespace psflow::internal {

inline absl::string_view av(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view sv(absl::string_view s) { return {s.data(), s.size()}; }

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_STRINGS_H_
