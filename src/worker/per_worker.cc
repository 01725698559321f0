#include "psflow/per_worker.h"

#include <utility>

#include "worker/named_functions.h"

namespace psflow {
namespace {

constexpr char kIteratorMarker[] = "psflow_per_worker_iterator";

}  // namespace

bool PerWorkerIterator::is_handle(const Structure& s) {
  return s.is_dict() && s.fields().contains(kIteratorMarker);
}

absl::StatusOr<PerWorkerDataset> PerWorkerDataset::create(std::string dataset_fn, Structure args) {
  absl::StatusOr<DatasetFunction> fn = DatasetRegistry::global().lookup(dataset_fn);
  if (!fn.ok()) return fn.status();
  return PerWorkerDataset(std::move(dataset_fn), std::move(args));
}

PerWorkerIterator PerWorkerDataset::iter() const {
  return PerWorkerIterator(Structure::dict({{kIteratorMarker, internal::new_per_worker_id()},
                                            {"dataset_fn", dataset_fn_},
                                            {"args", args_}}));
}

}  // namespace psflow
