// `psflow datagen criteo`: writes generated Criteo-shaped click data
// (data/criteo_generator.h) as a TSV file that `psflow train --model dlrm
// --data-dir` and other tools read.
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "cli/commands.h"
#include "data/criteo_generator.h"

namespace psflow::internal {
namespace {

// Thread-safety: a value type.
struct DatagenFlags {
  int64_t rows = 100'000;
  uint64_t seed = 1;
  std::string out;
};

void add_flags(CLI::App& app, DatagenFlags& f) {
  app.add_option("--rows", f.rows, "Rows to write (default 100000)");
  app.add_option("--seed", f.seed,
                 "Generator seed: the same seed and rows give the same bytes (default 1)");
  app.add_option("--out", f.out, "The TSV file to write")->required();
}

int run(const DatagenFlags& f) {
  CriteoGeneratorOptions o;
  o.rows = f.rows;
  o.seed = f.seed;
  if (f.rows < 1) {
    std::fprintf(stderr, "psflow datagen criteo: --rows %lld must be at least 1\n",
                 static_cast<long long>(f.rows));
    return kExitUsage;
  }
  if (absl::Status valid = o.validate(); !valid.ok()) {
    std::fprintf(stderr, "psflow datagen criteo: %s\n", std::string(valid.message()).c_str());
    return kExitUsage;
  }
  if (absl::Status written = write_criteo_file(o, f.out); !written.ok()) {
    std::fprintf(stderr, "psflow datagen criteo: %s\n", std::string(written.message()).c_str());
    return kExitFailure;
  }
  std::printf("wrote %lld Criteo-shaped rows (seed %llu) to %s\n", static_cast<long long>(f.rows),
              static_cast<unsigned long long>(f.seed), f.out.c_str());
  return kExitOk;
}

}  // namespace

Command add_datagen_command(CLI::App& parent) {
  CLI::App* app = parent.add_subcommand("datagen", "Write generated datasets");
  app->require_subcommand(1);
  Command criteo = add_command(
      *app,
      CommandHelp{"criteo",
                  "Write generated Criteo-shaped click data (label, 13 integer and 26 hex "
                  "categorical features, tab-separated)",
                  "Power-law (Zipf) value frequencies per categorical column and a learnable "
                  "signal; `psflow train --model dlrm --data-dir FILE` trains on it."},
      &add_flags, &run);
  return Command{app, [criteo] { return criteo.app->parsed() ? criteo.run() : kExitUsage; }};
}

}  // namespace psflow::internal
