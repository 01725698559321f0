// The program tsan_options_test runs under TSan with the options make tsan
// uses (TSan builds only). One case per run, named by argv[1]:
//   library-sync  psflow code writes, then publishes through the
//                 uninstrumented library's mutex; another thread waits on
//                 that mutex and reads: ordered, no report expected.
//   library-copy  psflow code fills a buffer while the library copies it,
//                 unordered: reported unless TSan ignores what uninstrumented
//                 code does through intercepted calls.
//   own-race      two psflow threads write one variable, unordered: a race
//                 in instrumented code, reported whatever the options.
// Exits 0 once the case ran (TSan's reports go to stderr), 2 on a bad case
// or a case that could not run.
#include <pthread.h>

#include <cstdio>
#include <cstring>
#include <string_view>

extern "C" {
void psflow_tsan_probe_publish();
int psflow_tsan_probe_wait_published(int seconds);
void psflow_tsan_probe_copy(char* to, const char* from, unsigned long n);
}

namespace {

int shared_value = 0;
char buffer[64];

void* publish(void*) {
  shared_value = 42;
  psflow_tsan_probe_publish();
  return nullptr;
}

void* wait_and_read(void* out) {
  *static_cast<int*>(out) = psflow_tsan_probe_wait_published(10) != 0 ? shared_value : -1;
  return nullptr;
}

void* fill(void*) {
  std::memset(buffer, 1, sizeof(buffer));
  return nullptr;
}

void* library_copy(void*) {
  char copy[sizeof(buffer)];
  psflow_tsan_probe_copy(copy, buffer, sizeof(buffer));
  return nullptr;
}

void* write_value(void*) {
  shared_value += 1;
  return nullptr;
}

bool run_pair(void* (*first)(void*), void* (*second)(void*), void* second_arg) {
  pthread_t a;
  pthread_t b;
  if (pthread_create(&a, nullptr, first, nullptr) != 0) return false;
  if (pthread_create(&b, nullptr, second, second_arg) != 0) {
    pthread_join(a, nullptr);
    return false;
  }
  pthread_join(a, nullptr);
  pthread_join(b, nullptr);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view which = argc > 1 ? argv[1] : "";
  if (which == "library-sync") {
    int read = 0;
    if (!run_pair(publish, wait_and_read, &read) || read != 42) return 2;
  } else if (which == "library-copy") {
    if (!run_pair(fill, library_copy, nullptr)) return 2;
  } else if (which == "own-race") {
    if (!run_pair(write_value, write_value, nullptr)) return 2;
  } else {
    std::fprintf(stderr, "usage: %s library-sync|library-copy|own-race\n", argv[0]);
    return 2;
  }
  return 0;
}
