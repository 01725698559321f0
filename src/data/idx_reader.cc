#include "data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// Reads exactly `n` bytes; false on a short read.
bool read_exact(gzFile f, void* out, size_t n) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n, 1u << 30));
    const int got = gzread(f, p, chunk);
    if (got <= 0) return false;
    p += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// The IDX element types: the type byte of the magic number, the bytes an
// element takes in the file, and the dtype it is read into.
// Thread-safety: a value type.
struct IdxElementType {
  uint8_t code;
  size_t wire_size;
  DType dtype;
};
constexpr IdxElementType kIdxElementTypes[] = {
    {0x08, 1, DType::kUInt8}, {0x09, 1, DType::kInt32},   {0x0B, 2, DType::kInt32},
    {0x0C, 4, DType::kInt32}, {0x0D, 4, DType::kFloat32}, {0x0E, 8, DType::kFloat64},
};

uint32_t big_endian_u32(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

template <typename Wire, typename Out>
void widen_big_endian(const std::vector<uint8_t>& raw, Out* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint8_t bytes[sizeof(Wire)];
    for (size_t b = 0; b < sizeof(Wire); ++b) {
      bytes[b] = raw[static_cast<size_t>(i) * sizeof(Wire) + sizeof(Wire) - 1 - b];
    }
    Wire v;
    std::memcpy(&v, bytes, sizeof(Wire));
    out[i] = static_cast<Out>(v);
  }
}

}  // namespace

absl::StatusOr<Tensor> read_idx_file(const std::string& path) {
  if (!std::filesystem::exists(path)) {
    return absl::NotFoundError(absl::StrCat("IDX file ", path, " does not exist"));
  }
  // gzopen reads uncompressed files transparently too.
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open IDX file ", path));
  uint8_t magic[4];
  if (!read_exact(f.get(), magic, 4) || magic[0] != 0 || magic[1] != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        path,
        " is not an IDX file: it must start with two zero bytes, a type byte and a rank byte"));
  }
  const uint8_t type = magic[2];
  const int rank = magic[3];
  if (rank < 1 || rank > 8) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": IDX rank ", rank, " is not in [1, 8]"));
  }
  Shape shape;
  int64_t count = 1;
  // The product of the nonzero dimensions is what is bounded: a zero
  // dimension makes `count` 0 but must not let the others grow past what a
  // Tensor's shape may hold.
  int64_t nonzero = 1;
  for (int i = 0; i < rank; ++i) {
    uint8_t d[4];
    if (!read_exact(f.get(), d, 4)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": truncated IDX header"));
    }
    const int64_t dim = big_endian_u32(d);
    if (dim > (int64_t{1} << 32) || nonzero > (int64_t{1} << 34) / std::max<int64_t>(dim, 1)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": IDX shape is implausibly large"));
    }
    shape.push_back(dim);
    count *= dim;
    nonzero *= std::max<int64_t>(dim, 1);
  }
  const IdxElementType* element = nullptr;
  for (const IdxElementType& known : kIdxElementTypes) {
    if (known.code == type) element = &known;
  }
  if (element == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unknown IDX element type 0x", absl::Hex(type)));
  }
  const size_t wire_size = element->wire_size;
  const DType dtype = element->dtype;
  // The payload is read before the tensor is allocated, growing with what
  // the file holds: a header alone cannot make the reader allocate the
  // gigabytes it claims.
  const size_t payload = static_cast<size_t>(count) * wire_size;
  std::vector<uint8_t> raw;
  while (raw.size() < payload) {
    const size_t at = raw.size();
    raw.resize(at + std::min<size_t>(payload - at, size_t{1} << 24));
    if (!read_exact(f.get(), raw.data() + at, raw.size() - at)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": truncated: the header promises ", count, " elements"));
    }
  }
  Tensor out(dtype, shape);
  switch (type) {
    case 0x08:
      if (!raw.empty()) std::memcpy(out.mutable_raw_data(), raw.data(), raw.size());
      break;
    case 0x09: widen_big_endian<int8_t>(raw, out.mutable_flat<int32_t>().data(), count); break;
    case 0x0B: widen_big_endian<int16_t>(raw, out.mutable_flat<int32_t>().data(), count); break;
    case 0x0C: widen_big_endian<int32_t>(raw, out.mutable_flat<int32_t>().data(), count); break;
    case 0x0D: widen_big_endian<float>(raw, out.mutable_flat<float>().data(), count); break;
    default: widen_big_endian<double>(raw, out.mutable_flat<double>().data(), count); break;
  }
  uint8_t extra;
  if (gzread(f.get(), &extra, 1) > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": trailing bytes after the ", count, " elements the header declares"));
  }
  return out;
}

absl::StatusOr<FashionMnist> load_fashion_mnist(const std::string& directory) {
  const std::string files[4] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"};
  for (const std::string& name : files) {
    const std::string path = absl::StrCat(directory, "/", name);
    if (!std::filesystem::exists(path)) {
      return absl::NotFoundError(absl::StrCat(
          "Fashion-MNIST file ", path,
          " is missing; install Debian's dataset-fashion-mnist "
          "package (apt-get install dataset-fashion-mnist, or run scripts/install-deps.sh), "
          "or point to a directory holding ",
          files[0], ", ", files[1], ", ", files[2], " and ", files[3]));
    }
  }
  FashionMnist d;
  PSFLOW_ASSIGN_OR_RETURN(d.train_images, read_idx_file(absl::StrCat(directory, "/", files[0])));
  PSFLOW_ASSIGN_OR_RETURN(d.train_labels, read_idx_file(absl::StrCat(directory, "/", files[1])));
  PSFLOW_ASSIGN_OR_RETURN(d.test_images, read_idx_file(absl::StrCat(directory, "/", files[2])));
  PSFLOW_ASSIGN_OR_RETURN(d.test_labels, read_idx_file(absl::StrCat(directory, "/", files[3])));
  auto check = [](const Tensor& images, const Tensor& labels, const char* split) -> absl::Status {
    if (images.rank() != 3 || labels.rank() != 1 || images.dim(0) != labels.dim(0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Fashion-MNIST ", split, " images ", shape_string(images.shape()), " and labels ",
          shape_string(labels.shape()), " do not match; the files may be corrupt"));
    }
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(check(d.train_images, d.train_labels, "train"));
  PSFLOW_RETURN_IF_ERROR(check(d.test_images, d.test_labels, "test"));
  return d;
}

}  // namespace psflow::internal
