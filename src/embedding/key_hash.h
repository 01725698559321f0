// The stable hashes of dynamic embedding tables (docs/embeddings.md,
// "Hashing"): which ps task holds a key, the draws of a new row's values,
// and the admission draw. They depend on nothing but their arguments (not
// on std::hash, the process or the platform), so every process of a run,
// and every run, agrees on them.
#ifndef PSFLOW_EMBEDDING_KEY_HASH_H_
#define PSFLOW_EMBEDDING_KEY_HASH_H_

#include <cstdint>

#include "psflow/dynamic_embedding_options.h"

namespace psflow::internal {

// The splitmix64 finalizer: a bijection of 64-bit values with good
// avalanche (Steele, Lea, Flood 2014).
[[nodiscard]] constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// The ps task (0 .. num_tasks-1) that holds `key`: splitmix64 of the key's
// two's-complement bits, modulo the number of tasks.
[[nodiscard]] constexpr int dynamic_key_task(int64_t key, int num_tasks) {
  return static_cast<int>(splitmix64(static_cast<uint64_t>(key)) %
                          static_cast<uint64_t>(num_tasks));
}

// Writes the `dim` initial values of `key`'s row. Element j draws from the
// counter splitmix64(splitmix64(seed ^ 0x5EED) ^ splitmix64(key)) + j.
void initial_row(const DynamicEmbeddingOptions& options, int64_t key, float* out);

// The key's admission draw in [0, 1): admitted only when below
// admit_probability.
[[nodiscard]] double admission_draw(uint64_t seed, int64_t key);

}  // namespace psflow::internal

#endif  // PSFLOW_EMBEDDING_KEY_HASH_H_
