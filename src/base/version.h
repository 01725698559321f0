#ifndef PSFLOW_BASE_VERSION_H_
#define PSFLOW_BASE_VERSION_H_

#include <string_view>

namespace psflow::internal {

// The release this binary was built from, e.g. "0.1.0".
[[nodiscard]] std::string_view version();

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_VERSION_H_
