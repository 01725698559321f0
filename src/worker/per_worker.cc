#include "psflow/per_worker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "worker/named_functions.h"

namespace psflow {
namespace {

constexpr char kIteratorMarker[] = "psflow_per_worker_iterator";

}  // namespace

DatasetRegistry& DatasetRegistry::global() {
  static auto* registry = new DatasetRegistry();
  return *registry;
}

absl::Status DatasetRegistry::register_dataset(std::string name, DatasetFunction fn) {
  PSFLOW_RETURN_IF_ERROR(internal::check_registration("dataset", name, fn == nullptr));
  absl::MutexLock lock(&mu_);
  if (!functions_.emplace(name, std::move(fn)).second) {
    return internal::already_registered("dataset", name);
  }
  return absl::OkStatus();
}

absl::StatusOr<DatasetFunction> DatasetRegistry::lookup(std::string_view name) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
  }
  return internal::not_registered("dataset", "PSFLOW_DATASET_FUNCTION", name, names());
}

std::vector<std::string> DatasetRegistry::names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, unused] : functions_) out.push_back(name);
  return out;
}

DatasetRegistrar::DatasetRegistrar(std::string name, DatasetFunction fn) {
  const std::string copy = name;
  const absl::Status status =
      DatasetRegistry::global().register_dataset(std::move(name), std::move(fn));
  PSFLOW_CHECK(status.ok(), "Cannot register dataset function '", copy, "': ", status.message());
}

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
