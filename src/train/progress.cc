#include "train/progress.h"

#include <algorithm>
#include <utility>

#include "absl/time/clock.h"

namespace psflow::internal {

ProgressBar::ProgressBar(std::FILE* out, bool interactive, std::string label, int64_t total)
    : out_(out),
      interactive_(interactive),
      label_(std::move(label)),
      total_(std::max<int64_t>(total, 1)),
      start_(absl::Now()) {}

void ProgressBar::update(int64_t done, double loss) {
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
  std::fprintf(out_, "%s%s [%s] %lld/%lld steps %.1f steps/s loss %.4f%s", interactive_ ? "\r" : "",
               label_.c_str(), bar.c_str(), static_cast<long long>(done),
               static_cast<long long>(total_), rate, loss, newline ? "\n" : "");
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace psflow::internal
