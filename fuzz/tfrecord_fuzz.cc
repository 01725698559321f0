// TFRecord files (src/train/event_writer.cc, parse_tfrecords: the reader
// of the event files psflow writes): lengths and masked CRC32Cs from an
// untrusted file. Records that parse must frame to the same bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.h"
#include "train/event_writer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  const std::string_view bytes = as_bytes(data, size);
  absl::StatusOr<std::vector<std::string>> records = internal::parse_tfrecords(bytes);
  if (!records.ok()) return 0;
  std::string framed;
  for (const std::string& record : *records) internal::append_tfrecord(record, &framed);
  check(framed == bytes);
  return 0;
}
