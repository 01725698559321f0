// A reader for the Criteo display-advertising TSV format (the Kaggle
// challenge's train.txt and the 1 TB click logs' day_N files): one example
// per line, 40 tab-separated fields
//
//   label \t I1 .. I13 \t C1 .. C26
//
// label 0 or 1; I1..I13 decimal integers (counts; some, such as I2, may be
// negative); C1..C26 categorical values as hexadecimal strings (32-bit in
// the real data, up to 64-bit accepted). Any feature field may be empty:
// the value is missing.
//
// What the reader makes of a line:
// * An integer feature that is missing reads as 0 (the DLRM reference's
//   convention); its value is kept as is, negative included.
// * A categorical value becomes an int64 key hashed with its feature's
//   index (criteo_key), so that equal hex strings in different columns are
//   different keys and one embedding table can hold every feature. A
//   missing value is a key of its own per feature (criteo_missing_key).
// * A trailing "\r" (CRLF files) is dropped. A line of 41 fields whose last
//   one is empty (a trailing tab) reads as its first 40. Empty lines are
//   skipped. The last line needs no "\n".
// * Anything else is a bad line: a label other than 0 or 1, fewer or more
//   fields, an integer that is not one or does not fit int64, a
//   categorical value that is not 1 to 16 hex digits. CriteoBadLines says
//   what happens then.
#ifndef PSFLOW_DATA_CRITEO_READER_H_
#define PSFLOW_DATA_CRITEO_READER_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace psflow::internal {

inline constexpr int kCriteoDenseFeatures = 13;
inline constexpr int kCriteoCategoricalFeatures = 26;
inline constexpr int kCriteoFields = 1 + kCriteoDenseFeatures + kCriteoCategoricalFeatures;

// What a bad line does.
enum class CriteoBadLines {
  // The read fails with INVALID_ARGUMENT "<file>:<line>: field <n> (<name>):
  // <what is wrong>" (the default: a file with bad lines is usually not
  // the file meant).
  kError,
  // The line is skipped and counted (CriteoData::skipped_lines, with the
  // first one's message kept), for real logs known to hold a few.
  kSkip,
};

// Thread-safety: a value type.
struct CriteoReadOptions {
  CriteoBadLines bad_lines = CriteoBadLines::kError;
};

// Examples in row-major arrays, appended to by every parse.
// Thread-safety: a value type.
struct CriteoData {
  std::vector<float> labels;   // [rows], 0 or 1
  std::vector<int64_t> dense;  // [rows, 13], missing = 0
  std::vector<int64_t> keys;   // [rows, 26], criteo_key / criteo_missing_key
  int64_t skipped_lines = 0;   // under CriteoBadLines::kSkip
  std::string first_skipped;   // the first skipped line's error

  [[nodiscard]] int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

// The key of categorical feature `feature` (0-based: 0 is C1) with the
// value `value`: a splitmix64 hash of both, fixed across platforms and
// versions.
[[nodiscard]] int64_t criteo_key(int feature, uint64_t value);
// The key of a missing value of `feature`.
[[nodiscard]] int64_t criteo_missing_key(int feature);

// Parses the lines of `text` into `out`. `source` names it in errors (a
// file name) and `first_line` is the number of its first line (1 for a
// whole file). On an error under kError, `out` keeps the lines before the
// bad one.
// Thread-safety: a free function with no shared state.
[[nodiscard]] absl::Status parse_criteo_text(std::string_view text, std::string_view source,
                                             int64_t first_line, const CriteoReadOptions& options,
                                             CriteoData& out);

// Reads a Criteo TSV file (plain or gzip) into `out`. NOT_FOUND names a
// missing file; INVALID_ARGUMENT a bad line (under kError).
[[nodiscard]] absl::Status read_criteo_file(const std::string& path,
                                            const CriteoReadOptions& options, CriteoData& out);

// The files a --data-dir value names: the file itself, or a directory's
// regular files ending in .tsv, .txt or .gz (sorted by name). NOT_FOUND
// when there is no such path, INVALID_ARGUMENT when a directory holds no
// such file.
[[nodiscard]] absl::StatusOr<std::vector<std::string>> criteo_files(const std::string& path);

}  // namespace psflow::internal

#endif  // PSFLOW_DATA_CRITEO_READER_H_
