#include "psflow/per_worker.h"

#include <utility>

#include "worker/named_functions.h"
#include "worker/per_worker_lease.h"

namespace psflow {

using internal::kPerWorkerIteratorMarker;

bool PerWorkerIterator::is_handle(const Structure& s) {
  return s.is_dict() && s.fields().contains(kPerWorkerIteratorMarker);
}

absl::StatusOr<PerWorkerDataset> PerWorkerDataset::create(std::string dataset_fn, Structure args) {
  absl::StatusOr<DatasetFunction> fn = DatasetRegistry::global().lookup(dataset_fn);
  if (!fn.ok()) return fn.status();
  return PerWorkerDataset(std::move(dataset_fn), std::move(args));
}

PerWorkerIterator PerWorkerDataset::iter() const {
  internal::PerWorkerIssuer::Issued issued;
  if (std::shared_ptr<internal::PerWorkerIssuer> issuer = issuer_.lock()) {
    issued = issuer->issue();
  } else {
    issued.id = internal::new_per_worker_id();
  }
  return PerWorkerIterator(Structure::dict({{kPerWorkerIteratorMarker, std::move(issued.id)},
                                            {"dataset_fn", dataset_fn_},
                                            {"args", args_}}),
                           std::move(issued.lease));
}

namespace internal {

std::optional<std::string_view> per_worker_handle_id(const Structure& s) {
  if (!s.is_dict()) return std::nullopt;
  for (const char* marker : {kPerWorkerIteratorMarker, kPerWorkerResourceMarker}) {
    auto it = s.fields().find(marker);
    if (it != s.fields().end() && it->second.kind() == Structure::Kind::kString) {
      return std::string_view(it->second.string_value());
    }
  }
  return std::nullopt;
}

PerWorkerDataset PerWorkerAccess::bind(PerWorkerDataset dataset,
                                       std::weak_ptr<PerWorkerIssuer> issuer) {
  dataset.issuer_ = std::move(issuer);
  return dataset;
}

PerWorkerResource PerWorkerAccess::bind(const PerWorkerResource& resource,
                                        PerWorkerIssuer& issuer) {
  PerWorkerIssuer::Issued issued = issuer.issue();
  Structure::Fields fields = resource.handle().fields();
  fields[kPerWorkerResourceMarker] = Structure(std::move(issued.id));
  return PerWorkerResource(Structure::dict(std::move(fields)), std::move(issued.lease));
}

}  // namespace internal
}  // namespace psflow
