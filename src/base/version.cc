#include "base/version.h"

namespace psflow::internal {

std::string_view version() { return PSFLOW_VERSION; }

}  // namespace psflow::internal
