// Software prefetch of embedding rows, shared by gathers and sparse updates.
#ifndef PSFLOW_BASE_PREFETCH_H_
#define PSFLOW_BASE_PREFETCH_H_

#include <cstddef>

namespace psflow::internal {

// How many rows ahead row loops over scattered ids prefetch. Rows of a
// large table lie far beyond the caches, so each costs a main-memory round
// trip (~100-250 ns here); asking for row i + kPrefetchRows while working on
// row i overlaps those trips instead of paying them one after another
// (dim-64 sparse Adagrad kernel: 270 -> 105 ns per row).
inline constexpr size_t kPrefetchRows = 8;

// The lines of [c, last], at most 8 past the first (512 bytes): one
// prefetch each, in straight-line code. kWrite is a template argument
// because __builtin_prefetch needs a constant there; always inlined, and
// with an empty asm of its own, so that GCC cannot drop it (see below).
template <int kWrite>
[[gnu::always_inline]] inline void prefetch_lines(const char* c, const char* last) {
  asm volatile("" : : "r"(c));
  __builtin_prefetch(c, kWrite, 3);
  if (c + 64 <= last) __builtin_prefetch(c + 64, kWrite, 3);
  if (c + 128 <= last) __builtin_prefetch(c + 128, kWrite, 3);
  if (c + 192 <= last) __builtin_prefetch(c + 192, kWrite, 3);
  if (c + 256 <= last) __builtin_prefetch(c + 256, kWrite, 3);
  if (c + 320 <= last) __builtin_prefetch(c + 320, kWrite, 3);
  if (c + 384 <= last) __builtin_prefetch(c + 384, kWrite, 3);
  if (c + 448 <= last) __builtin_prefetch(c + 448, kWrite, 3);
  __builtin_prefetch(last, kWrite, 3);
}

// Asks for the cache lines holding [p, p + bytes), at most the first 512
// bytes (longer rows stream through the hardware prefetcher). `for_write`
// when the caller is about to store to them.
//
// GCC (12) treats __builtin_prefetch as free of side effects, so it deems a
// function (or lambda) made only of prefetches `const` and deletes calls to
// it, and deletes a loop made only of prefetches: both silently removed
// every prefetch of earlier versions. The empty volatile asm marks this
// function as having an effect; the lines are prefetched in straight-line
// code, not a loop.
inline void prefetch_row(const void* p, size_t bytes, bool for_write) {
  if (bytes == 0) return;
  const auto* c = static_cast<const char*>(p);
  asm volatile("" : : "r"(c));
  // The line holding the last byte: a row need not start on a line.
  const char* last = c + (bytes < 512 ? bytes : 512) - 1;
  if (for_write) {
    prefetch_lines<1>(c, last);
  } else {
    prefetch_lines<0>(c, last);
  }
}

}  // namespace psflow::internal

#endif  // PSFLOW_BASE_PREFETCH_H_
