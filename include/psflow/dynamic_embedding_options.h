// The definition of a dynamic embedding table (docs/embeddings.md): what a
// ps task needs to hold its shard of one. A value type shared by the
// public DynamicEmbedding and the ps tasks that store the rows.
#ifndef PSFLOW_DYNAMIC_EMBEDDING_OPTIONS_H_
#define PSFLOW_DYNAMIC_EMBEDDING_OPTIONS_H_

#include <cstdint>

#include "psflow/dtype.h"
#include "psflow/optimizer_config.h"

namespace psflow {

// How a new row's values are drawn. Every draw depends only on (seed, key,
// element index), so a retried or replayed step creates identical rows on
// any ps task.
enum class DynamicEmbeddingInitializer {
  kZeros,
  kUniform,  // uniform in [-init_scale, init_scale)
  kNormal,   // normal with mean 0 and standard deviation init_scale
};

// Thread-safety: a value type.
struct DynamicEmbeddingOptions {
  // Values per row: 1 to 4096.
  int64_t dim = 0;
  // float32 only for now; the wire and the table carry the dtype so that
  // other element types can follow.
  DType dtype = DType::kFloat32;
  uint64_t seed = 0;
  DynamicEmbeddingInitializer initializer = DynamicEmbeddingInitializer::kUniform;
  double init_scale = 0.05;
  // The optimizer whose slots every row keeps (its kind and
  // initial_accumulator_value are fixed at creation; updates must use the
  // same kind, their other hyper-parameters and learning rate travel with
  // each update as for dense variables).
  OptimizerConfig optimizer;
  // Rows per ps task; beyond it the least recently used rows are evicted.
  // 0: unbounded.
  int64_t capacity_per_shard = 0;
  // A row not touched (looked up or updated) for more than ttl_steps steps
  // is evicted. 0: never.
  int64_t ttl_steps = 0;
  // Admission: a key gets a row at its admit_after-th sighting (lookups
  // count; 0 and 1 admit at the first), counted without a row in a
  // count-min sketch of sketch_width x 4 counters per ps task (bounded
  // memory; may over-count, never under-counts), ...
  int64_t admit_after = 0;
  int64_t sketch_width = int64_t{1} << 20;
  // ... and only if the key's draw (depending on seed and key only) is
  // below admit_probability: that fraction of the key space ever gets rows.
  double admit_probability = 1.0;

  friend bool operator==(const DynamicEmbeddingOptions&, const DynamicEmbeddingOptions&) = default;
};

}  // namespace psflow

#endif  // PSFLOW_DYNAMIC_EMBEDDING_OPTIONS_H_
