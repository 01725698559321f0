#include "psflow/per_worker_resource.h"

#include <atomic>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "coordinator/close_names.h"

namespace psflow {
namespace {

constexpr char kResourceMarker[] = "psflow_per_worker_resource";

// Unique across coordinator processes, so that a worker serving two
// coordinators never mixes their resources.
std::string new_resource_id() {
  static const uint64_t process = std::random_device{}() ^ (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(absl::Hex(process, absl::kZeroPad16), "-", counter.fetch_add(1) + 1);
}

}  // namespace

ResourceRegistry& ResourceRegistry::global() {
  static auto* registry = new ResourceRegistry();
  return *registry;
}

absl::Status ResourceRegistry::register_resource(std::string name, ResourceFunction fn) {
  if (name.empty()) return absl::InvalidArgumentError("A resource function needs a name.");
  if (fn == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("Resource function '", name, "' is empty."));
  }
  absl::MutexLock lock(&mu_);
  if (!functions_.emplace(name, std::move(fn)).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("A resource function named '", name, "' is already registered."));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResourceFunction> ResourceRegistry::lookup(std::string_view name) const {
  {
    absl::MutexLock lock(&mu_);
    auto it = functions_.find(name);
    if (it != functions_.end()) return it->second;
  }
  std::string message =
      absl::StrCat("No resource function named '", av(name), "' is registered in this binary.");
  const std::vector<std::string> close = close_names(name, names());
  if (!close.empty()) {
    absl::StrAppend(&message, " Did you mean '", close.front(), "'?");
  }
  absl::StrAppend(&message,
                  " Resource functions are registered with PSFLOW_RESOURCE_FUNCTION in code "
                  "linked into every process of the job.");
  return absl::NotFoundError(message);
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
  return PerWorkerResource(Structure::dict({{kResourceMarker, new_resource_id()},
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
