// Per-worker resources (TF's coordinator.create_per_worker_resource and its
// per-worker values): worker-local state of any C++ type (a model replica,
// a cache, a connection, a random generator), built on every worker by a
// registered resource function, and reached by scheduled functions on the
// worker they run on.
//
//   struct Embeddings { std::vector<float> table; int64_t hits = 0; };
//   PSFLOW_RESOURCE_FUNCTION(embeddings, ctx, args) {
//     auto e = std::make_shared<Embeddings>();
//     e->table.resize(args.int_value());               // this worker's copy
//     return psflow::WorkerResource::of(std::move(e));
//   }
//   PSFLOW_FUNCTION(lookup, ctx, args) {
//     PSFLOW_ASSIGN_OR_RETURN(std::shared_ptr<Embeddings> e,
//                             ctx.resource<Embeddings>(args));
//     ++e->hits;
//     ...
//   }
//   PerWorkerResource emb = *coordinator->create_per_worker_resource("embeddings", 1024);
//   coordinator->schedule("lookup", emb.handle());
//
// A worker builds its copy the first time one of its closures asks for it,
// once (a build that fails is tried again by the next closure that asks),
// and keeps it until the coordinator releases it (once every copy of the
// PerWorkerResource is gone and no closure using it is queued or running;
// batched, see PerWorkerIterator) or the worker process ends. A worker that restarts
// (or joins late) builds it afresh, as TF rebuilds per-worker resources on a
// recovered worker; so state that must survive a worker belongs in
// variables on the parameter servers. Each create_per_worker_resource call
// makes a new resource (a fresh copy on every worker), as TF's.
#ifndef PSFLOW_PER_WORKER_RESOURCE_H_
#define PSFLOW_PER_WORKER_RESOURCE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/named_registry.h"
#include "psflow/structure.h"

namespace psflow {

namespace internal {
class PerWorkerLease;  // Shared by a handle's copies (runtime).
struct PerWorkerAccess;
}  // namespace internal

// What a resource function knows about the worker it runs on.
// Thread-safety: a value type.
struct ResourceContext {
  int worker_index = 0;
  int num_workers = 1;
};

// A worker-local object of any type, shared by pointer: what a resource
// function returns and WorkerContext::resource gives back. Typed access
// checks the type it was made with (exactly, not base classes).
// Thread-safety: a value type; copies share the object, which it does not
// synchronise (a worker runs one closure at a time by default; functions
// that run concurrently must guard shared state themselves).
class WorkerResource {
 public:
  WorkerResource() = default;  // Empty.

  // Wraps `object` (non-null for a non-empty resource).
  template <typename T>
  [[nodiscard]] static WorkerResource of(std::shared_ptr<T> object) {
    static_assert(!std::is_void_v<T>, "WorkerResource::of needs a complete object type");
    WorkerResource r;
    r.type_ = &typeid(std::remove_cv_t<T>);
    r.object_ = std::const_pointer_cast<std::remove_cv_t<T>>(std::move(object));
    return r;
  }
  // Builds a T in place: WorkerResource::make<Cache>(1024).
  template <typename T, typename... Args>
  [[nodiscard]] static WorkerResource make(Args&&... args) {
    return of(std::make_shared<T>(std::forward<Args>(args)...));
  }

  [[nodiscard]] bool empty() const { return object_ == nullptr; }
  // typeid(void) when empty.
  [[nodiscard]] const std::type_info& type() const { return *type_; }
  // The object when it is a T; null when empty or of another type.
  template <typename T>
  [[nodiscard]] std::shared_ptr<T> get() const {
    if (object_ == nullptr || *type_ != typeid(std::remove_cv_t<T>)) return nullptr;
    return std::static_pointer_cast<T>(object_);
  }

 private:
  const std::type_info* type_ = &typeid(void);
  std::shared_ptr<void> object_;
};

using ResourceFunction = std::function<absl::StatusOr<WorkerResource>(const ResourceContext& ctx,
                                                                      const Structure& args)>;

// TF's per-worker values of create_per_worker_resource: one resource, a
// copy per worker. A handle: pass handle() (or the object, which converts)
// in schedule() arguments; the function reaches its worker's copy with
// WorkerContext::resource. Copies name the same resource; keep one (not
// only its handle() Structure) while scheduling with it.
// Thread-safety: a value type.
class PerWorkerResource {
 public:
  PerWorkerResource() = default;
  // Checks that `resource_fn` is registered in this binary (NOT_FOUND with
  // close names otherwise). The workers build their copies lazily. A
  // resource made here is bound to no coordinator and never released on
  // the workers; make resources with
  // ClusterCoordinator::create_per_worker_resource.
  [[nodiscard]] static absl::StatusOr<PerWorkerResource> create(std::string resource_fn,
                                                                Structure args = {});

  // {"psflow_per_worker_resource": id, "resource_fn": name, "args": args}.
  [[nodiscard]] const Structure& handle() const { return handle_; }
  operator Structure() const { return handle_; }  // NOLINT: for schedule() args
  [[nodiscard]] const std::string& resource_fn() const;
  // Whether `s` is such a handle (whether or not well formed).
  [[nodiscard]] static bool is_handle(const Structure& s);

 private:
  friend struct internal::PerWorkerAccess;
  PerWorkerResource(Structure handle, std::shared_ptr<const internal::PerWorkerLease> lease)
      : handle_(std::move(handle)), lease_(std::move(lease)) {}
  Structure handle_;
  // Null when unbound (see create).
  std::shared_ptr<const internal::PerWorkerLease> lease_;
};

// Resource functions by name, filled at static initialisation in every
// process of the binary (as FunctionRegistry); lookup() gives a copy of the
// function.
// Thread-safety: thread-safe; entries are never removed.
class ResourceRegistry : public NamedRegistry<ResourceRegistry, ResourceFunction> {
 public:
  // INVALID_ARGUMENT for an empty name or function; ALREADY_EXISTS.
  [[nodiscard]] absl::Status register_resource(std::string name, ResourceFunction fn) {
    return register_function(std::move(name), std::move(fn));
  }
};

// Registers at static initialisation; aborts on a duplicate name.
using ResourceRegistrar = NamedRegistrar<ResourceRegistry>;

}  // namespace psflow

// Registers any callable under a string name ("model/embeddings").
#define PSFLOW_REGISTER_RESOURCE(name, fn) PSFLOW_NAMED_REGISTER_(Resource, name, fn)

// Defines and registers a resource function named after the identifier.
#define PSFLOW_RESOURCE_FUNCTION(name, ctx, args) PSFLOW_NAMED_FUNCTION_(Resource, name, ctx, args)

#endif  // PSFLOW_PER_WORKER_RESOURCE_H_
