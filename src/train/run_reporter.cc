#include "train/run_reporter.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "psflow/status_macros.h"
#include "train/run_files.h"

namespace psflow {

RunReporter::RunReporter(const TrainOptions& options, absl::Time start, TrainSummary summary)
    : options_(options), start_(start), summary_(std::move(summary)) {
  summary_.epochs = options.epochs;
}

absl::Status RunReporter::open() {
  if (options_.run_dir.empty()) return absl::OkStatus();
  PSFLOW_ASSIGN_OR_RETURN(EventWriter writer, EventWriter::create(options_.run_dir));
  events_.emplace(std::move(writer));
  return absl::OkStatus();
}

absl::Status RunReporter::report(const EpochReport& r) {
  EpochMetrics m;
  m.epoch = r.epoch;
  m.steps = r.steps;
  m.seconds = r.seconds;
  m.train_loss = r.train_loss;
  m.train_accuracy = r.train_accuracy;
  m.test_loss = r.test_loss;
  m.test_accuracy = r.test_accuracy;
  summary_.history.push_back(m);
  summary_.steps += r.steps;
  train_seconds_ += r.seconds;
  train_examples_ += r.examples;
  const double rate = r.seconds > 0 ? static_cast<double>(r.examples) / r.seconds : 0.0;
  if (events_.has_value()) {
    std::vector<std::pair<std::string, double>> scalars = {{"train/loss", m.train_loss},
                                                           {"train/accuracy", m.train_accuracy},
                                                           {"test/loss", m.test_loss},
                                                           {"test/accuracy", m.test_accuracy},
                                                           {"train/examples_per_sec", rate}};
    for (const EpochReport::Extra& e : r.extra) {
      scalars.emplace_back(absl::StrCat("train/", e.name), e.train);
      scalars.emplace_back(absl::StrCat("test/", e.name), e.test);
    }
    for (const auto& [tag, value] : scalars) {
      PSFLOW_RETURN_IF_ERROR(events_->add_scalar(tag, value, summary_.steps));
    }
  }
  if (options_.out != nullptr) {
    std::string train_extra, test_extra;
    for (const EpochReport::Extra& e : r.extra) {
      absl::StrAppend(&train_extra, " ", e.name, " ", absl::StrFormat("%.4f", e.train));
      absl::StrAppend(&test_extra, " ", e.name, " ", absl::StrFormat("%.4f", e.test));
    }
    std::fprintf(options_.out,
                 "epoch %d/%d: train loss %.4f%s accuracy %.4f | test loss %.4f%s accuracy %.4f | "
                 "%lld steps in %.1f s (%.0f examples/s)\n",
                 r.epoch, options_.epochs, m.train_loss, train_extra.c_str(), m.train_accuracy,
                 m.test_loss, test_extra.c_str(), m.test_accuracy, static_cast<long long>(m.steps),
                 r.seconds, rate);
    std::fflush(options_.out);
  }
  return absl::OkStatus();
}

void RunReporter::roll_back_to(int epoch, int64_t rolled_back) {
  while (!summary_.history.empty() && summary_.history.back().epoch >= epoch) {
    summary_.steps -= summary_.history.back().steps;
    summary_.history.pop_back();
  }
  ++summary_.ps_recoveries;
  summary_.rolled_back_steps += rolled_back;
}

absl::StatusOr<TrainSummary> RunReporter::finish(
    const std::function<std::string(const TrainSummary&)>& to_json) {
  if (summary_.history.empty()) {
    return absl::InternalError("a training run finished without reporting an epoch");
  }
  summary_.test_accuracy = summary_.history.back().test_accuracy;
  summary_.test_loss = summary_.history.back().test_loss;
  summary_.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  summary_.examples_per_sec =
      train_seconds_ > 0 ? static_cast<double>(train_examples_) / train_seconds_ : 0.0;
  if (!options_.run_dir.empty()) {
    PSFLOW_RETURN_IF_ERROR(write_run_file(options_.run_dir, "summary.json", to_json(summary_)));
  }
  return summary_;
}

}  // namespace psflow
