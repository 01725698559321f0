// A per-epoch progress display for long training runs (internal).
#ifndef PSFLOW_TRAIN_PROGRESS_H_
#define PSFLOW_TRAIN_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/time/time.h"

namespace psflow::internal {

// Interactive (a terminal): one line redrawn in place at most 10 times a
// second, "epoch 1/5 [=====>     ] 312/937 steps 410.2 steps/s loss 0.5123".
// Otherwise (logs, CI): the same line printed at every tenth of the total,
// so a log shows progress without thousands of lines.
// Thread-safety: use from one thread.
class ProgressBar {
 public:
  // `out` null: no output.
  ProgressBar(std::FILE* out, bool interactive, std::string label, int64_t total);
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // Finishes the line, so that an epoch that failed part way leaves the
  // next message on a line of its own.
  ~ProgressBar();
  void update(int64_t done, double loss);
  // Ends the in-place line (interactive mode). Later calls do nothing.
  void finish();

 private:
  void draw(int64_t done, double loss, bool newline);

  std::FILE* out_;
  bool interactive_;
  std::string label_;
  int64_t total_;
  absl::Time start_;
  absl::Time last_draw_ = absl::InfinitePast();
  int64_t next_tenth_ = 1;
  bool drawn_ = false;
};

}  // namespace psflow::internal

#endif  // PSFLOW_TRAIN_PROGRESS_H_
