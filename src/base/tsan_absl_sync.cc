// TSan builds only (make tsan): tells ThreadSanitizer what abseil's
// synchronization does. Debian's abseil is not built with TSan, so its
// Mutex, CondVar, Notification, BlockingCounter and Barrier synchronize
// through atomics and futexes TSan never sees (and so does Status's
// reference count), and every access guarded by
// them would be reported as a race.
//
// This file defines abseil's entry points themselves (their mangled names)
// in the executable, which exports them (cmake/psflow_sanitize.cmake):
// the dynamic linker binds every caller to these definitions, psflow's
// own calls and those of Debian's libgrpc, libgpr and libabsl_* alike
// (symbol interposition; -Wl,--wrap would reach psflow's calls only, and
// gRPC's locks would stay invisible). Each definition calls the library's
// function (dlsym(RTLD_NEXT)) and adds the happens-before edge it implies
// (__tsan_acquire / __tsan_release on the object), the edges abseil's own
// TSan build would annotate. Lock-order (deadlock) reports are not
// produced for these mutexes.
//
// The accesses made inside every wrapped call are ignored: abseil's own
// bookkeeping (its waiter queues, and the deadlock detector's graph that
// Debian's build keeps, in libabsl_graphcycles_internal) is synchronized
// by abseil's internal spin locks, invisible to TSan, and is reported
// otherwise where it reaches an interceptor (memmove, malloc). That also
// covers a waiter's Condition (Await, LockWhen), which abseil evaluates
// with the mutex held but inside the library, in the waiting thread or in
// the one that unlocks: a Condition only reads what the mutex guards, and
// every write to that is seen elsewhere.
//
// Thread-safety: stateless wrappers; safe wherever the wrapped call is.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) && defined(PSFLOW_ABSL_MANGLED_NAMESPACE)

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/barrier.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();

namespace {

// The mangled name of abseil's member function `suffix`
// (PSFLOW_ABSL_MANGLED_NAMESPACE is "4absl<length><inline namespace>",
// from CMake); the _CONST form for const member functions.
#define PSFLOW_ABSL(suffix) "_ZN" PSFLOW_ABSL_MANGLED_NAMESPACE suffix
#define PSFLOW_ABSL_CONST(suffix) "_ZNK" PSFLOW_ABSL_MANGLED_NAMESPACE suffix

// The library's definition of `name`, the one this file's definition
// interposes. Without it nothing can run correctly: abort.
void* library_function(const char* name) {
  void* fn = dlsym(RTLD_NEXT, name);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: abseil's %s not found: %s\n", name, dlerror());
    std::abort();
  }
  return fn;
}

using absl::BlockingCounter;
using absl::Condition;
using absl::CondVar;
using absl::Duration;
using absl::Mutex;
using absl::Notification;
using absl::Time;

// Notification::HasBeenNotified is inline: its acquire-load of the flag is
// instrumented, so Notify also releases at the flag's address (the member
// after the Mutex).
static_assert(sizeof(Notification) == sizeof(Mutex) + alignof(Mutex));
void* notified_flag(const Notification* n) {
  return const_cast<char*>(reinterpret_cast<const char*>(n) + sizeof(Mutex));
}
void* addr(const void* p) { return const_cast<void*>(p); }

}  // namespace

// Itanium C++ ABI: a member function is a function taking `this` first.
extern "C" {

void interposed_lock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex4LockEv"));
void interposed_lock(Mutex* mu) {
  static const auto real_lock =
      reinterpret_cast<void (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex4LockEv")));
  __tsan_ignore_thread_begin();
  real_lock(mu);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
void interposed_unlock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex6UnlockEv"));
void interposed_unlock(Mutex* mu) {
  static const auto real_unlock =
      reinterpret_cast<void (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex6UnlockEv")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_unlock(mu);
  __tsan_ignore_thread_end();
}
bool interposed_try_lock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex7TryLockEv"));
bool interposed_try_lock(Mutex* mu) {
  static const auto real_try_lock =
      reinterpret_cast<bool (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex7TryLockEv")));
  __tsan_ignore_thread_begin();
  const bool locked = real_try_lock(mu);
  __tsan_ignore_thread_end();
  if (locked) __tsan_acquire(mu);
  return locked;
}
void interposed_reader_lock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex10ReaderLockEv"));
void interposed_reader_lock(Mutex* mu) {
  static const auto real_reader_lock =
      reinterpret_cast<void (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex10ReaderLockEv")));
  __tsan_ignore_thread_begin();
  real_reader_lock(mu);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
void interposed_reader_unlock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex12ReaderUnlockEv"));
void interposed_reader_unlock(Mutex* mu) {
  static const auto real_reader_unlock =
      reinterpret_cast<void (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex12ReaderUnlockEv")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_reader_unlock(mu);
  __tsan_ignore_thread_end();
}
bool interposed_reader_try_lock(Mutex* mu) __asm__(PSFLOW_ABSL("5Mutex13ReaderTryLockEv"));
bool interposed_reader_try_lock(Mutex* mu) {
  static const auto real_reader_try_lock =
      reinterpret_cast<bool (*)(Mutex*)>(library_function(PSFLOW_ABSL("5Mutex13ReaderTryLockEv")));
  __tsan_ignore_thread_begin();
  const bool locked = real_reader_try_lock(mu);
  __tsan_ignore_thread_end();
  if (locked) __tsan_acquire(mu);
  return locked;
}
void interposed_lock_when(Mutex* mu, const Condition& c) __asm__(
    PSFLOW_ABSL("5Mutex8LockWhenERKNS0_9ConditionE"));
void interposed_lock_when(Mutex* mu, const Condition& c) {
  static const auto real_lock_when = reinterpret_cast<void (*)(Mutex*, const Condition&)>(
      library_function(PSFLOW_ABSL("5Mutex8LockWhenERKNS0_9ConditionE")));
  __tsan_ignore_thread_begin();
  real_lock_when(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
void interposed_reader_lock_when(Mutex* mu, const Condition& c) __asm__(
    PSFLOW_ABSL("5Mutex14ReaderLockWhenERKNS0_9ConditionE"));
void interposed_reader_lock_when(Mutex* mu, const Condition& c) {
  static const auto real_reader_lock_when = reinterpret_cast<void (*)(Mutex*, const Condition&)>(
      library_function(PSFLOW_ABSL("5Mutex14ReaderLockWhenERKNS0_9ConditionE")));
  __tsan_ignore_thread_begin();
  real_reader_lock_when(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
// The *WithTimeout / *WithDeadline forms hold the lock on return either way.
bool interposed_lock_when_timeout(Mutex* mu, const Condition& c, Duration d) __asm__(
    PSFLOW_ABSL("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
bool interposed_lock_when_timeout(Mutex* mu, const Condition& c, Duration d) {
  static const auto real_lock_when_timeout =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Duration)>(library_function(
          PSFLOW_ABSL("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE")));
  __tsan_ignore_thread_begin();
  const bool met = real_lock_when_timeout(mu, c, d);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
bool interposed_lock_when_deadline(Mutex* mu, const Condition& c, Time t) __asm__(
    PSFLOW_ABSL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
bool interposed_lock_when_deadline(Mutex* mu, const Condition& c, Time t) {
  static const auto real_lock_when_deadline =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Time)>(library_function(
          PSFLOW_ABSL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE")));
  __tsan_ignore_thread_begin();
  const bool met = real_lock_when_deadline(mu, c, t);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
// Await and CondVar waits release the mutex while they wait.
void interposed_await(Mutex* mu,
                      const Condition& c) __asm__(PSFLOW_ABSL("5Mutex5AwaitERKNS0_9ConditionE"));
void interposed_await(Mutex* mu, const Condition& c) {
  static const auto real_await = reinterpret_cast<void (*)(Mutex*, const Condition&)>(
      library_function(PSFLOW_ABSL("5Mutex5AwaitERKNS0_9ConditionE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_await(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
bool interposed_await_timeout(Mutex* mu, const Condition& c, Duration d) __asm__(
    PSFLOW_ABSL("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE"));
bool interposed_await_timeout(Mutex* mu, const Condition& c, Duration d) {
  static const auto real_await_timeout =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Duration)>(library_function(
          PSFLOW_ABSL("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool met = real_await_timeout(mu, c, d);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
bool interposed_await_deadline(Mutex* mu, const Condition& c, Time t) __asm__(
    PSFLOW_ABSL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE"));
bool interposed_await_deadline(Mutex* mu, const Condition& c, Time t) {
  static const auto real_await_deadline =
      reinterpret_cast<bool (*)(Mutex*, const Condition&, Time)>(
          library_function(PSFLOW_ABSL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool met = real_await_deadline(mu, c, t);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
void interposed_cv_wait(CondVar* cv, Mutex* mu) __asm__(PSFLOW_ABSL("7CondVar4WaitEPNS0_5MutexE"));
void interposed_cv_wait(CondVar* cv, Mutex* mu) {
  static const auto real_cv_wait = reinterpret_cast<void (*)(CondVar*, Mutex*)>(
      library_function(PSFLOW_ABSL("7CondVar4WaitEPNS0_5MutexE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_cv_wait(cv, mu);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
bool interposed_cv_wait_timeout(CondVar* cv, Mutex* mu, Duration d) __asm__(
    PSFLOW_ABSL("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE"));
bool interposed_cv_wait_timeout(CondVar* cv, Mutex* mu, Duration d) {
  static const auto real_cv_wait_timeout = reinterpret_cast<bool (*)(CondVar*, Mutex*, Duration)>(
      library_function(PSFLOW_ABSL("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool timed_out = real_cv_wait_timeout(cv, mu, d);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return timed_out;
}
bool interposed_cv_wait_deadline(CondVar* cv, Mutex* mu, Time t) __asm__(
    PSFLOW_ABSL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE"));
bool interposed_cv_wait_deadline(CondVar* cv, Mutex* mu, Time t) {
  static const auto real_cv_wait_deadline = reinterpret_cast<bool (*)(CondVar*, Mutex*, Time)>(
      library_function(PSFLOW_ABSL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE")));
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool timed_out = real_cv_wait_deadline(cv, mu, t);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return timed_out;
}
void interposed_notify(Notification* n) __asm__(PSFLOW_ABSL("12Notification6NotifyEv"));
void interposed_notify(Notification* n) {
  static const auto real_notify = reinterpret_cast<void (*)(Notification*)>(
      library_function(PSFLOW_ABSL("12Notification6NotifyEv")));
  __tsan_release(n);
  __tsan_release(notified_flag(n));
  __tsan_ignore_thread_begin();
  real_notify(n);
  __tsan_ignore_thread_end();
}
void interposed_wait_notification(const Notification* n) __asm__(
    PSFLOW_ABSL_CONST("12Notification19WaitForNotificationEv"));
void interposed_wait_notification(const Notification* n) {
  static const auto real_wait_notification = reinterpret_cast<void (*)(const Notification*)>(
      library_function(PSFLOW_ABSL_CONST("12Notification19WaitForNotificationEv")));
  __tsan_ignore_thread_begin();
  real_wait_notification(n);
  __tsan_ignore_thread_end();
  __tsan_acquire(addr(n));
}
bool interposed_wait_notification_timeout(const Notification* n, Duration d) __asm__(
    PSFLOW_ABSL_CONST("12Notification30WaitForNotificationWithTimeoutENS0_8DurationE"));
bool interposed_wait_notification_timeout(const Notification* n, Duration d) {
  static const auto real_wait_notification_timeout =
      reinterpret_cast<bool (*)(const Notification*, Duration)>(library_function(
          PSFLOW_ABSL_CONST("12Notification30WaitForNotificationWithTimeoutENS0_8DurationE")));
  __tsan_ignore_thread_begin();
  const bool notified = real_wait_notification_timeout(n, d);
  __tsan_ignore_thread_end();
  if (notified) __tsan_acquire(addr(n));
  return notified;
}
bool interposed_wait_notification_deadline(const Notification* n, Time t) __asm__(
    PSFLOW_ABSL_CONST("12Notification31WaitForNotificationWithDeadlineENS0_4TimeE"));
bool interposed_wait_notification_deadline(const Notification* n, Time t) {
  static const auto real_wait_notification_deadline =
      reinterpret_cast<bool (*)(const Notification*, Time)>(library_function(
          PSFLOW_ABSL_CONST("12Notification31WaitForNotificationWithDeadlineENS0_4TimeE")));
  __tsan_ignore_thread_begin();
  const bool notified = real_wait_notification_deadline(n, t);
  __tsan_ignore_thread_end();
  if (notified) __tsan_acquire(addr(n));
  return notified;
}
void interposed_decrement(BlockingCounter* c) __asm__(
    PSFLOW_ABSL("15BlockingCounter14DecrementCountEv"));
void interposed_decrement(BlockingCounter* c) {
  static const auto real_decrement = reinterpret_cast<void (*)(BlockingCounter*)>(
      library_function(PSFLOW_ABSL("15BlockingCounter14DecrementCountEv")));
  __tsan_release(c);
  __tsan_ignore_thread_begin();
  real_decrement(c);
  __tsan_ignore_thread_end();
}
void interposed_counter_wait(BlockingCounter* c) __asm__(PSFLOW_ABSL("15BlockingCounter4WaitEv"));
void interposed_counter_wait(BlockingCounter* c) {
  static const auto real_counter_wait = reinterpret_cast<void (*)(BlockingCounter*)>(
      library_function(PSFLOW_ABSL("15BlockingCounter4WaitEv")));
  __tsan_ignore_thread_begin();
  real_counter_wait(c);
  __tsan_ignore_thread_end();
  __tsan_acquire(c);
}
bool interposed_barrier_block(absl::Barrier* b) __asm__(PSFLOW_ABSL("7Barrier5BlockEv"));
bool interposed_barrier_block(absl::Barrier* b) {
  static const auto real_barrier_block =
      reinterpret_cast<bool (*)(absl::Barrier*)>(library_function(PSFLOW_ABSL("7Barrier5BlockEv")));
  __tsan_release(b);
  __tsan_ignore_thread_begin();
  const bool last = real_barrier_block(b);
  __tsan_ignore_thread_end();
  __tsan_acquire(b);
  return last;
}
// absl::Status keeps its message and payloads in a heap rep shared by a
// reference count (an atomic inside libabsl_status, incremented by inline
// code): the copy that drops the last reference frees the rep, after the
// other owners' last use. Every drop releases on the rep and acquires what
// the earlier drops released, so that free is ordered after them, as
// abseil's own TSan build would see it.
void interposed_status_unref(uintptr_t rep) __asm__(PSFLOW_ABSL("6Status15UnrefNonInlinedEm"));
void interposed_status_unref(uintptr_t rep) {
  static const auto real_status_unref = reinterpret_cast<void (*)(uintptr_t)>(
      library_function(PSFLOW_ABSL("6Status15UnrefNonInlinedEm")));
  __tsan_release(reinterpret_cast<void*>(rep));
  __tsan_acquire(reinterpret_cast<void*>(rep));
  real_status_unref(rep);
}
}  // extern "C"

#endif  // thread_sanitizer && PSFLOW_ABSL_MANGLED_NAMESPACE
#endif  // __has_feature
