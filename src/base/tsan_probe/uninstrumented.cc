// A shared library built without TSan, as Debian's gRPC, abseil and OpenSSL
// are: what tsan_options_test checks the TSan options against (TSan builds
// only). Its mutex is a pthread one, whose calls TSan intercepts; its loads
// and stores are invisible to TSan; its memcpy is intercepted.
#include <pthread.h>

#include <cstring>

namespace {
pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
int ready = 0;
}  // namespace

extern "C" {

// Publishes under the library's mutex.
void psflow_tsan_probe_publish() {
  pthread_mutex_lock(&mu);
  ready = 1;
  pthread_mutex_unlock(&mu);
}

// Whether psflow_tsan_probe_publish ran, read under the same mutex.
int psflow_tsan_probe_ready() {
  pthread_mutex_lock(&mu);
  const int r = ready;
  pthread_mutex_unlock(&mu);
  return r;
}

// A copy made by the library (a TLS or TCP writer copying a message).
void psflow_tsan_probe_copy(char* to, const char* from, unsigned long n) {
  std::memcpy(to, from, n);
}

}  // extern "C"
