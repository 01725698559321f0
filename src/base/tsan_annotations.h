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

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_TSAN_ANNOTATIONS_H_
