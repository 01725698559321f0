// safetensors files as a checkpoint restore reads them
// (src/checkpoint/safetensors.cc): header length, JSON header, dtypes,
// shapes and offsets, all from an untrusted file. What decodes must encode
// to a file that decodes to the same tensors.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/safetensors.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  namespace ckpt = internal::checkpoint;
  absl::StatusOr<ckpt::SafetensorsContents> contents =
      ckpt::decode_safetensors(std::string(as_bytes(data, size)), "fuzz.safetensors");
  if (!contents.ok()) return 0;
  std::vector<ckpt::SafetensorsEntry> entries;
  for (const auto& [name, tensor] : contents->tensors) entries.push_back({name, tensor});
  absl::StatusOr<std::string> encoded = ckpt::encode_safetensors(entries, contents->metadata);
  check(encoded.ok());
  absl::StatusOr<ckpt::SafetensorsContents> again =
      ckpt::decode_safetensors(*encoded, "again.safetensors");
  check(again.ok() && again->tensors.size() == contents->tensors.size() &&
        again->metadata == contents->metadata);
  return 0;
}
