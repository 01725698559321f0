#include "psflow/worker_context.h"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <typeinfo>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "ps/request/update_key.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/status_macros.h"
#include "strategy/dynamic_embedding_internal.h"
#include "strategy/update_binding.h"
#include "worker/per_worker_lease.h"
#include "worker/per_worker_objects.h"

namespace psflow {

absl::StatusOr<ShardedVariable> WorkerContext::variable(const Structure& handle) const {
  if (variables_ == nullptr) {
    return absl::FailedPreconditionError(
        "This worker has no parameter servers to reach variables on: run the function on a "
        "worker of a cluster with ps tasks (or give in-process workers a variable lookup).");
  }
  PSFLOW_ASSIGN_OR_RETURN(VariableHandle parsed, VariableHandle::from_structure(handle));
  PSFLOW_ASSIGN_OR_RETURN(ShardedVariable variable,
                          ShardedVariable::from_handle(parsed, *variables_));
  return bind(variable);
}

void WorkerContext::set_update_session(uint64_t session) {
  update_keys_ =
      session == 0 ? nullptr : std::make_shared<internal::UpdateKeys>(session, closure_id_);
}

ShardedVariable WorkerContext::bind(const ShardedVariable& variable) const {
  return update_keys_ == nullptr ? variable : internal::bind_update_keys(variable, update_keys_);
}

DynamicEmbedding WorkerContext::bind(const DynamicEmbedding& table) const {
  return update_keys_ == nullptr ? table
                                 : internal::DynamicEmbeddingAccess::bind(table, update_keys_);
}

Optimizer WorkerContext::bind(const Optimizer& optimizer) const {
  return update_keys_ == nullptr ? optimizer : internal::bind_update_keys(optimizer, update_keys_);
}

namespace {

// A worker's iterator over its copy of one per-worker dataset.
struct WorkerIterator {
  std::unique_ptr<DatasetIterator> iterator;
  absl::Status build_error;
};

// The pieces of a per-worker handle ({marker: id, fn_field: name, "args": ...});
// they point into the handle.
struct PerWorkerHandle {
  const std::string* id;
  const std::string* fn;
  const Structure* args;
};

// Validates `handle` (accepted by `is_handle`, string id under `marker`,
// string `fn_field`, an "args" field); INVALID_ARGUMENT naming `what` otherwise.
absl::StatusOr<PerWorkerHandle> parse_per_worker_handle(const Structure& handle,
                                                        bool (*is_handle)(const Structure&),
                                                        std::string_view marker,
                                                        std::string_view fn_field,
                                                        absl::string_view what) {
  const auto bad_handle = [&] {
    return absl::InvalidArgumentError(absl::StrCat("Expected a per-worker ", what, "; got ",
                                                   handle.debug_string().substr(0, 200)));
  };
  if (!is_handle(handle)) return bad_handle();
  const Structure& id = handle[marker];
  auto fn_it = handle.fields().find(fn_field);
  auto args_it = handle.fields().find("args");
  if (id.kind() != Structure::Kind::kString || fn_it == handle.fields().end() ||
      fn_it->second.kind() != Structure::Kind::kString || args_it == handle.fields().end()) {
    return bad_handle();
  }
  return PerWorkerHandle{&id.string_value(), &fn_it->second.string_value(), &args_it->second};
}

}  // namespace

absl::Status WorkerContext::record_input_error(absl::Status error) const {
  if (input_error_.ok()) input_error_ = error;
  return error;
}

template <typename T>
absl::StatusOr<std::shared_ptr<T>> WorkerContext::per_worker_object(const std::string& key,
                                                                    std::string_view id,
                                                                    std::string_view what,
                                                                    std::string_view fn) const {
  std::shared_ptr<T> object = resources_->get_or_create_shared<T>(key);
  // Checked after the insertion: a release racing with it (it remembers
  // the id, then erases) either erases what was inserted or is seen here.
  if (internal::per_worker_released(*resources_, id)) {
    resources_->erase(key);
    return record_input_error(absl::FailedPreconditionError(
        absl::StrCat("The ", internal::av(what), " '", internal::av(fn), "' (id ", internal::av(id),
                     ") was released on worker ", worker_index_,
                     ": the coordinator dropped its last handle. Keep the PerWorkerIterator or "
                     "PerWorkerResource alive while closures use it.")));
  }
  return object;
}

absl::StatusOr<std::optional<Structure>> WorkerContext::get_next(const Structure& handle) const {
  PSFLOW_ASSIGN_OR_RETURN(const PerWorkerHandle parsed,
                          parse_per_worker_handle(handle, &PerWorkerIterator::is_handle,
                                                  internal::kPerWorkerIteratorMarker, "dataset_fn",
                                                  "iterator (PerWorkerDataset::iter().handle())"));
  PSFLOW_ASSIGN_OR_RETURN(
      std::shared_ptr<WorkerIterator> shared,
      per_worker_object<WorkerIterator>(internal::per_worker_iterator_key(*parsed.id), *parsed.id,
                                        "iterator over per-worker dataset", *parsed.fn));
  WorkerIterator& state = *shared;
  if (state.iterator == nullptr && state.build_error.ok()) {
    absl::StatusOr<DatasetFunction> fn = DatasetRegistry::global().lookup(*parsed.fn);
    absl::StatusOr<Dataset> dataset =
        fn.ok()
            ? (*fn)(DatasetContext{worker_index_, num_workers_, worker_recoveries_, restart_salt_},
                    *parsed.args)
            : absl::StatusOr<Dataset>(fn.status());
    if (dataset.ok()) {
      state.iterator = std::make_unique<DatasetIterator>(dataset->make_iterator());
    } else {
      state.build_error =
          absl::Status(dataset.status().code(),
                       absl::StrCat("building per-worker dataset '", *parsed.fn, "' on worker ",
                                    worker_index_, ": ", dataset.status().message()));
    }
  }
  if (!state.build_error.ok()) return record_input_error(state.build_error);
  return state.iterator->get_next();
}

absl::StatusOr<Structure> WorkerContext::next(const Structure& handle) const {
  PSFLOW_ASSIGN_OR_RETURN(std::optional<Structure> element, get_next(handle));
  if (!element.has_value()) {
    return absl::OutOfRangeError(absl::StrCat("End of the per-worker dataset on worker ",
                                              worker_index_, " (TF's StopIteration)."));
  }
  return *std::move(element);
}

namespace {

// A worker's copy of one per-worker resource; the mutex makes concurrent
// first uses build it once.
struct ResourceSlot {
  absl::Mutex mu;
  WorkerResource value ABSL_GUARDED_BY(mu);
};

// "std::string" rather than "NSt7__cxx1112basic_string...", for messages.
std::string type_name(const std::type_info& type) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(type.name(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled != nullptr ? demangled : type.name();
  std::free(demangled);
  return out;
}

}  // namespace

absl::StatusOr<WorkerResource> WorkerContext::resource(const Structure& handle) const {
  PSFLOW_ASSIGN_OR_RETURN(const PerWorkerHandle parsed,
                          parse_per_worker_handle(handle, &PerWorkerResource::is_handle,
                                                  internal::kPerWorkerResourceMarker, "resource_fn",
                                                  "resource (PerWorkerResource::handle())"));
  const std::string& fn_name = *parsed.fn;
  PSFLOW_ASSIGN_OR_RETURN(
      std::shared_ptr<ResourceSlot> shared,
      per_worker_object<ResourceSlot>(internal::per_worker_resource_key(*parsed.id), *parsed.id,
                                      "per-worker resource", fn_name));
  ResourceSlot& slot = *shared;
  absl::MutexLock lock(&slot.mu);
  if (!slot.value.empty()) return slot.value;
  absl::StatusOr<ResourceFunction> fn = ResourceRegistry::global().lookup(fn_name);
  absl::StatusOr<WorkerResource> built =
      fn.ok() ? (*fn)(ResourceContext{worker_index_, num_workers_}, *parsed.args)
              : absl::StatusOr<WorkerResource>(fn.status());
  if (built.ok() && built->empty()) {
    built = absl::InternalError("it returned an empty WorkerResource");
  }
  if (!built.ok()) {
    return record_input_error(
        absl::Status(built.status().code(),
                     absl::StrCat("building per-worker resource '", fn_name, "' on worker ",
                                  worker_index_, ": ", built.status().message())));
  }
  slot.value = *std::move(built);
  return slot.value;
}

absl::Status WorkerContext::resource_type_error(const Structure& handle, const std::type_info& held,
                                                const std::type_info& wanted) const {
  // Only reached after resource(handle) succeeded, so the handle is valid.
  const std::string& fn = handle["resource_fn"].string_value();
  return absl::FailedPreconditionError(
      absl::StrCat("Per-worker resource '", fn, "' on worker ", worker_index_, " holds a ",
                   type_name(held), ", not the requested ", type_name(wanted),
                   "; ask WorkerContext::resource<T> for the type its resource function made."));
}

}  // namespace psflow
