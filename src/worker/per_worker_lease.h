// How per-worker handles (PerWorkerIterator, PerWorkerResource) tell their
// coordinator that the last copy of one is gone, so that its workers drop
// their objects (internal). The worker layer defines the seam; the
// coordinator's PerWorkerRegistry implements it.
#ifndef PSFLOW_WORKER_PER_WORKER_LEASE_H_
#define PSFLOW_WORKER_PER_WORKER_LEASE_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "psflow/per_worker.h"
#include "psflow/per_worker_resource.h"
#include "psflow/structure.h"

namespace psflow::internal {

// The keys under which a handle's Structure carries its id.
inline constexpr char kPerWorkerIteratorMarker[] = "psflow_per_worker_iterator";
inline constexpr char kPerWorkerResourceMarker[] = "psflow_per_worker_resource";

// The id of the per-worker handle `s` (an iterator's or a resource's);
// nullopt when `s` is no handle or its id is no string.
[[nodiscard]] std::optional<std::string_view> per_worker_handle_id(const Structure& s);

// Shared by every copy of one handle (and by the closures that use it):
// runs `on_release` when the last owner drops it.
// Thread-safety: immutable; destroyed once.
class PerWorkerLease {
 public:
  explicit PerWorkerLease(absl::AnyInvocable<void() &&> on_release)
      : on_release_(std::move(on_release)) {}
  ~PerWorkerLease() {
    if (on_release_) std::move(on_release_)();
  }
  PerWorkerLease(const PerWorkerLease&) = delete;
  PerWorkerLease& operator=(const PerWorkerLease&) = delete;

 private:
  absl::AnyInvocable<void() &&> on_release_;
};

// Issues ids of per-worker handles together with their leases.
// Thread-safety: implementations are thread-safe.
class PerWorkerIssuer {
 public:
  struct Issued {
    std::string id;
    std::shared_ptr<const PerWorkerLease> lease;
  };
  virtual ~PerWorkerIssuer() = default;
  [[nodiscard]] virtual Issued issue() = 0;
};

// Makes handles bound to an issuer (ClusterCoordinator's
// create_per_worker_dataset / create_per_worker_resource).
// Thread-safety: stateless.
struct PerWorkerAccess {
  // `dataset` whose iter() issues its iterators' ids from `issuer` while it
  // lives (unbound ids afterwards).
  [[nodiscard]] static PerWorkerDataset bind(PerWorkerDataset dataset,
                                             std::weak_ptr<PerWorkerIssuer> issuer);
  // `resource` (made by PerWorkerResource::create) re-issued from `issuer`.
  [[nodiscard]] static PerWorkerResource bind(const PerWorkerResource& resource,
                                              PerWorkerIssuer& issuer);
};

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_PER_WORKER_LEASE_H_
