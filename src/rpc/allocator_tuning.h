// Allocator settings for processes that move large messages.
#ifndef PSFLOW_RPC_ALLOCATOR_TUNING_H_
#define PSFLOW_RPC_ALLOCATOR_TUNING_H_

namespace psflow::internal {

// Tunes glibc's allocator, once per process, for message-sized buffers that
// are allocated and freed on every call. gRPC reads every message into
// fresh 64 KiB slices and every decoded tensor gets a fresh buffer; with
// glibc's defaults that memory goes back to the kernel after each call
// (heap trimming at 128 KiB, and an mmap per multi-MiB block whose dynamic
// threshold never catches up with same-sized requests) only to be faulted
// in again by the next call: measured ~50x more page faults and 10-15%
// lower throughput on 64 MiB pulls and pushes. Afterwards blocks up to
// 32 MiB come from the heap (tensor buffers of 4 MiB or more have their own
// cache, see tensor/tensor_buffer.cc) and up to 128 MiB of freed heap per
// arena is kept for reuse. Process-wide: psflow calls it where it owns the process's
// role (ps and worker servers) and when a VariableService client is made.
void tune_allocator_for_transfers();

}  // namespace psflow::internal

#endif  // PSFLOW_RPC_ALLOCATOR_TUNING_H_
