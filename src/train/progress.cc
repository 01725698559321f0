#include "train/progress.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace psflow::internal {

std::string format_eta(absl::Duration left) {
  const int64_t seconds =
      std::max<int64_t>(0, absl::ToInt64Seconds(left + absl::Milliseconds(500)));
  if (seconds >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
  }
  return absl::StrFormat("%d:%02d", seconds / 60, seconds % 60);
}

ProgressBar::ProgressBar(std::FILE* out, bool interactive, std::string label, int64_t total,
                         int64_t run_steps_after, StepObserver* observer)
    : out_(out),
      interactive_(interactive),
      label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      run_steps_after_(std::max<int64_t>(run_steps_after, 0)),
      observer_(observer),
      start_(absl::Now()) {}

ProgressBar ProgressBar::for_epoch(const TrainOptions& options, int epoch, int64_t steps,
                                   int64_t run_steps_after) {
  return ProgressBar(options.out, options.interactive_progress,
                     absl::StrCat("epoch ", epoch, "/", options.epochs), steps, run_steps_after,
                     options.step_observer);
}

void ProgressBar::update(int64_t done, double loss) {
  if (observer_ != nullptr) observer_->on_steps(done, loss);
  if (out_ == nullptr) return;
  if (interactive_) {
    const absl::Time now = absl::Now();
    if (done < total_ && now - last_draw_ < absl::Milliseconds(100)) return;
    last_draw_ = now;
    draw(done, loss, false);
    return;
  }
  if (done * 10 >= next_tenth_ * total_) {
    while (done * 10 >= next_tenth_ * total_) ++next_tenth_;
    draw(done, loss, true);
  }
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::finish() {
  if (out_ != nullptr && interactive_ && drawn_) {
    std::fputc('\n', out_);
    std::fflush(out_);
  }
  drawn_ = false;
}

void ProgressBar::draw(int64_t done, double loss, bool newline) {
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(std::min<int64_t>(kWidth, done * kWidth / total_));
  std::string bar(kWidth, ' ');
  for (int i = 0; i < filled; ++i) bar[i] = '=';
  if (filled < kWidth) bar[filled] = '>';
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
  std::string eta;
  if (rate > 0) {
    const auto left = [rate](int64_t steps) {
      return format_eta(absl::Seconds(static_cast<double>(std::max<int64_t>(steps, 0)) / rate));
    };
    eta = absl::StrCat(" ETA ", left(total_ - done));
    if (run_steps_after_ > 0)
      absl::StrAppend(&eta, " (run ", left(total_ - done + run_steps_after_), ")");
  }
  // "\x1b[K" clears what a longer line drawn before left on the terminal.
  std::fprintf(out_, "%s%s [%s] %lld/%lld steps %.1f steps/s loss %.4f%s%s%s",
               interactive_ ? "\r" : "", label_.c_str(), bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), rate, loss, eta.c_str(),
               interactive_ ? "\x1b[K" : "", newline ? "\n" : "");
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace psflow::internal
