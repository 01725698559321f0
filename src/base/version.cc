#include "base/version.h"

namespace psflow {

std::string_view version() { return PSFLOW_VERSION; }

}  // namespace psflow
