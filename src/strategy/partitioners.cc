#include "psflow/partitioners.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow {

using internal::av;

namespace {

// Partition list of TF's contract: `parts` on axis 0, 1 elsewhere.
std::vector<int64_t> on_axis0(const Shape& shape, int64_t parts) {
  std::vector<int64_t> out(shape.size(), 1);
  out[0] = parts;
  return out;
}

absl::Status check_rank(const Shape& shape, std::string_view partitioner) {
  if (shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        av(partitioner), " got a scalar shape; axis 0 must exist (scalars are never partitioned)"));
  }
  for (int64_t d : shape) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(av(partitioner), " needs a fully defined shape, got ", shape_string(shape)));
    }
  }
  return absl::OkStatus();
}

int64_t element_bytes(DType dtype, int bytes_per_string) {
  return dtype == DType::kString ? bytes_per_string : static_cast<int64_t>(dtype_size(dtype));
}

// TF's argument check: "Argument `min_shard_bytes` must be positive.
// Received: 0", prefixed with the partitioner.
absl::Status check_positive(std::string_view partitioner, std::string_view argument,
                            int64_t value) {
  if (value >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(av(partitioner), ": Argument `", av(argument),
                                                 "` must be positive. Received: ", value));
}

}  // namespace

absl::StatusOr<Partitioner> fixed_shards_partitioner(int num_shards) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("FixedShardsPartitioner num_shards = ", num_shards, " must be >= 1"));
  }
  return Partitioner(
      [num_shards](const Shape& shape, DType) -> absl::StatusOr<std::vector<int64_t>> {
        if (auto s = check_rank(shape, "FixedShardsPartitioner"); !s.ok()) return s;
        return on_axis0(shape, std::min<int64_t>(num_shards, shape[0]));
      });
}

absl::StatusOr<Partitioner> min_size_partitioner(int64_t min_shard_bytes, int max_shards,
                                                 int bytes_per_string) {
  PSFLOW_RETURN_IF_ERROR(check_positive("MinSizePartitioner", "min_shard_bytes", min_shard_bytes));
  PSFLOW_RETURN_IF_ERROR(check_positive("MinSizePartitioner", "max_shards", max_shards));
  PSFLOW_RETURN_IF_ERROR(
      check_positive("MinSizePartitioner", "bytes_per_string", bytes_per_string));
  return Partitioner([=](const Shape& shape, DType dtype) -> absl::StatusOr<std::vector<int64_t>> {
    if (auto s = check_rank(shape, "MinSizePartitioner"); !s.ok()) return s;
    const double total = static_cast<double>(num_elements(shape)) *
                         static_cast<double>(element_bytes(dtype, bytes_per_string));
    const auto by_size =
        static_cast<int64_t>(std::ceil(total / static_cast<double>(min_shard_bytes)));
    const int64_t parts =
        std::max<int64_t>(1, std::min({shape[0], static_cast<int64_t>(max_shards), by_size}));
    return on_axis0(shape, parts);
  });
}

absl::StatusOr<Partitioner> max_size_partitioner(int64_t max_shard_bytes,
                                                 std::optional<int> max_shards,
                                                 int bytes_per_string) {
  PSFLOW_RETURN_IF_ERROR(check_positive("MaxSizePartitioner", "max_shard_bytes", max_shard_bytes));
  // TF tests `max_shards and max_shards < 1`: 0 means no limit, like None.
  if (max_shards.has_value() && *max_shards == 0) max_shards.reset();
  if (max_shards.has_value()) {
    PSFLOW_RETURN_IF_ERROR(check_positive("MaxSizePartitioner", "max_shards", *max_shards));
  }
  PSFLOW_RETURN_IF_ERROR(
      check_positive("MaxSizePartitioner", "bytes_per_string", bytes_per_string));
  return Partitioner([=](const Shape& shape, DType dtype) -> absl::StatusOr<std::vector<int64_t>> {
    if (auto s = check_rank(shape, "MaxSizePartitioner"); !s.ok()) return s;
    if (dtype == DType::kInvalid) {
      return absl::InvalidArgumentError("MaxSizePartitioner requires a DType; got none");
    }
    // No rows, or rows of no bytes (shape [n, 0]): nothing to split (TF
    // would divide by zero).
    if (shape[0] == 0 || num_elements(shape) == 0) return on_axis0(shape, 1);
    const double bytes_per_slice = static_cast<double>(num_elements(shape)) /
                                   static_cast<double>(shape[0]) *
                                   static_cast<double>(element_bytes(dtype, bytes_per_string));
    const int64_t slices_per_shard = std::max<int64_t>(
        1,
        static_cast<int64_t>(std::floor(static_cast<double>(max_shard_bytes) / bytes_per_slice)));
    int64_t shards = (shape[0] + slices_per_shard - 1) / slices_per_shard;
    if (max_shards.has_value()) shards = std::min<int64_t>(shards, *max_shards);
    return on_axis0(shape, shards);
  });
}

std::vector<int64_t> div_partition_sizes(int64_t rows, int64_t num_shards) {
  const int64_t n = std::max<int64_t>(1, std::min(num_shards, rows));
  std::vector<int64_t> sizes(static_cast<size_t>(n), rows / n);
  for (int64_t i = 0; i < rows % n; ++i) ++sizes[static_cast<size_t>(i)];
  return sizes;
}

}  // namespace psflow
