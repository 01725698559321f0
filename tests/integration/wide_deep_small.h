// A wide & deep run small enough for tests (about a second per epoch on 2
// ps + 2 workers) that still learns: a trained model's test AUC passes 0.78,
// an untrained one's does not (WideDeepTrainingTest).
#ifndef PSFLOW_TESTS_INTEGRATION_WIDE_DEEP_SMALL_H_
#define PSFLOW_TESTS_INTEGRATION_WIDE_DEEP_SMALL_H_

#include <cmath>
#include <optional>

#include "gtest/gtest.h"
#include "train/train_options.h"
#include "train/train_summary.h"
#include "train/wide_deep.h"

namespace psflow::internal::testing {

// 3 epochs of batch 128 with the model's default optimizer, no output.
inline TrainOptions small_wide_deep_run() {
  TrainOptions o;
  o.model = kWideDeepModel;
  o.epochs = 3;
  o.batch_size = 128;
  o.optimizer = kWideDeepDefaultOptimizer;
  o.learning_rate = kWideDeepDefaultLearningRate;
  o.seed = 3;
  o.out = nullptr;
  return o;
}

// 30,000 generated training examples (234 steps of 128), 5,000 test.
inline WideDeepOptions small_wide_deep_data() {
  WideDeepOptions extra;
  extra.generator.train_examples = 30000;
  extra.generator.test_examples = 5000;
  extra.generator.vocab_size = 3000;
  extra.embedding_dim = 8;
  extra.hidden = {32};
  return extra;
}

// The test AUC of the last epoch of a wide_deep run; a failure, and NaN
// (which passes no bound), when there is none.
inline double test_auc(const TrainSummary& s) {
  const std::optional<double> auc =
      s.history.empty() ? std::nullopt : s.history.back().test.find("auc");
  if (!auc.has_value()) {
    ADD_FAILURE() << "the summary has no test AUC";
    return std::nan("");
  }
  return *auc;
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_TESTS_INTEGRATION_WIDE_DEEP_SMALL_H_
