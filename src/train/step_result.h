// What a training closure returns, whatever the model (internal): the sums
// every model reports plus the model's own metrics, in one dict that the
// coordinator adds up over an epoch.
#ifndef PSFLOW_TRAIN_STEP_RESULT_H_
#define PSFLOW_TRAIN_STEP_RESULT_H_

#include <cstdint>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "psflow/status_macros.h"
#include "psflow/structure.h"
#include "train/closure_args.h"
#include "train/train_summary.h"

namespace psflow::internal {

inline constexpr ClosureArgs kStepResultArgs{"training step result"};

// The sums of any model's steps. Thread-safety: a value type.
struct StepSums {
  double loss_sum = 0.0;  // batch-mean loss times batch size, summed
  int64_t examples = 0;
  int64_t steps = 0;

  // Mean loss per example; 0 before any.
  [[nodiscard]] double mean_loss() const;
  // {"loss_sum", "examples", "steps"} plus the model's `fields`.
  [[nodiscard]] Structure to_structure(Structure::Fields fields) const;
  // Validates: it crossed the network (counts must not be negative).
  [[nodiscard]] static absl::StatusOr<StepSums> from_structure(const Structure& s);
  void add(const StepSums& other);
};

// A model's closure result. `Metrics` is the model's part: fields() (its
// entries of the result dict), static from_structure(const Structure&
// result), merge(const Metrics&) -> absl::Status, and
// figures(const StepSums&) -> ModelMetrics (the epoch line's train side).
// Thread-safety: as Metrics.
template <typename Metrics>
struct StepResult : StepSums, Metrics {
  [[nodiscard]] Structure to_structure() const { return StepSums::to_structure(Metrics::fields()); }
  [[nodiscard]] static absl::StatusOr<StepResult> from_structure(const Structure& s) {
    PSFLOW_ASSIGN_OR_RETURN(StepSums sums, StepSums::from_structure(s));
    PSFLOW_ASSIGN_OR_RETURN(Metrics metrics, Metrics::from_structure(s));
    return StepResult{sums, std::move(metrics)};
  }
  [[nodiscard]] absl::Status add(const StepResult& other) {
    PSFLOW_RETURN_IF_ERROR(Metrics::merge(other));
    StepSums::add(other);
    return absl::OkStatus();
  }
  [[nodiscard]] ModelMetrics figures() const { return Metrics::figures(*this); }
};

// The sum of one epoch's closure results, in its model's terms.
// Thread-safety: use from one thread.
class EpochTotals {
 public:
  virtual ~EpochTotals() = default;
  // Adds one closure's result (what the model's step function returned).
  [[nodiscard]] virtual absl::Status add(const Structure& result) = 0;
  [[nodiscard]] virtual const StepSums& sums() const = 0;
  // The training side of the epoch line, from the results added so far.
  [[nodiscard]] virtual ModelMetrics figures() const = 0;
};

// EpochTotals over a model's StepResult<Metrics>.
// Thread-safety: use from one thread.
template <typename Metrics>
class StepResultTotals final : public EpochTotals {
 public:
  [[nodiscard]] absl::Status add(const Structure& result) override {
    PSFLOW_ASSIGN_OR_RETURN(StepResult<Metrics> one, StepResult<Metrics>::from_structure(result));
    return totals_.add(one);
  }
  [[nodiscard]] const StepSums& sums() const override { return totals_; }
  [[nodiscard]] ModelMetrics figures() const override { return totals_.figures(); }

 private:
  StepResult<Metrics> totals_;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_STEP_RESULT_H_
