#include "ps/client/shared_memory_client.h"

#include <iterator>
#include <utility>

#include "rpc/tensor_stream.h"

namespace psflow::internal {
namespace {

uint64_t aligned(uint64_t bytes) {
  return (bytes + SharedArena::kAlignment - 1) / SharedArena::kAlignment * SharedArena::kAlignment;
}

// Room for the results of ops whose answer size the client does not know
// (gathers and lookups without a destination buffer): larger results
// travel in the message.
constexpr uint64_t kUnknownResultBytes = uint64_t{1} << 20;

}  // namespace

SharedMemoryClientSession::SharedMemoryClientSession(std::string token,
                                                     std::unique_ptr<SharedMemoryRegion> region)
    : token_(std::move(token)), region_(std::move(region)) {
  const uint64_t begin = SharedMemoryRegion::kHeaderBytes;
  free_.emplace(begin, region_->size() - begin);
}

std::optional<SharedMemoryClientSession::Slice> SharedMemoryClientSession::allocate(
    uint64_t bytes) {
  bytes = aligned(bytes);
  absl::MutexLock lock(&mu_);
  // First fit: the low part of the region stays in use, so the pages a
  // steady workload touches are few.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const Slice slice{it->first, bytes};
    const uint64_t rest = it->second - bytes;
    const uint64_t rest_at = it->first + bytes;
    free_.erase(it);
    if (rest > 0) free_.emplace(rest_at, rest);
    return slice;
  }
  return std::nullopt;
}

void SharedMemoryClientSession::release(Slice slice) {
  absl::MutexLock lock(&mu_);
  auto next = free_.lower_bound(slice.offset);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == slice.offset) {
      slice.offset = prev->first;
      slice.bytes += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && slice.offset + slice.bytes == next->first) {
    slice.bytes += next->second;
    free_.erase(next);
  }
  free_.emplace(slice.offset, slice.bytes);
}

bool SharedMemoryClientSession::retire(Slice slice) {
  absl::MutexLock lock(&mu_);
  retired_ += slice.bytes;
  return retired_ > region_->size() / 4;
}

uint64_t shared_bytes_wanted(const ExecuteBatch& batch,
                             const std::vector<std::shared_ptr<TensorBuffer>>& destinations,
                             const ResultHint& hint) {
  using Op = v1::VariableOp;
  uint64_t bytes = 0;
  auto add = [&](const Tensor& t, WireDType wire) {
    if (t.valid() && shareable(t, wire)) bytes += aligned(content_bytes(t, wire));
  };
  bool unknown_result = false;
  size_t result = 0;
  for (const VariableOpArgs& op : batch.ops) {
    add(op.value, op.wire_dtype);
    add(op.ids, WireDType::kFloat32);
    for (const Tensor& slot : op.slots) add(slot, WireDType::kFloat32);
    // DE_STATS answers with a few numbers: a result slot, but no room.
    if (op.kind == Op::DE_STATS) ++result;
    const bool answers = op.kind == Op::READ || op.kind == Op::GATHER || op.kind == Op::DE_LOOKUP;
    if (!answers) continue;
    const TensorBuffer* destination =
        result < destinations.size() ? destinations[result].get() : nullptr;
    ++result;
    if (destination == nullptr) {
      const uint64_t last = hint ? hint(op) : 0;
      if (last >= SharedArena::kMinBytes) {
        bytes += aligned(last);
      } else if (last == 0) {
        unknown_result = true;
      }
    } else if (destination->size() >= SharedArena::kMinBytes) {
      const bool narrow = op.wire_dtype == WireDType::kBFloat16;
      bytes += aligned(narrow ? destination->size() / 2 : destination->size());
    }
  }
  if (unknown_result) bytes += kUnknownResultBytes;
  return bytes;
}

}  // namespace psflow::internal
