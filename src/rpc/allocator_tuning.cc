#include "rpc/allocator_tuning.h"

#include <malloc.h>

#include <mutex>

namespace psflow::internal {

void tune_allocator_for_transfers() {
  static std::once_flag once;
  std::call_once(once, [] {
    // glibc caps M_MMAP_THRESHOLD at 32 MiB on 64-bit systems. Setting
    // either value also turns off glibc's dynamic threshold adjustment.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 20);
  });
}

}  // namespace psflow::internal
