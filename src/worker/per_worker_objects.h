// A worker's per-worker objects (internal): the iterators over its copies
// of per-worker datasets and its copies of per-worker resources, as
// WorkerContext keeps them in WorkerResources, and their release when the
// coordinator has dropped every handle to them (DisposePerWorker, the
// batched disposal of TFF's executor protocol).
#ifndef PSFLOW_WORKER_PER_WORKER_OBJECTS_H_
#define PSFLOW_WORKER_PER_WORKER_OBJECTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "psflow/worker_context.h"

namespace psflow::internal {

// The WorkerResources keys of the iterator and of the resource with handle
// id `id`.
[[nodiscard]] std::string per_worker_iterator_key(std::string_view id);
[[nodiscard]] std::string per_worker_resource_key(std::string_view id);

// How many per-worker objects a worker holds (GetExecutorStats).
struct PerWorkerObjectCounts {
  int64_t iterators = 0;
  int64_t resources = 0;
};
[[nodiscard]] PerWorkerObjectCounts count_per_worker_objects(const WorkerResources& resources);

// The most ids one release takes, and the longest id: bounds on what a
// DisposePerWorker request may ask (ids are made by new_per_worker_id and
// the coordinator's registry, well under this length).
inline constexpr size_t kMaxReleasedIdsPerRequest = 100000;
inline constexpr size_t kMaxPerWorkerIdBytes = 256;

// INVALID_ARGUMENT naming the problem when `ids` exceed the bounds above
// or hold an empty id; checked before anything is released.
[[nodiscard]] absl::Status validate_per_worker_ids(const std::vector<std::string>& ids);

// Drops the iterator and the resource of each id; ids this worker never
// built (it restarted, or never ran a closure using them) are skipped, as
// TFF's service accepts late disposes. Each id is also remembered (the
// last kRememberedReleases of them), so that a closure arriving late with
// a released handle fails rather than building the object again. Returns
// how many objects were dropped.
int64_t release_per_worker_objects(WorkerResources& resources, const std::vector<std::string>& ids);
inline constexpr size_t kRememberedReleases = 65536;

// Whether `id` was released on this worker (among the remembered ones).
[[nodiscard]] bool per_worker_released(WorkerResources& resources, std::string_view id);

// A call's failure caused by a per-worker input that could not be built
// (WorkerContext::per_worker_input_error): `input_error` marked as such,
// so that the coordinator reports it as a closure input error. The mark is
// a payload in the process and RunFunctionResponse.input_error on the wire.
[[nodiscard]] absl::Status mark_per_worker_input_error(absl::Status input_error);
[[nodiscard]] bool is_per_worker_input_error(const absl::Status& status);

}  // namespace psflow::internal

#endif  // PSFLOW_WORKER_PER_WORKER_OBJECTS_H_
