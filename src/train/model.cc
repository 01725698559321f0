#include "train/model.h"

#include "train/partitioner_flag.h"

namespace psflow::internal {

std::string Model::partitioner_spec(const TrainOptions& options, int num_ps) const {
  return options.partitioner == kAutoPartitioner ? min_size_spec_for(num_ps) : options.partitioner;
}

absl::StatusOr<Partitioner> Model::partitioner(const TrainOptions& options, int num_ps) const {
  return parse_partitioner(partitioner_spec(options, num_ps), num_ps);
}

}  // namespace psflow::internal
