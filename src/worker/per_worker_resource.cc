#include "psflow/per_worker_resource.h"

#include <utility>

#include "worker/named_functions.h"
#include "worker/per_worker_lease.h"

namespace psflow {

using internal::kPerWorkerResourceMarker;

absl::StatusOr<PerWorkerResource> PerWorkerResource::create(std::string resource_fn,
                                                            Structure args) {
  absl::StatusOr<ResourceFunction> fn = ResourceRegistry::global().lookup(resource_fn);
  if (!fn.ok()) return fn.status();
  return PerWorkerResource(
      Structure::dict({{kPerWorkerResourceMarker, internal::new_per_worker_id()},
                       {"resource_fn", std::move(resource_fn)},
                       {"args", std::move(args)}}),
      nullptr);
}

const std::string& PerWorkerResource::resource_fn() const {
  static const std::string* const kNone = new std::string();
  if (!is_handle(handle_)) return *kNone;
  return handle_["resource_fn"].string_value();
}

bool PerWorkerResource::is_handle(const Structure& s) {
  return s.is_dict() && s.fields().contains(kPerWorkerResourceMarker);
}

}  // namespace psflow
