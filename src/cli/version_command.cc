// `psflow version`.
#include <cstdio>

#include "base/version.h"
#include "cli/commands.h"

namespace psflow::internal {

Command add_version_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("version", "Print the psflow version");
  return Command{app, [] {
                   const std::string_view v = version();
                   std::printf("psflow %.*s\n", static_cast<int>(v.size()), v.data());
                   return kExitOk;
                 }};
}

}  // namespace psflow::internal
