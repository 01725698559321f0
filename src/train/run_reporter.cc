#include "train/run_reporter.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "train/run_files.h"
#include "train/run_record.h"

namespace psflow::internal {

RunReporter::RunReporter(const TrainOptions& options, absl::Time start, TrainSummary summary,
                         ToJson to_json, LearningRateSchedule schedule)
    : options_(options),
      start_(start),
      summary_(std::move(summary)),
      to_json_(std::move(to_json)),
      schedule_(schedule) {
  summary_.epochs = options.epochs;
  if (summary_.invocations.empty()) summary_.invocations.emplace_back();
}

absl::Status RunReporter::open() {
  if (options_.run_dir.empty()) return absl::OkStatus();
  PSFLOW_ASSIGN_OR_RETURN(EventWriter writer, EventWriter::create(options_.run_dir));
  events_.emplace(std::move(writer));
  step_scalars_.emplace(&*events_, schedule_, options_.batch_size);
  return write_record();
}

StepObserver* RunReporter::step_observer() {
  return step_scalars_.has_value() ? &*step_scalars_ : nullptr;
}

void RunReporter::begin_epoch() {
  if (step_scalars_.has_value()) step_scalars_->begin_epoch(summary_.steps);
}

void RunReporter::count_steps(int64_t steps) { summary_.invocations.back().steps += steps; }

absl::Status RunReporter::report(const EpochMetrics& epoch) {
  summary_.steps += epoch.steps;
  EpochMetrics& m = summary_.history.emplace_back(epoch);
  m.end_step = summary_.steps;
  m.invocation = static_cast<int>(summary_.invocations.size()) - 1;
  summary_.invocations.back().epochs.push_back(m.epoch);
  const double rate = m.seconds > 0 ? static_cast<double>(m.examples) / m.seconds : 0.0;
  if (events_.has_value()) {
    PSFLOW_RETURN_IF_ERROR(step_scalars_->status());
    std::vector<std::pair<std::string, double>> scalars = {{"train/loss", m.train.loss},
                                                           {"train/accuracy", m.train.accuracy},
                                                           {"test/loss", m.test.loss},
                                                           {"test/accuracy", m.test.accuracy},
                                                           {"train/examples_per_sec", rate}};
    const auto add_extra = [&](std::string_view side, const ModelMetrics& figures, size_t i) {
      if (i >= figures.extra.size()) return;
      scalars.emplace_back(absl::StrCat(av(side), figures.extra[i].first), figures.extra[i].second);
    };
    for (size_t i = 0; i < std::max(m.train.extra.size(), m.test.extra.size()); ++i) {
      add_extra("train/", m.train, i);
      add_extra("test/", m.test, i);
    }
    for (const auto& [tag, value] : scalars) {
      PSFLOW_RETURN_IF_ERROR(events_->add_scalar(tag, value, summary_.steps));
    }
  }
  if (options_.out != nullptr) {
    const auto extra = [](const ModelMetrics& figures) {
      std::string out;
      for (const auto& [name, value] : figures.extra) {
        absl::StrAppend(&out, " ", name, " ", absl::StrFormat("%.4f", value));
      }
      return out;
    };
    std::fprintf(options_.out,
                 "epoch %d/%d: train loss %.4f%s accuracy %.4f | test loss %.4f%s accuracy %.4f | "
                 "%lld steps in %.1f s (%.0f examples/s)\n",
                 m.epoch, options_.epochs, m.train.loss, extra(m.train).c_str(), m.train.accuracy,
                 m.test.loss, extra(m.test).c_str(), m.test.accuracy,
                 static_cast<long long>(m.steps), m.seconds, rate);
    std::fflush(options_.out);
  }
  return write_record();
}

void RunReporter::roll_back_to(int epoch, int64_t rolled_back) {
  std::vector<int>& epochs = summary_.invocations.back().epochs;
  while (!summary_.history.empty() && summary_.history.back().epoch >= epoch) {
    summary_.steps -= summary_.history.back().steps;
    summary_.history.pop_back();
  }
  std::erase_if(epochs, [epoch](int e) { return e >= epoch; });
  ++summary_.ps_recoveries;
  summary_.rolled_back_steps += rolled_back;
}

void RunReporter::update_figures() {
  summary_.invocations.back().wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  if (!summary_.history.empty()) {
    summary_.test_accuracy = summary_.history.back().test.accuracy;
    summary_.test_loss = summary_.history.back().test.loss;
  }
  double seconds = 0.0;
  int64_t examples = 0;
  for (const EpochMetrics& m : summary_.history) {
    if (m.examples <= 0) continue;  // a record written before examples were kept
    seconds += m.seconds;
    examples += m.examples;
  }
  summary_.examples_per_sec = seconds > 0 ? static_cast<double>(examples) / seconds : 0.0;
  summary_.wall_seconds = 0.0;
  for (const Invocation& inv : summary_.invocations) summary_.wall_seconds += inv.wall_seconds;
}

absl::Status RunReporter::write_record() {
  if (options_.run_dir.empty()) return absl::OkStatus();
  update_figures();
  return write_run_file(options_.run_dir, kRunRecordFile, to_json_(summary_));
}

absl::StatusOr<TrainSummary> RunReporter::finish() {
  if (summary_.history.empty()) {
    return absl::InternalError("a training run finished without reporting an epoch");
  }
  summary_.invocations.back().ended = kInvocationComplete;
  update_figures();
  if (!options_.run_dir.empty()) {
    const std::string json = to_json_(summary_);
    PSFLOW_RETURN_IF_ERROR(write_run_file(options_.run_dir, kRunRecordFile, json));
    PSFLOW_RETURN_IF_ERROR(write_run_file(options_.run_dir, kSummaryFile, json));
  }
  return summary_;
}

absl::Status RunReporter::end(const absl::Status& status, bool stopped) {
  Invocation& inv = summary_.invocations.back();
  inv.ended = stopped ? kInvocationStopped : kInvocationFailed;
  inv.reason = stopped ? std::string(status.message()) : status.ToString();
  return write_record();
}

}  // namespace psflow::internal
