// Criteo TSV text (src/data/criteo_reader.cc). The first byte picks the
// bad-line policy (bit 0: skip) and whether the bytes are parsed in memory
// or read back from a file (bit 1, through the chunked file reader). What
// parses must be consistent: 13 integer and 26 keys per row, labels 0 or 1,
// and the skip policy never fails.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/criteo_reader.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  std::string_view bytes = as_bytes(data, size);
  const uint8_t selector = take_selector(&bytes);
  internal::CriteoReadOptions options;
  options.bad_lines =
      (selector & 1) != 0 ? internal::CriteoBadLines::kSkip : internal::CriteoBadLines::kError;
  internal::CriteoData out;
  absl::Status status;
  if ((selector & 2) != 0) {
    MemoryFile file(bytes);
    status = internal::read_criteo_file(file.path(), options, out);
  } else {
    status = internal::parse_criteo_text(bytes, "fuzz.tsv", 1, options, out);
  }
  if (options.bad_lines == internal::CriteoBadLines::kSkip) check(status.ok());
  const auto rows = static_cast<size_t>(out.rows());
  check(out.dense.size() == rows * internal::kCriteoDenseFeatures);
  check(out.keys.size() == rows * internal::kCriteoCategoricalFeatures);
  for (float label : out.labels) check(label == 0.0F || label == 1.0F);
  check((out.skipped_lines == 0) == out.first_skipped.empty());
  return 0;
}
