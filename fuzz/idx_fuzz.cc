// IDX files (MNIST / Fashion-MNIST; src/data/idx_reader.cc): magic, dtype,
// rank, dimensions and payload from an untrusted file, plain or gzip.
#include <cstddef>
#include <cstdint>

#include "data/idx_reader.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  MemoryFile file(as_bytes(data, size));
  absl::StatusOr<Tensor> tensor = internal::read_idx_file(file.path());
  if (tensor.ok()) check(tensor->num_elements() >= 0);
  return 0;
}
