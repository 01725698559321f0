// The runtime's side of the public DynamicEmbedding: handles over given ps
// clients (tests, benchmarks) and handles bound to a closure's update keys.
#ifndef PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_INTERNAL_H_
#define PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_INTERNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ps/client/variable_client.h"
#include "ps/request/update_key.h"
#include "psflow/dynamic_embedding.h"

namespace psflow::internal {

// Thread-safety: stateless.
struct DynamicEmbeddingAccess {
  // A handle on the table `name` of `options` held by `ps_clients` (index
  // = ps task), without creating it.
  [[nodiscard]] static DynamicEmbedding attach(
      std::string name, const DynamicEmbeddingOptions& options,
      std::vector<std::shared_ptr<VariableClient>> ps_clients);
  // Creates the table on every client, then attaches.
  [[nodiscard]] static absl::StatusOr<DynamicEmbedding> create(
      std::string name, const DynamicEmbeddingOptions& options,
      std::vector<std::shared_ptr<VariableClient>> ps_clients);
  // The table's clients, index = ps task (empty for an invalid handle).
  [[nodiscard]] static const std::vector<std::shared_ptr<VariableClient>>& clients(
      const DynamicEmbedding& table);
  // A copy whose lookups and updates carry `keys` (null: none). An
  // invalid handle stays invalid.
  [[nodiscard]] static DynamicEmbedding bind(const DynamicEmbedding& table,
                                             std::shared_ptr<UpdateKeys> keys);
};

}  // namespace psflow::internal

#endif  // PSFLOW_STRATEGY_DYNAMIC_EMBEDDING_INTERNAL_H_
