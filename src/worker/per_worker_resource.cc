#include "psflow/per_worker_resource.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "worker/named_functions.h"

namespace psflow {
namespace {

constexpr char kResourceMarker[] = "psflow_per_worker_resource";

}  // namespace

ResourceRegistry& ResourceRegistry::global() {
  static auto* registry = new ResourceRegistry();
  return *registry;
}

absl::Status ResourceRegistry::register_resource(std::string name, ResourceFunction fn) {
  PSFLOW_RETURN_IF_ERROR(internal::check_registration("resource", name, fn == nullptr));
  absl::MutexLock lock(&mu_);
  if (!functions_.emplace(name, std::move(fn)).second) {
    return internal::already_registered("resource", name);
  }
  return absl::OkStatus();
}

absl::StatusOr<ResourceFunction> ResourceRegistry::lookup(std::string_view name) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
  }
  return internal::not_registered("resource", "PSFLOW_RESOURCE_FUNCTION", name, names());
}

std::vector<std::string> ResourceRegistry::names() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [name, unused] : functions_) out.push_back(name);
  return out;
}

ResourceRegistrar::ResourceRegistrar(std::string name, ResourceFunction fn) {
  const std::string copy = name;
  const absl::Status status =
      ResourceRegistry::global().register_resource(std::move(name), std::move(fn));
  PSFLOW_CHECK(status.ok(), "Cannot register resource function '", copy, "': ", status.message());
}

absl::StatusOr<PerWorkerResource> PerWorkerResource::create(std::string resource_fn,
                                                            Structure args) {
  absl::StatusOr<ResourceFunction> fn = ResourceRegistry::global().lookup(resource_fn);
  if (!fn.ok()) return fn.status();
  return PerWorkerResource(Structure::dict({{kResourceMarker, internal::new_per_worker_id()},
                                            {"resource_fn", std::move(resource_fn)},
                                            {"args", std::move(args)}}));
}

const std::string& PerWorkerResource::resource_fn() const {
  static const std::string* const kNone = new std::string();
  if (!is_handle(handle_)) return *kNone;
  return handle_["resource_fn"].string_value();
}

bool PerWorkerResource::is_handle(const Structure& s) {
  return s.is_dict() && s.fields().contains(kResourceMarker);
}

}  // namespace psflow
