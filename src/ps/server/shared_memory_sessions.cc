#include "ps/server/shared_memory_sessions.h"

#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace psflow::internal {

void SharedMemorySessions::drop_idle(absl::Time now) {
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (now - it->second.last_used > options_.idle_timeout) {
      bytes_ -= it->second.region->size();
      sessions_.erase(it++);
    } else {
      ++it;
    }
  }
}

absl::StatusOr<SharedMemorySessions::Opened> SharedMemorySessions::open(
    const PeerIdentity& caller, std::string_view boot_id, std::string_view pid_namespace,
    size_t bytes) {
  if (!options_.enabled) {
    return absl::FailedPreconditionError(
        "this ps offers no shared memory (PSFLOW_SHARED_MEMORY is off); payloads go over gRPC");
  }
  const std::string own_boot_id = host_boot_id();
  if (own_boot_id.empty() || boot_id != own_boot_id) {
    return absl::FailedPreconditionError(
        "the caller runs on another host (its boot id differs); payloads go over gRPC");
  }
  if (!pid_namespace.empty() && pid_namespace != internal::pid_namespace()) {
    return absl::FailedPreconditionError(
        "the caller runs in another PID namespace (another container), where it cannot open this "
        "ps's shared memory; payloads go over gRPC");
  }
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  bytes = std::min(std::max(bytes, size_t{1} << 20), options_.max_session_bytes);
  bytes = (bytes + page - 1) / page * page;
  if (bytes <= SharedMemoryRegion::kHeaderBytes) bytes = SharedMemoryRegion::kHeaderBytes + page;
  absl::MutexLock lock(&mu_);
  drop_idle(absl::Now());
  if (static_cast<int>(sessions_.size()) >= options_.max_sessions ||
      bytes_ + bytes > options_.budget_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("this ps's shared memory is spent (", sessions_.size(), " sessions, ", bytes_,
                     " bytes of a budget of ", options_.budget_bytes, "); payloads go over gRPC"));
  }
  std::string token = random_token(SharedMemoryRegion::kTokenBytes);
  absl::StatusOr<std::unique_ptr<SharedMemoryRegion>> region =
      SharedMemoryRegion::create(bytes, token);
  if (!region.ok()) return region.status();
  std::shared_ptr<SharedMemoryRegion> shared = *std::move(region);
  bytes_ += bytes;
  sessions_.emplace(token, Session{caller.owner(), shared, absl::Now()});
  return Opened{std::move(token), std::move(shared)};
}

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemorySessions::find(
    const PeerIdentity& caller, std::string_view token) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(std::string(token));
  if (it == sessions_.end() || it->second.owner != caller.owner()) {
    return absl::NotFoundError(
        "no such shared-memory session for this caller (the ps restarted, or the session was "
        "idle and closed); open a new one");
  }
  it->second.last_used = absl::Now();
  return it->second.region;
}

absl::Status SharedMemorySessions::close(const PeerIdentity& caller, std::string_view token) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(std::string(token));
  if (it == sessions_.end() || it->second.owner != caller.owner()) {
    return absl::NotFoundError("no such shared-memory session for this caller");
  }
  bytes_ -= it->second.region->size();
  sessions_.erase(it);
  return absl::OkStatus();
}

int SharedMemorySessions::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(sessions_.size());
}

}  // namespace psflow::internal
