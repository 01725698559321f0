// Readers for the IDX files of the MNIST family (Debian's
// dataset-fashion-mnist ships them gzip-compressed).
#ifndef PSFLOW_DATA_IDX_READER_H_
#define PSFLOW_DATA_IDX_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Reads an IDX file (plain or .gz) into a tensor of its stored shape and
// element type (uint8, int8 -> int32, int16 -> int32, int32, float32,
// float64). NOT_FOUND names the path; INVALID_ARGUMENT names the file and
// what is wrong (bad magic, truncated data, trailing bytes).
[[nodiscard]] absl::StatusOr<Tensor> read_idx_file(const std::string& path);

// Fashion-MNIST as 4 tensors: images uint8 [N, 28, 28], labels uint8 [N].
struct FashionMnist {
  Tensor train_images;
  Tensor train_labels;
  Tensor test_images;
  Tensor test_labels;
};

// The directory Debian's dataset-fashion-mnist package installs to.
inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

// The four files of Fashion-MNIST, as load_fashion_mnist reads them.
inline constexpr const char* kFashionMnistFiles[4] = {
    "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz"};

// Loads the four files from `directory`. When they are missing, NOT_FOUND
// says to install the dataset-fashion-mnist package (or pass a directory
// holding train-images-idx3-ubyte.gz etc.). Checks that image and label
// counts agree.
[[nodiscard]] absl::StatusOr<FashionMnist> load_fashion_mnist(
    const std::string& directory = kFashionMnistDir);

}  // namespace psflow::internal

#endif  // PSFLOW_DATA_IDX_READER_H_
