// The safetensors format (https://github.com/huggingface/safetensors), which
// Python tools read without TensorFlow or psflow:
//
//   8 bytes   N, the header length, little-endian uint64
//   N bytes   a JSON object {"<tensor name>": {"dtype": "F32", "shape": [2, 3],
//             "data_offsets": [begin, end]}, ..., "__metadata__": {"k": "v"}}
//             padded with spaces
//   ...       the data: each tensor's elements, row-major, little-endian, at
//             [begin, end) relative to the end of the header
//
// psflow's dtypes map to F32, F64, I32, I64, U8 and BOOL (one byte, 0 or 1);
// string tensors have no safetensors form. The writer lays tensors out as
// the reference implementation does (by element size, largest first, then
// by name) with the header padded to a multiple of 8 bytes, so every tensor
// is aligned for its type and the data has no holes.
//
// The reader treats files as untrusted and checks everything the format
// promises before building a tensor: the header length against the file,
// the JSON (no duplicate names), each dtype, shape and offset pair,
// shape * item size == the byte range, and that the ranges tile the data
// exactly (no overlap, no hole, nothing after). Errors are INVALID_ARGUMENT
// "<file>: <problem>".
#ifndef PSFLOW_CHECKPOINT_SAFETENSORS_H_
#define PSFLOW_CHECKPOINT_SAFETENSORS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/file_io.h"
#include "psflow/tensor.h"

namespace psflow::internal::checkpoint {

// Header lengths above this are rejected (the reference implementation's
// own bound).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

// "F32", "F64", "I32", "I64", "U8", "BOOL"; INVALID_ARGUMENT for kString
// and kInvalid.
[[nodiscard]] absl::StatusOr<std::string> safetensors_dtype(DType dtype);
[[nodiscard]] absl::StatusOr<DType> dtype_from_safetensors(std::string_view name);

// One named tensor of a file.
// Thread-safety: a value type.
struct SafetensorsEntry {
  std::string name;
  Tensor tensor;
};

// What a file holds. Tensors share one buffer holding the file's bytes
// (copied only when a tensor is not aligned for its type).
// Thread-safety: a value type.
struct SafetensorsContents {
  std::map<std::string, Tensor, std::less<>> tensors;
  std::map<std::string, std::string, std::less<>> metadata;
};

// The file's bytes. INVALID_ARGUMENT (naming the tensor) for a string or
// invalid tensor, a repeated name, an empty name or "__metadata__".
[[nodiscard]] absl::StatusOr<std::string> encode_safetensors(
    const std::vector<SafetensorsEntry>& entries,
    const std::map<std::string, std::string, std::less<>>& metadata = {});

// Writes the file with an AtomicFileWriter (temp name, fsync, rename),
// streaming each tensor from its own buffer; returns size and CRC32.
[[nodiscard]] absl::StatusOr<FileDigest> write_safetensors_file(
    const std::string& path, const std::vector<SafetensorsEntry>& entries,
    const std::map<std::string, std::string, std::less<>>& metadata = {});

// Parses a file's bytes; `file` names it in errors.
[[nodiscard]] absl::StatusOr<SafetensorsContents> decode_safetensors(std::string bytes,
                                                                     std::string_view file);

// read_file (bounded by `max_bytes`) + decode_safetensors.
[[nodiscard]] absl::StatusOr<SafetensorsContents> read_safetensors_file(const std::string& path,
                                                                        uint64_t max_bytes);

}  // namespace psflow::internal::checkpoint

#endif  // PSFLOW_CHECKPOINT_SAFETENSORS_H_
