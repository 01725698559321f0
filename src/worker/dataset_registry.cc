// DatasetRegistry::lookup: dataset functions as workers run them, with the
// variable creations that TF refuses in a dataset_fn refused.
#include <string>
#include <utility>

#include "psflow/per_worker.h"
#include "strategy/creation_refusal.h"

namespace psflow {

absl::StatusOr<DatasetFunction> DatasetRegistry::lookup(std::string_view name) const {
  absl::StatusOr<DatasetFunction> fn = NamedRegistry::lookup(name);
  if (!fn.ok()) return fn.status();
  return DatasetFunction(
      [fn = *std::move(fn), name = std::string(name)](
          const DatasetContext& ctx, const Structure& args) -> absl::StatusOr<Dataset> {
        internal::DatasetFunctionScope no_variables(name);
        return fn(ctx, args);
      });
}

}  // namespace psflow
