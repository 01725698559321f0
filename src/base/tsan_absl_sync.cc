// TSan builds only (make tsan): tells ThreadSanitizer what abseil's
// synchronization does. Debian's abseil is not built with TSan, so its
// Mutex, CondVar, Notification, BlockingCounter and Barrier synchronize
// through atomics and futexes TSan never sees, and every access guarded by
// them would be reported as a race. The TSan build links with
// -Wl,--wrap=<symbol> for each of their entry points
// (cmake/psflow_sanitize.cmake), which sends our calls to the wrappers
// below; each calls the real function and adds the happens-before edge it
// implies (__tsan_acquire / __tsan_release on the object), the edges
// abseil's own TSan build would annotate. Lock-order (deadlock) reports
// are not produced for these mutexes.
//
// abseil evaluates a waiter's Condition (Await, LockWhen) with the mutex
// held but inside the library, in the waiting thread or in the one that
// unlocks: TSan cannot see that lock, so the accesses of those calls are
// ignored (a Condition only reads what the mutex guards, and every write
// to that is seen elsewhere).
//
// Thread-safety: stateless wrappers; safe wherever the wrapped call is.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer) && defined(PSFLOW_ABSL_MANGLED_NAMESPACE)

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
// from CMake) behind __real_ (the library's function) or __wrap_ (ours);
// the _CONST forms for const member functions.
#define PSFLOW_REAL(suffix) __asm__("__real__ZN" PSFLOW_ABSL_MANGLED_NAMESPACE suffix)
#define PSFLOW_WRAP(suffix) __asm__("__wrap__ZN" PSFLOW_ABSL_MANGLED_NAMESPACE suffix)
#define PSFLOW_REAL_CONST(suffix) __asm__("__real__ZNK" PSFLOW_ABSL_MANGLED_NAMESPACE suffix)
#define PSFLOW_WRAP_CONST(suffix) __asm__("__wrap__ZNK" PSFLOW_ABSL_MANGLED_NAMESPACE suffix)

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
void real_lock(Mutex*) PSFLOW_REAL("5Mutex4LockEv");
void real_unlock(Mutex*) PSFLOW_REAL("5Mutex6UnlockEv");
bool real_try_lock(Mutex*) PSFLOW_REAL("5Mutex7TryLockEv");
void real_reader_lock(Mutex*) PSFLOW_REAL("5Mutex10ReaderLockEv");
void real_reader_unlock(Mutex*) PSFLOW_REAL("5Mutex12ReaderUnlockEv");
bool real_reader_try_lock(Mutex*) PSFLOW_REAL("5Mutex13ReaderTryLockEv");
void real_lock_when(Mutex*, const Condition&) PSFLOW_REAL("5Mutex8LockWhenERKNS0_9ConditionE");
void real_reader_lock_when(Mutex*, const Condition&)
    PSFLOW_REAL("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
bool real_lock_when_timeout(Mutex*, const Condition&, Duration)
    PSFLOW_REAL("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
bool real_lock_when_deadline(Mutex*, const Condition&, Time)
    PSFLOW_REAL("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
void real_await(Mutex*, const Condition&) PSFLOW_REAL("5Mutex5AwaitERKNS0_9ConditionE");
bool real_await_timeout(Mutex*, const Condition&, Duration)
    PSFLOW_REAL("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
bool real_await_deadline(Mutex*, const Condition&, Time)
    PSFLOW_REAL("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
void real_cv_wait(CondVar*, Mutex*) PSFLOW_REAL("7CondVar4WaitEPNS0_5MutexE");
bool real_cv_wait_timeout(CondVar*, Mutex*, Duration)
    PSFLOW_REAL("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
bool real_cv_wait_deadline(CondVar*, Mutex*, Time)
    PSFLOW_REAL("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
void real_notify(Notification*) PSFLOW_REAL("12Notification6NotifyEv");
void real_wait_notification(const Notification*)
    PSFLOW_REAL_CONST("12Notification19WaitForNotificationEv");
bool real_wait_notification_timeout(const Notification*, Duration)
    PSFLOW_REAL_CONST("12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
bool real_wait_notification_deadline(const Notification*, Time)
    PSFLOW_REAL_CONST("12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
void real_decrement(BlockingCounter*) PSFLOW_REAL("15BlockingCounter14DecrementCountEv");
void real_counter_wait(BlockingCounter*) PSFLOW_REAL("15BlockingCounter4WaitEv");
bool real_barrier_block(absl::Barrier*) PSFLOW_REAL("7Barrier5BlockEv");

void wrap_lock(Mutex* mu) PSFLOW_WRAP("5Mutex4LockEv");
void wrap_lock(Mutex* mu) {
  real_lock(mu);
  __tsan_acquire(mu);
}
void wrap_unlock(Mutex* mu) PSFLOW_WRAP("5Mutex6UnlockEv");
void wrap_unlock(Mutex* mu) {
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_unlock(mu);
  __tsan_ignore_thread_end();
}
bool wrap_try_lock(Mutex* mu) PSFLOW_WRAP("5Mutex7TryLockEv");
bool wrap_try_lock(Mutex* mu) {
  const bool locked = real_try_lock(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}
void wrap_reader_lock(Mutex* mu) PSFLOW_WRAP("5Mutex10ReaderLockEv");
void wrap_reader_lock(Mutex* mu) {
  real_reader_lock(mu);
  __tsan_acquire(mu);
}
void wrap_reader_unlock(Mutex* mu) PSFLOW_WRAP("5Mutex12ReaderUnlockEv");
void wrap_reader_unlock(Mutex* mu) {
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_reader_unlock(mu);
  __tsan_ignore_thread_end();
}
bool wrap_reader_try_lock(Mutex* mu) PSFLOW_WRAP("5Mutex13ReaderTryLockEv");
bool wrap_reader_try_lock(Mutex* mu) {
  const bool locked = real_reader_try_lock(mu);
  if (locked) __tsan_acquire(mu);
  return locked;
}
void wrap_lock_when(Mutex* mu, const Condition& c) PSFLOW_WRAP("5Mutex8LockWhenERKNS0_9ConditionE");
void wrap_lock_when(Mutex* mu, const Condition& c) {
  __tsan_ignore_thread_begin();
  real_lock_when(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
void wrap_reader_lock_when(Mutex* mu, const Condition& c)
    PSFLOW_WRAP("5Mutex14ReaderLockWhenERKNS0_9ConditionE");
void wrap_reader_lock_when(Mutex* mu, const Condition& c) {
  __tsan_ignore_thread_begin();
  real_reader_lock_when(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
// The *WithTimeout / *WithDeadline forms hold the lock on return either way.
bool wrap_lock_when_timeout(Mutex* mu, const Condition& c, Duration d)
    PSFLOW_WRAP("5Mutex19LockWhenWithTimeoutERKNS0_9ConditionENS0_8DurationE");
bool wrap_lock_when_timeout(Mutex* mu, const Condition& c, Duration d) {
  __tsan_ignore_thread_begin();
  const bool met = real_lock_when_timeout(mu, c, d);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
bool wrap_lock_when_deadline(Mutex* mu, const Condition& c, Time t)
    PSFLOW_WRAP("5Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
bool wrap_lock_when_deadline(Mutex* mu, const Condition& c, Time t) {
  __tsan_ignore_thread_begin();
  const bool met = real_lock_when_deadline(mu, c, t);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
// Await and CondVar waits release the mutex while they wait.
void wrap_await(Mutex* mu, const Condition& c) PSFLOW_WRAP("5Mutex5AwaitERKNS0_9ConditionE");
void wrap_await(Mutex* mu, const Condition& c) {
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  real_await(mu, c);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
}
bool wrap_await_timeout(Mutex* mu, const Condition& c, Duration d)
    PSFLOW_WRAP("5Mutex16AwaitWithTimeoutERKNS0_9ConditionENS0_8DurationE");
bool wrap_await_timeout(Mutex* mu, const Condition& c, Duration d) {
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool met = real_await_timeout(mu, c, d);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
bool wrap_await_deadline(Mutex* mu, const Condition& c, Time t)
    PSFLOW_WRAP("5Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
bool wrap_await_deadline(Mutex* mu, const Condition& c, Time t) {
  __tsan_release(mu);
  __tsan_ignore_thread_begin();
  const bool met = real_await_deadline(mu, c, t);
  __tsan_ignore_thread_end();
  __tsan_acquire(mu);
  return met;
}
void wrap_cv_wait(CondVar* cv, Mutex* mu) PSFLOW_WRAP("7CondVar4WaitEPNS0_5MutexE");
void wrap_cv_wait(CondVar* cv, Mutex* mu) {
  __tsan_release(mu);
  real_cv_wait(cv, mu);
  __tsan_acquire(mu);
}
bool wrap_cv_wait_timeout(CondVar* cv, Mutex* mu, Duration d)
    PSFLOW_WRAP("7CondVar15WaitWithTimeoutEPNS0_5MutexENS0_8DurationE");
bool wrap_cv_wait_timeout(CondVar* cv, Mutex* mu, Duration d) {
  __tsan_release(mu);
  const bool timed_out = real_cv_wait_timeout(cv, mu, d);
  __tsan_acquire(mu);
  return timed_out;
}
bool wrap_cv_wait_deadline(CondVar* cv, Mutex* mu, Time t)
    PSFLOW_WRAP("7CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
bool wrap_cv_wait_deadline(CondVar* cv, Mutex* mu, Time t) {
  __tsan_release(mu);
  const bool timed_out = real_cv_wait_deadline(cv, mu, t);
  __tsan_acquire(mu);
  return timed_out;
}
void wrap_notify(Notification* n) PSFLOW_WRAP("12Notification6NotifyEv");
void wrap_notify(Notification* n) {
  __tsan_release(n);
  __tsan_release(notified_flag(n));
  real_notify(n);
}
void wrap_wait_notification(const Notification* n)
    PSFLOW_WRAP_CONST("12Notification19WaitForNotificationEv");
void wrap_wait_notification(const Notification* n) {
  real_wait_notification(n);
  __tsan_acquire(addr(n));
}
bool wrap_wait_notification_timeout(const Notification* n, Duration d)
    PSFLOW_WRAP_CONST("12Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
bool wrap_wait_notification_timeout(const Notification* n, Duration d) {
  const bool notified = real_wait_notification_timeout(n, d);
  if (notified) __tsan_acquire(addr(n));
  return notified;
}
bool wrap_wait_notification_deadline(const Notification* n, Time t)
    PSFLOW_WRAP_CONST("12Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
bool wrap_wait_notification_deadline(const Notification* n, Time t) {
  const bool notified = real_wait_notification_deadline(n, t);
  if (notified) __tsan_acquire(addr(n));
  return notified;
}
void wrap_decrement(BlockingCounter* c) PSFLOW_WRAP("15BlockingCounter14DecrementCountEv");
void wrap_decrement(BlockingCounter* c) {
  __tsan_release(c);
  real_decrement(c);
}
void wrap_counter_wait(BlockingCounter* c) PSFLOW_WRAP("15BlockingCounter4WaitEv");
void wrap_counter_wait(BlockingCounter* c) {
  real_counter_wait(c);
  __tsan_acquire(c);
}
bool wrap_barrier_block(absl::Barrier* b) PSFLOW_WRAP("7Barrier5BlockEv");
bool wrap_barrier_block(absl::Barrier* b) {
  __tsan_release(b);
  const bool last = real_barrier_block(b);
  __tsan_acquire(b);
  return last;
}
}  // extern "C"

#endif  // thread_sanitizer && PSFLOW_ABSL_MANGLED_NAMESPACE
#endif  // __has_feature
