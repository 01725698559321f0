// The parameters of a closure's next training step, read in the background
// (internal): a worker that overlaps communication with computation starts
// reading them as soon as the step before has taken its own, and the
// forward pass takes each layer's parameters as they arrive.
#ifndef PSFLOW_TRAIN_PARAMETER_PREFETCH_H_
#define PSFLOW_TRAIN_PARAMETER_PREFETCH_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "psflow/tensor.h"

namespace psflow::internal {

// Reads `num_groups` groups of parameters (a layer's kernel and bias, say)
// one after the other, group 0 first, on its own thread: the order a
// forward pass needs them in. One read of all the groups at a time.
// Thread-safety: thread-safe.
class ParameterPrefetch {
 public:
  // Reads group g (called on the prefetch thread).
  using Read = std::function<absl::StatusOr<std::vector<Tensor>>(size_t group)>;
  // Runs before a read's first group (e.g. waits for earlier pushes); an
  // error fails every group of that read.
  using Before = std::function<absl::Status()>;

  ParameterPrefetch(size_t num_groups, Read read);
  // Waits for the read in flight.
  ~ParameterPrefetch();
  ParameterPrefetch(const ParameterPrefetch&) = delete;
  ParameterPrefetch& operator=(const ParameterPrefetch&) = delete;

  // Starts a read of every group, after `before`, once the previous read
  // has finished (its groups not taken are dropped).
  void start(Before before);
  // Waits for group `g` of the read started last and hands it over (once).
  [[nodiscard]] absl::StatusOr<std::vector<Tensor>> take(size_t g);

 private:
  void loop();

  const size_t num_groups_;
  const Read read_;
  absl::Mutex mu_;
  absl::CondVar changed_;
  std::optional<Before> request_ ABSL_GUARDED_BY(mu_);  // a read to start
  bool reading_ ABSL_GUARDED_BY(mu_) = false;           // a read in progress
  std::vector<std::optional<absl::StatusOr<std::vector<Tensor>>>> results_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PARAMETER_PREFETCH_H_
