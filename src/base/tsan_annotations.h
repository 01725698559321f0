// Happens-before edges that a library makes but ThreadSanitizer cannot see,
// stated at the psflow side of the hand-off. Debian's gRPC is not built
// with TSan: when it runs a reactor's OnDone on another thread after
// Finish, the ordering it guarantees is made by its own (invisible)
// synchronization. Only TSan builds emit anything; elsewhere these are
// empty inline functions.
//
// Thread-safety: stateless; callable from any thread.
#ifndef PSFLOW_BASE_TSAN_ANNOTATIONS_H_
#define PSFLOW_BASE_TSAN_ANNOTATIONS_H_

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PSFLOW_TSAN_BUILD 1
#endif
#endif

#include <memory>

#ifdef PSFLOW_TSAN_BUILD
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace psflow::internal {

// Everything this thread did before is visible to a thread that later
// calls tsan_acquire(object) (under TSan; a no-op elsewhere).
inline void tsan_release([[maybe_unused]] const void* object) {
#ifdef PSFLOW_TSAN_BUILD
  __tsan_release(const_cast<void*>(object));
#endif
}

// The counterpart of tsan_release(object).
inline void tsan_acquire([[maybe_unused]] const void* object) {
#ifdef PSFLOW_TSAN_BUILD
  __tsan_acquire(const_cast<void*>(object));
#endif
}

// The acquire half of "shared_ptr::use_count() is 1, then an acquire
// fence" (copy-on-write owners that then write in place): every other
// owner's release of its reference (the acq_rel decrement of the count,
// instrumented) happens before what follows. TSan does not model
// standalone fences, so without this it reports the owner's writes
// against the former co-owners' reads. Stated on the count's own address
// (libstdc++'s layout: {T*, control block*}, the control block {vptr,
// use count, weak count}); a no-op outside TSan builds.
template <typename T>
inline void tsan_acquire_use_count([[maybe_unused]] const std::shared_ptr<T>& owner) {
#if defined(PSFLOW_TSAN_BUILD) && defined(__GLIBCXX__)
  static_assert(sizeof(owner) == 2 * sizeof(void*));
  struct Layout {
    const void* pointer;
    char* control;
  };
  char* control = reinterpret_cast<const Layout*>(&owner)->control;
  if (control != nullptr) __tsan_acquire(control + sizeof(void*));
#endif
}

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_TSAN_ANNOTATIONS_H_
