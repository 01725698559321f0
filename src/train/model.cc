#include "train/model.h"

#include "train/partitioner_flag.h"

namespace psflow::internal {

absl::StatusOr<Partitioner> Model::partitioner(const TrainOptions& options, int num_ps) const {
  return parse_partitioner(options.partitioner);
}

}  // namespace psflow::internal
