// A per-epoch progress display for long training runs (internal).
#ifndef PSFLOW_TRAIN_PROGRESS_H_
#define PSFLOW_TRAIN_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/time/time.h"
#include "train/step_observer.h"
#include "train/train_options.h"

namespace psflow::internal {

// Interactive (a terminal): one line redrawn in place at most 10 times a
// second, "epoch 1/5 [=====>     ] 312/937 steps 410.2 steps/s loss 0.5123
// ETA 0:02 (run 0:19)": the time left in the epoch and, when epochs follow,
// in the run's training (evaluation not included), at the rate so far.
// Otherwise (logs, CI): the same line printed at every tenth of the total,
// so a log shows progress without thousands of lines.
// Thread-safety: use from one thread.
class ProgressBar {
 public:
  // `out` null: no output. `run_steps_after`: the steps of the run after
  // these `total` (0: no run ETA). `observer`, when given, sees every
  // update.
  ProgressBar(std::FILE* out, bool interactive, std::string label, int64_t total,
              int64_t run_steps_after = 0, StepObserver* observer = nullptr);
  // Epoch `epoch` of a run as `options` say (label "epoch 3/5", its output
  // and step observer): `steps` steps now, `run_steps_after` in the epochs
  // after it.
  [[nodiscard]] static ProgressBar for_epoch(const TrainOptions& options, int epoch, int64_t steps,
                                             int64_t run_steps_after);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // Finishes the line, so that an epoch that failed part way leaves the
  // next message on a line of its own.
  ~ProgressBar();
  // `done` of the total steps ran, with mean loss `loss`.
  void update(int64_t done, double loss);
  // Ends the in-place line (interactive mode). Later calls do nothing.
  void finish();

 private:
  void draw(int64_t done, double loss, bool newline);

  std::FILE* out_;
  bool interactive_;
  std::string label_;
  int64_t total_;
  int64_t run_steps_after_;
  StepObserver* observer_;
  absl::Time start_;
  absl::Time last_draw_ = absl::InfinitePast();
  int64_t next_tenth_ = 1;
  bool drawn_ = false;
};

// "1:05", "12:00:03": a time left, to the second.
[[nodiscard]] std::string format_eta(absl::Duration left);

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PROGRESS_H_
