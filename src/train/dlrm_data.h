// The data of the `dlrm` model (internal): Criteo TSV files or generated
// Criteo-shaped rows (data/criteo_reader.h, data/criteo_generator.h),
// split into training and held-out test examples, as tensors.
#ifndef PSFLOW_TRAIN_DLRM_DATA_H_
#define PSFLOW_TRAIN_DLRM_DATA_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "data/criteo_reader.h"
#include "psflow/structure.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Examples as tensors, one row each. Thread-safety: a value type.
struct DlrmExamples {
  Tensor dense;   // float32 [N, 13]: log1p(max(x, 0)) of the integer features
  Tensor keys;    // int64 [N, 26]: the categorical features' table keys
  Tensor labels;  // float32 [N]

  [[nodiscard]] int64_t size() const { return labels.valid() ? labels.dim(0) : 0; }
  // Rows [begin, end), sharing the buffers.
  [[nodiscard]] DlrmExamples slice(int64_t begin, int64_t end) const;
  // (dense, keys, labels), for Dataset::from_tensor_slices.
  [[nodiscard]] Structure to_structure() const;
};

// Thread-safety: a value type.
struct DlrmData {
  DlrmExamples train;
  DlrmExamples test;
  int64_t skipped_lines = 0;  // bad lines skipped (CriteoBadLines::kSkip)
  std::string description;    // one line for the log
};

// Where the data comes from: `data_dir` is a Criteo TSV file, a directory
// of them (criteo_files) or "generated:<rows>[:<seed>]". The last
// test_fraction of the rows (in file order; the real data is in time
// order, so this is the later traffic) is the held-out test set.
// Thread-safety: a value type.
struct DlrmDataSource {
  std::string data_dir;
  double test_fraction = 0.1;
  CriteoBadLines bad_lines = CriteoBadLines::kError;

  [[nodiscard]] Structure to_structure() const;
  // Validates: it crossed the network.
  [[nodiscard]] static absl::StatusOr<DlrmDataSource> from_structure(const Structure& s);
};

// Loads (or generates) the data; one source is cached per process, so the
// coordinator and a worker's datasets read it once. Errors name the file,
// line and field of a bad line, or the malformed data_dir.
[[nodiscard]] absl::StatusOr<std::shared_ptr<const DlrmData>> load_dlrm_data(
    const DlrmDataSource& source);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_DLRM_DATA_H_
