// Readers for numeric text data: CSV tables and LIBSVM sparse rows. Both
// load a whole file (plain or gzip) into tensors, ready for
// Dataset::from_tensor_slices.
#ifndef PSFLOW_DATA_TEXT_READERS_H_
#define PSFLOW_DATA_TEXT_READERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Thread-safety: a plain value.
struct CsvOptions {
  // Whether the first non-empty line names the columns.
  bool has_header = true;
  char delimiter = ',';
  // The label column, counted Python-style (-1 is the last column);
  // nullopt reads every column as a feature.
  std::optional<int> label_column = -1;
  // The label column by header name; when set it overrides label_column and
  // needs has_header.
  std::string label_name;
};

// Thread-safety: a plain value.
struct CsvData {
  Tensor features;  // float32 [N, F]: every column but the label, in order
  Tensor labels;    // float32 [N]; invalid (default) without a label column
  // Names of the feature columns: the header's, or "column_<index>".
  std::vector<std::string> feature_names;
};

// Reads a CSV file of numbers. Blank lines are skipped; cells may be
// double-quoted (no line breaks inside quotes); every row must have the
// header's (or the first row's) column count. NOT_FOUND names a missing
// file; INVALID_ARGUMENT names the file, line and column of a bad cell,
// e.g. "iris.csv:7: column 2 ('petal_length'): cannot parse 'x' as a number".
// Thread-safety: a free function with no shared state.
[[nodiscard]] absl::StatusOr<CsvData> read_csv(const std::string& path,
                                               const CsvOptions& options = {});

// Thread-safety: a plain value.
struct LibsvmOptions {
  // Index base used in the file: LIBSVM's own tools write 1-based indices.
  // Output indices are always 0-based.
  bool zero_based = false;
};

// Sparse rows in CSR form: row r's features are
// indices[row_splits[r] .. row_splits[r+1]) with the matching values.
// Thread-safety: a plain value.
struct LibsvmData {
  Tensor labels;             // float32 [N]
  Tensor row_splits;         // int64 [N + 1], row_splits[0] == 0
  Tensor indices;            // int64 [nnz], 0-based, strictly ascending in a row
  Tensor values;             // float32 [nnz]
  int64_t num_features = 0;  // largest index + 1
};

// Reads "label index:value index:value ..." lines. '#' starts a comment;
// blank lines are skipped. Indices must be strictly ascending within a row
// (as LIBSVM requires), which also rules out duplicates. INVALID_ARGUMENT
// names file:line and the bad token; NOT_FOUND a missing file.
// Thread-safety: a free function with no shared state.
[[nodiscard]] absl::StatusOr<LibsvmData> read_libsvm(const std::string& path,
                                                     const LibsvmOptions& options = {});

// Densifies to float32 [N, num_features] (zeros where a row has no entry);
// num_features < 0 means data.num_features. INVALID_ARGUMENT when an index
// does not fit or the dense tensor would be too large to count.
[[nodiscard]] absl::StatusOr<Tensor> libsvm_to_dense(const LibsvmData& data,
                                                     int64_t num_features = -1);

}  // namespace psflow::internal

#endif  // PSFLOW_DATA_TEXT_READERS_H_
