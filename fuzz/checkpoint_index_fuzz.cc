// A checkpoint's index.json (src/checkpoint/index.cc), parsed and checked
// as restore does from an untrusted directory. An index that parses must
// print as JSON that parses to the same index.
#include <cstddef>
#include <cstdint>
#include <string>

#include "checkpoint/index.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  namespace ckpt = internal::checkpoint;
  absl::StatusOr<ckpt::CheckpointIndex> index =
      ckpt::parse_index(as_bytes(data, size), "index.json");
  if (!index.ok()) return 0;
  const std::string json = ckpt::index_to_json(*index);
  absl::StatusOr<ckpt::CheckpointIndex> again = ckpt::parse_index(json, "again.json");
  check(again.ok() && ckpt::index_to_json(*again) == json);
  return 0;
}
