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

namespace psflow::internal {

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

absl::Status RunReporter::report(const EpochMetrics& m) {
  summary_.history.push_back(m);
  summary_.steps += m.steps;
  train_seconds_ += m.seconds;
  train_examples_ += m.examples;
  const double rate = m.seconds > 0 ? static_cast<double>(m.examples) / m.seconds : 0.0;
  if (events_.has_value()) {
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
  summary_.test_accuracy = summary_.history.back().test.accuracy;
  summary_.test_loss = summary_.history.back().test.loss;
  summary_.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start_);
  summary_.examples_per_sec =
      train_seconds_ > 0 ? static_cast<double>(train_examples_) / train_seconds_ : 0.0;
  if (!options_.run_dir.empty()) {
    PSFLOW_RETURN_IF_ERROR(write_run_file(options_.run_dir, "summary.json", to_json(summary_)));
  }
  return summary_;
}

}  // namespace psflow::internal
