#include "train/step_scalars.h"

#include <algorithm>

#include "absl/time/clock.h"
#include "train/step_config.h"

namespace psflow::internal {

double LearningRateSchedule::at(int64_t step) const {
  if (decay_steps <= 0) return learning_rate;
  return cosine_decay(learning_rate, decay_steps, alpha, step);
}

StepScalars::StepScalars(EventWriter* events, LearningRateSchedule schedule, int64_t batch_size,
                         int64_t interval)
    : events_(events),
      schedule_(schedule),
      batch_size_(batch_size),
      interval_(std::max<int64_t>(interval, 1)),
      last_time_(absl::Now()) {}

void StepScalars::begin_epoch(int64_t first_step) {
  first_step_ = first_step;
  last_done_ = 0;
  last_loss_sum_ = 0.0;
  last_time_ = absl::Now();
}

void StepScalars::on_steps(int64_t done, double mean_loss) {
  if (events_ == nullptr || !status_.ok() || done <= last_done_) return;
  const int64_t step = first_step_ + done;
  if (step / interval_ == (first_step_ + last_done_) / interval_) return;
  const absl::Time now = absl::Now();
  const double loss_sum = mean_loss * static_cast<double>(done);
  const int64_t steps = done - last_done_;
  const double seconds = absl::ToDoubleSeconds(now - last_time_);
  const double loss = (loss_sum - last_loss_sum_) / static_cast<double>(steps);
  const double rate = seconds > 0 ? static_cast<double>(steps * batch_size_) / seconds : 0.0;
  // The rate of the last step taken (the schedule counts steps from 0).
  const double learning_rate = schedule_.at(step - 1);
  for (const auto& [tag, value] : {std::pair<const char*, double>{"step/loss", loss},
                                   {"step/learning_rate", learning_rate},
                                   {"step/examples_per_sec", rate}}) {
    status_ = events_->add_scalar(tag, value, step);
    if (!status_.ok()) return;
  }
  last_done_ = done;
  last_loss_sum_ = loss_sum;
  last_time_ = now;
}

}  // namespace psflow::internal
