// A shared library built without TSan, as Debian's gRPC, abseil and OpenSSL
// are: what tsan_options_test checks the TSan options against (TSan builds
// only). Its mutex is a pthread one, whose calls TSan intercepts; its loads
// and stores are invisible to TSan; its memcpy is intercepted.
#include <pthread.h>
#include <time.h>

#include <cstring>

namespace {
pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t published = PTHREAD_COND_INITIALIZER;
int ready = 0;
}  // namespace

extern "C" {

// Publishes under the library's mutex.
void psflow_tsan_probe_publish() {
  pthread_mutex_lock(&mu);
  ready = 1;
  pthread_cond_broadcast(&published);
  pthread_mutex_unlock(&mu);
}

// Waits, under the same mutex, until psflow_tsan_probe_publish ran or
// `seconds` passed; whether it ran.
int psflow_tsan_probe_wait_published(int seconds) {
  timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += seconds;
  pthread_mutex_lock(&mu);
  int timed_out = 0;
  // Bounded by the deadline.
  while (ready == 0 && timed_out == 0) {
    timed_out = pthread_cond_timedwait(&published, &mu, &deadline) != 0 ? 1 : 0;
  }
  const int r = ready;
  pthread_mutex_unlock(&mu);
  return r;
}

// A copy made by the library (a TLS or TCP writer copying a message).
void psflow_tsan_probe_copy(char* to, const char* from, unsigned long n) {
  std::memcpy(to, from, n);
}

}  // extern "C"
