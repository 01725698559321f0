// CSV and LIBSVM files (src/data/text_readers.cc), plain or gzip. The
// first byte picks the reader and its options: bit 0 CSV or LIBSVM; for
// CSV bit 1 has_header, bit 2 ';' as the delimiter, bits 3-4 the label
// column (none, -1, 0, by the name "label"); for LIBSVM bit 1 zero_based,
// and what reads is densified (bounded: at most 2^16 features).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "data/text_readers.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace psflow;
  using namespace psflow::fuzz;
  std::string_view bytes = as_bytes(data, size);
  const uint8_t selector = take_selector(&bytes);
  MemoryFile file(bytes);
  if ((selector & 1) == 0) {
    internal::CsvOptions options;
    options.has_header = (selector & 2) != 0;
    options.delimiter = (selector & 4) != 0 ? ';' : ',';
    switch ((selector >> 3) & 3) {
      case 0: options.label_column = std::nullopt; break;
      case 1: options.label_column = -1; break;
      case 2: options.label_column = 0; break;
      default: options.label_name = "label"; break;
    }
    absl::StatusOr<internal::CsvData> csv = internal::read_csv(file.path(), options);
    if (csv.ok()) check(csv->features.rank() == 2);
    return 0;
  }
  internal::LibsvmOptions options;
  options.zero_based = (selector & 2) != 0;
  absl::StatusOr<internal::LibsvmData> libsvm = internal::read_libsvm(file.path(), options);
  if (libsvm.ok() && libsvm->num_features <= (int64_t{1} << 16) &&
      libsvm->labels.num_elements() <= 4096) {
    (void)internal::libsvm_to_dense(*libsvm);
  }
  return 0;
}
