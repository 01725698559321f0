// Probes of dynamic embedding tables on real worker processes.
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "psflow/dynamic_embedding.h"
#include "psflow/function_registry.h"
#include "psflow/status_macros.h"
#include "psflow/variable.h"
#include "psflow/worker_context.h"

namespace psflow::internal {
namespace {

// Exactly-once of dynamic tables under kills: args (table handle, marker
// handle, work_ms). Writes its worker index to `marker` (so that a killer
// can aim at a worker that is mid-closure), looks up keys 1, 2, 3 (rows
// created on the first closure), applies a gradient of ones to them with
// learning rate 1, then works for work_ms (stopping early when cancelled):
// a worker killed now has made its update but not finished, so the
// closure is retried and, without exactly-once keys, would apply twice.
// With SGD each row ends at its initial value minus the closures run.
absl::StatusOr<Structure> embedding_update_then_work(WorkerContext& ctx, const Structure& args) {
  constexpr char kName[] = "testing/embedding_update_then_work";
  if (!args.is_sequence() || args.size() != 3 || args[2].kind() != Structure::Kind::kInt ||
      args[2].int_value() < 0 || args[2].int_value() > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat(kName, " expects (table handle, marker handle, work_ms in [0, 10000]); got ",
                     args.debug_string()));
  }
  PSFLOW_ASSIGN_OR_RETURN(DynamicEmbedding table,
                          DynamicEmbedding::from_handle(args[0], *ctx.variable_clients()));
  const DynamicEmbedding bound = ctx.bind(table);
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable marker, ctx.variable(args[1]));
  PSFLOW_RETURN_IF_ERROR(marker.assign(Tensor::scalar<int64_t>(ctx.worker_index())));
  const Tensor keys = Tensor::from_vector<int64_t>({1, 2, 3}, {3});
  PSFLOW_ASSIGN_OR_RETURN(Tensor rows, embedding_lookup(bound, keys));
  Tensor grads(DType::kFloat32, rows.shape());
  for (float& g : grads.mutable_flat<float>()) g = 1.0f;
  PSFLOW_RETURN_IF_ERROR(bound.apply_gradients(keys, grads, /*learning_rate=*/1.0));
  const absl::Time end = absl::Now() + absl::Milliseconds(args[2].int_value());
  while (absl::Now() < end && !ctx.is_cancelled()) {
    PSFLOW_RETURN_IF_ERROR(marker.read_value().status());
  }
  return Structure(static_cast<int64_t>(ctx.worker_index()));
}
PSFLOW_REGISTER_FUNCTION("testing/embedding_update_then_work", &embedding_update_then_work);

}  // namespace
}  // namespace psflow::internal
