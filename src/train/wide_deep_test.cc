#include "train/wide_deep.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "base/test_util.h"
#include "gtest/gtest.h"
#include "psflow/nn.h"
#include "psflow/per_worker.h"
#include "train/trainer.h"
#include "train/wide_deep_data.h"
#include "train/wide_deep_model.h"
#include "train/wide_deep_step.h"

namespace psflow::internal {
namespace {

WideDeepGeneratorOptions small_generator(uint64_t seed = 7) {
  WideDeepGeneratorOptions o;
  o.train_examples = 20000;
  o.test_examples = 5000;
  o.vocab_size = 5000;
  o.seed = seed;
  return o;
}

// ---------------------------------------------------------------------------
// The generator.

TEST(WideDeepDataTest, GeneratorIsDeterministic) {
  const WideDeepData a = ok_value(generate_wide_deep_data(small_generator()));
  const WideDeepData b = ok_value(generate_wide_deep_data(small_generator()));
  EXPECT_TRUE(a.train.dense == b.train.dense);
  EXPECT_TRUE(a.train.ids == b.train.ids);
  EXPECT_TRUE(a.train.labels == b.train.labels);
  EXPECT_TRUE(a.test.ids == b.test.ids);
  EXPECT_TRUE(a.test.labels == b.test.labels);
  const WideDeepData c = ok_value(generate_wide_deep_data(small_generator(8)));
  EXPECT_FALSE(a.train.ids == c.train.ids);
  EXPECT_FALSE(a.train.labels == c.train.labels);
  // No dense features at all (as LIBSVM data).
  WideDeepGeneratorOptions no_dense = small_generator();
  no_dense.dense_features = 0;
  const WideDeepData d = ok_value(generate_wide_deep_data(no_dense));
  EXPECT_EQ(d.train.dense.shape(), (Shape{20000, 0}));
  EXPECT_TRUE(ok_value(wide_deep_oracle_logits(no_dense, d.test)).valid());
}

TEST(WideDeepDataTest, GeneratorShapesBalanceAndIdSpread) {
  const WideDeepGeneratorOptions o = small_generator();
  const WideDeepData d = ok_value(generate_wide_deep_data(o));
  EXPECT_EQ(d.train.dense.shape(), (Shape{20000, 8}));
  EXPECT_EQ(d.train.ids.shape(), (Shape{20000, 8}));
  EXPECT_EQ(d.train.weights.shape(), (Shape{20000, 8}));
  EXPECT_EQ(d.test.labels.shape(), (Shape{5000}));
  EXPECT_EQ(d.vocab_size, 5000);
  double positives = 0;
  for (float y : d.train.labels.flat<float>()) {
    ASSERT_TRUE(y == 0.0f || y == 1.0f);
    positives += y;
  }
  const double rate = positives / 20000.0;
  EXPECT_GT(rate, 0.35);
  EXPECT_LT(rate, 0.6);
  // Ids in range, Zipf-like (the most frequent id is far above average), and
  // hot ids in both halves of the vocabulary (so every shard gets traffic).
  std::map<int64_t, int64_t> counts;
  for (int64_t id : d.train.ids.flat<int64_t>()) {
    ASSERT_GE(id, 0);
    ASSERT_LT(id, 5000);
    ++counts[id];
  }
  int64_t top = 0;
  int64_t hot_low = 0, hot_high = 0;
  const double mean = 20000.0 * 8 / 5000.0;
  for (const auto& [id, n] : counts) {
    top = std::max(top, n);
    if (n > 10 * mean) (id < 2500 ? hot_low : hot_high) += 1;
  }
  EXPECT_GT(static_cast<double>(top), 100 * mean);
  EXPECT_GT(hot_low, 0);
  EXPECT_GT(hot_high, 0);
}

TEST(WideDeepDataTest, TrueLogitsRankTheTestSetWell) {
  const WideDeepGeneratorOptions o = small_generator();
  const WideDeepData d = ok_value(generate_wide_deep_data(o));
  const Tensor logits = ok_value(wide_deep_oracle_logits(o, d.test));
  const Tensor probs = ok_value(nn::sigmoid(logits));
  nn::AUC auc;
  ASSERT_TRUE(auc.update(d.test.labels, probs).ok());
  std::printf("oracle test AUC %.4f\n", auc.result());
  EXPECT_GT(auc.result(), 0.78);
  EXPECT_LT(auc.result(), 0.95);
}

// The figures the header states for the default options.
TEST(WideDeepDataTest, DefaultsMatchTheHeader) {
  const WideDeepGeneratorOptions o;
  const WideDeepData d = ok_value(generate_wide_deep_data(o));
  EXPECT_EQ(d.train.size(), 200000);
  EXPECT_EQ(d.test.size(), 20000);
  double positives = 0;
  for (float y : d.train.labels.flat<float>()) positives += y;
  const Tensor probs = ok_value(nn::sigmoid(ok_value(wide_deep_oracle_logits(o, d.test))));
  nn::AUC auc;
  ASSERT_TRUE(auc.update(d.test.labels, probs).ok());
  std::printf("defaults: %.3f positive, oracle test AUC %.4f\n", positives / 200000.0,
              auc.result());
  EXPECT_NEAR(positives / 200000.0, 0.47, 0.03);
  EXPECT_NEAR(auc.result(), 0.82, 0.02);
}

TEST(WideDeepDataTest, GeneratorRejectsBadSizes) {
  WideDeepGeneratorOptions o = small_generator();
  o.vocab_size = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(generate_wide_deep_data(o).status()));
  o = small_generator();
  o.bag_size = -1;
  absl::Status s = generate_wide_deep_data(o).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("bag_size"), std::string_view::npos) << s;
}

TEST(WideDeepDataTest, DataSourceRoundTripAndValidation) {
  WideDeepDataSource src;
  src.generator_options = small_generator(3);
  const WideDeepDataSource back = ok_value(WideDeepDataSource::from_structure(src.to_structure()));
  EXPECT_EQ(back.to_structure(), src.to_structure());
  WideDeepDataSource file;
  file.generator = false;
  file.path = "/tmp/x.svm";
  file.seed = 4;
  EXPECT_EQ(ok_value(WideDeepDataSource::from_structure(file.to_structure())).to_structure(),
            file.to_structure());
  EXPECT_FALSE(WideDeepDataSource::from_structure(Structure(1)).ok());
  EXPECT_FALSE(WideDeepDataSource::from_structure(
                   Structure::dict({{"source", "mystery"}, {"seed", int64_t{1}}}))
                   .ok());
  Structure::Fields f = src.to_structure().fields();
  f["vocab_size"] = int64_t{-5};
  EXPECT_FALSE(WideDeepDataSource::from_structure(Structure::dict(f)).ok());
}

class WideDeepLibsvmTest : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& text) {
    const std::string path =
        (std::filesystem::temp_directory_path() /
         (name + "-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
          std::to_string(reinterpret_cast<uintptr_t>(this))))
            .string();
    std::ofstream(path) << text;
    paths_.push_back(path);
    return path;
  }
  void TearDown() override {
    for (const std::string& p : paths_) std::filesystem::remove(p);
  }
  std::vector<std::string> paths_;
};

TEST_F(WideDeepLibsvmTest, LoadsIdsWeightsAndLabels) {
  const std::string train = write("train.svm",
                                  "1 1:1 4:0.5\n"
                                  "-1 2:1\n"
                                  "0 3:2 5:1 7:1\n");
  const std::string test = write("test.svm", "1 9:1\n");
  const WideDeepData d = ok_value(load_wide_deep_libsvm(train + "," + test, 0));
  EXPECT_EQ(d.vocab_size, 9);  // 1-based index 9 -> id 8
  EXPECT_EQ(d.dense_features, 0);
  EXPECT_EQ(d.bag_size, 3);
  ASSERT_EQ(d.train.size(), 3);
  ASSERT_EQ(d.test.size(), 1);
  EXPECT_EQ(d.train.dense.shape(), (Shape{3, 0}));
  EXPECT_EQ(d.train.ids, Tensor::from_vector<int64_t>({0, 3, 0, 1, 0, 0, 2, 4, 6}, {3, 3}));
  EXPECT_EQ(d.train.weights, Tensor::from_vector<float>({1, 0.5f, 0, 1, 0, 0, 2, 1, 1}, {3, 3}));
  EXPECT_EQ(d.train.labels, Tensor::from_vector<float>({1, 0, 0}));
  EXPECT_EQ(d.test.ids, Tensor::from_vector<int64_t>({8, 0, 0}, {1, 3}));
}

TEST_F(WideDeepLibsvmTest, SplitsOneFileWithTheSeed) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += std::to_string(i % 2) + " " + std::to_string(i + 1) + ":1\n";
  const std::string path = write("one.svm", text);
  const WideDeepData a = ok_value(load_wide_deep_libsvm(path, 1));
  const WideDeepData b = ok_value(load_wide_deep_libsvm(path, 1));
  EXPECT_EQ(a.train.size(), 45);
  EXPECT_EQ(a.test.size(), 5);
  EXPECT_EQ(a.test.ids, b.test.ids);
  // Train and test together hold every row once.
  std::vector<int> seen(50, 0);
  for (const WideDeepExamples* e : {&a.train, &a.test}) {
    for (int64_t r = 0; r < e->size(); ++r) ++seen[e->ids.flat<int64_t>()[r]];
  }
  for (int n : seen) EXPECT_EQ(n, 1);
}

TEST_F(WideDeepLibsvmTest, RejectsWhatTheModelCannotUse) {
  absl::Status s = load_wide_deep_libsvm(write("neg.svm", "1 1:1\n0 2:-3\n"), 0).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("example 2"), std::string_view::npos) << s;
  s = load_wide_deep_libsvm(write("multi.svm", "1 1:1\n2 2:1\n"), 0).status();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("binary"), std::string_view::npos) << s;
  EXPECT_TRUE(absl::IsNotFound(load_wide_deep_libsvm("/nonexistent/x.svm", 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(load_wide_deep_libsvm("a,b,c", 0).status()));
}

// ---------------------------------------------------------------------------
// The model: gradients against finite differences, in float64.

struct TinyModel {
  WideDeepSpec spec;
  std::vector<Tensor> params;  // tables hold U pulled rows
  WideDeepBatch batch;
};

TinyModel tiny_model() {
  TinyModel m;
  m.spec.vocab_size = 11;
  m.spec.dense_features = 3;
  m.spec.embedding_dim = 4;
  m.spec.hidden = {5};
  constexpr int64_t kRows = 5;  // pulled rows
  std::vector<Shape> shapes = m.spec.parameter_shapes();
  shapes[kWideTable][0] = kRows;
  shapes[kDeepTable][0] = kRows;
  for (size_t i = 0; i < shapes.size(); ++i) {
    m.params.push_back(ok_value(nn::random_normal(shapes[i], 0.7, 100 + i, DType::kFloat64)));
  }
  m.batch.dense = ok_value(nn::random_normal({4, 3}, 1.0, 1, DType::kFloat64));
  m.batch.index = Tensor::from_vector<int64_t>({0, 1, 2, 3, 0, 4, 2, 2, 1, 4, 3, 0}, {4, 3});
  // Mixed weights, with a padding slot (0) and a repeated id.
  m.batch.weights = Tensor::from_vector<double>({1, 0.5, 2, 1, 0, 1, 1, 1, 1, 0.25, 3, 1}, {4, 3});
  m.batch.labels = Tensor::from_vector<double>({1, 0, 1, 0});
  return m;
}

double loss_of(const TinyModel& m, const std::vector<Tensor>& params) {
  absl::StatusOr<WideDeepStep> s = wide_deep_forward_backward(m.spec, params, m.batch);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->loss : 0.0;
}

// Central differences of the loss w.r.t. every element of params[p].
std::vector<double> numeric_gradient(const TinyModel& m, size_t p) {
  std::vector<Tensor> params;
  for (const Tensor& t : m.params) params.push_back(t.clone());
  constexpr double kEps = 1e-6;
  std::vector<double> grad(params[p].num_elements());
  for (size_t i = 0; i < grad.size(); ++i) {
    double& x = params[p].mutable_flat<double>()[i];
    const double saved = x;
    x = saved + kEps;
    const double up = loss_of(m, params);
    x = saved - kEps;
    const double down = loss_of(m, params);
    x = saved;
    grad[i] = (up - down) / (2 * kEps);
  }
  return grad;
}

// A row-sparse gradient as a dense [rows, dim] array.
std::vector<double> densify(const nn::SparseGradient& g, int64_t rows, int64_t dim) {
  std::vector<double> out(rows * dim, 0.0);
  const auto idx = g.indices.flat<int64_t>();
  const auto v = g.values.flat<double>();
  for (size_t r = 0; r < idx.size(); ++r) {
    for (int64_t c = 0; c < dim; ++c) out[idx[r] * dim + c] += v[r * dim + c];
  }
  return out;
}

void expect_close(const std::vector<double>& analytic, const std::vector<double>& numeric,
                  const std::string& what) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  double norm = 0;
  for (double x : numeric) norm += std::abs(x);
  EXPECT_GT(norm, 1e-6) << what << ": the numeric gradient is all zeros";
  for (size_t i = 0; i < analytic.size(); ++i) {
    EXPECT_NEAR(analytic[i], numeric[i], 1e-6 + 1e-5 * std::abs(numeric[i]))
        << what << " element " << i;
  }
}

TEST(WideDeepModelTest, GradientsMatchFiniteDifferences) {
  const TinyModel m = tiny_model();
  const WideDeepStep step = ok_value(wide_deep_forward_backward(m.spec, m.params, m.batch));
  EXPECT_EQ(step.probabilities.shape(), (Shape{4, 1}));
  expect_close(densify(step.wide_rows, 5, 1), numeric_gradient(m, kWideTable), "wide table");
  expect_close(densify(step.deep_rows, 5, 4), numeric_gradient(m, kDeepTable), "deep table");
  ASSERT_EQ(step.dense.size(), m.params.size() - 2);
  const std::vector<size_t> dense_params = {kWideBias, 3, 4, 5, 6};
  for (size_t k = 0; k < dense_params.size(); ++k) {
    const auto g = step.dense[k].flat<double>();
    expect_close(std::vector<double>(g.begin(), g.end()), numeric_gradient(m, dense_params[k]),
                 absl::StrCat("parameter ", dense_params[k]));
  }
}

TEST(WideDeepModelTest, PaddingSlotsDoNotMatter) {
  TinyModel m = tiny_model();
  const Tensor before = ok_value(wide_deep_logits(m.spec, m.params, m.batch));
  // Slot (1, 1) has weight 0: pointing it at another row changes nothing.
  m.batch.index = m.batch.index.clone();
  m.batch.index.mutable_flat<int64_t>()[4] = 3;
  const Tensor after = ok_value(wide_deep_logits(m.spec, m.params, m.batch));
  EXPECT_TRUE(all_close(before, after, 1e-12, 1e-12).ok());
}

TEST(WideDeepModelTest, RejectsMismatchedInputs) {
  TinyModel m = tiny_model();
  std::vector<Tensor> params = m.params;
  params.pop_back();
  EXPECT_TRUE(absl::IsInvalidArgument(wide_deep_logits(m.spec, params, m.batch).status()));
  params = m.params;
  params[kDeepTable] = ok_value(nn::zeros({4, 4}, DType::kFloat64));  // 4 rows, wide has 5
  EXPECT_TRUE(absl::IsInvalidArgument(wide_deep_logits(m.spec, params, m.batch).status()));
  WideDeepBatch b = m.batch;
  b.dense = ok_value(nn::zeros({4, 2}, DType::kFloat64));
  EXPECT_TRUE(absl::IsInvalidArgument(wide_deep_logits(m.spec, m.params, b).status()));
  b = m.batch;
  b.index = Tensor::from_vector<int64_t>({0, 1, 2, 3, 0, 4, 2, 2, 1, 4, 3, 9}, {4, 3});
  EXPECT_TRUE(absl::IsInvalidArgument(wide_deep_logits(m.spec, m.params, b).status()));
}

TEST(WideDeepModelTest, SpecRoundTripAndParameterShapes) {
  WideDeepSpec spec;
  spec.vocab_size = 1000;
  spec.dense_features = 0;
  spec.embedding_dim = 8;
  spec.hidden = {32, 16};
  const WideDeepSpec back = ok_value(WideDeepSpec::from_structure(spec.to_structure()));
  EXPECT_EQ(back.to_structure(), spec.to_structure());
  const std::vector<Shape> shapes = spec.parameter_shapes();
  ASSERT_EQ(shapes.size(), 9u);
  EXPECT_EQ(shapes[kWideTable], (Shape{1000, 1}));
  EXPECT_EQ(shapes[kDeepTable], (Shape{1000, 8}));
  EXPECT_EQ(shapes[3], (Shape{8, 32}));
  EXPECT_EQ(shapes[7], (Shape{16, 1}));
  EXPECT_EQ(spec.parameter_names().size(), shapes.size());
  Structure::Fields f = spec.to_structure().fields();
  f["embedding_dim"] = int64_t{0};
  EXPECT_FALSE(WideDeepSpec::from_structure(Structure::dict(f)).ok());
  f = spec.to_structure().fields();
  f["hidden"] = Structure::list({int64_t{-1}});
  EXPECT_FALSE(WideDeepSpec::from_structure(Structure::dict(f)).ok());
}

// Without any cluster: plain SGD on whole tables (every id is its own row).
// Returns the test AUC after 3 epochs; `train_tables` false leaves the
// embeddings at their initial values (a model whose sparse path is broken).
double local_sgd_auc(bool train_tables) {
  WideDeepGeneratorOptions o = small_generator(11);
  o.vocab_size = 500;
  const WideDeepData d = ok_value(generate_wide_deep_data(o));
  WideDeepSpec spec;
  spec.vocab_size = 500;
  spec.dense_features = 8;
  spec.embedding_dim = 8;
  spec.hidden = {16};
  std::vector<Tensor> params = ok_value(initial_wide_deep_parameters(spec, 1));
  constexpr int64_t kBatch = 64;
  constexpr float kLr = 0.2f;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (int64_t begin = 0; begin + kBatch <= d.train.size(); begin += kBatch) {
      const WideDeepExamples e = d.train.slice(begin, begin + kBatch);
      const WideDeepStep s =
          ok_value(wide_deep_forward_backward(spec, params, {e.dense, e.ids, e.weights, e.labels}));
      const auto apply_rows = [&](Tensor& table, const nn::SparseGradient& g) {
        auto t = table.mutable_matrix<float>();
        const auto idx = g.indices.flat<int64_t>();
        const auto v = g.values.matrix<float>();
        for (size_t r = 0; r < idx.size(); ++r) t.row(idx[r]) -= kLr * v.row(r);
      };
      if (train_tables) {
        apply_rows(params[kWideTable], s.wide_rows);
        apply_rows(params[kDeepTable], s.deep_rows);
      }
      const std::vector<size_t> dense_params = {kWideBias, 3, 4, 5, 6};
      for (size_t k = 0; k < dense_params.size(); ++k) {
        params[dense_params[k]].mutable_vec<float>() -= kLr * s.dense[k].vec<float>();
      }
    }
  }
  const Tensor logits = ok_value(
      wide_deep_logits(spec, params, {d.test.dense, d.test.ids, d.test.weights, d.test.labels}));
  nn::AUC auc;
  EXPECT_TRUE(auc.update(d.test.labels, ok_value(nn::sigmoid(logits))).ok());
  return auc.result();
}

// The task needs the embeddings: the model learns it far above chance, and
// well above what it reaches when only the dense parameters learn.
TEST(WideDeepModelTest, LearnsTheGeneratedTaskLocally) {
  const double full = local_sgd_auc(true);
  const double dense_only = local_sgd_auc(false);
  std::printf("local SGD test AUC %.4f; without training the tables %.4f\n", full, dense_only);
  EXPECT_GT(full, 0.79);
  EXPECT_LT(dense_only, 0.75);
}

// ---------------------------------------------------------------------------
// The closure's config and result as Structures.

VariableHandle handle(const std::string& name, Shape shape, DType dtype = DType::kFloat32) {
  VariableHandle h;
  h.name = name;
  h.dtype = dtype;
  h.shape = shape;
  if (shape.empty() || shape[0] < 2) {
    h.parts.push_back({"ps", 0, name, shape, 0});
  } else {
    Shape a = shape, b = shape;
    a[0] = shape[0] / 2;
    b[0] = shape[0] - a[0];
    h.parts.push_back({"ps", 0, name + "/part_0", a, 0});
    h.parts.push_back({"ps", 1, name + "/part_1", b, a[0]});
  }
  return h;
}

WideDeepStepConfig sample_config() {
  WideDeepStepConfig c;
  c.run_id = "run-1";
  c.model.vocab_size = 100;
  c.model.dense_features = 3;
  c.model.embedding_dim = 4;
  c.model.hidden = {8};
  const std::vector<Shape> shapes = c.model.parameter_shapes();
  const std::vector<std::string> names = c.model.parameter_names();
  for (size_t i = 0; i < shapes.size(); ++i) c.variables.push_back(handle(names[i], shapes[i]));
  c.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
  c.learning_rate = 0.05;
  c.decay_steps = 100;
  c.decay_alpha = 0.1;
  c.iterations = handle("adagrad/iterations", {}, DType::kInt64);
  WideDeepDataSource src;
  src.generator_options = small_generator();
  c.iterator = ok_value(PerWorkerDataset::create(kWideDeepDataset,
                                                 Structure::dict({{"source", src.to_structure()},
                                                                  {"batch_size", int64_t{8}},
                                                                  {"seed", int64_t{0}}})))
                   .iter()
                   .handle();
  c.steps = 3;
  return c;
}

TEST(WideDeepStepConfigTest, RoundTrips) {
  const WideDeepStepConfig c = sample_config();
  const WideDeepStepConfig back = ok_value(WideDeepStepConfig::from_structure(c.to_structure()));
  EXPECT_EQ(back.to_structure(), c.to_structure());
  EXPECT_EQ(back.variables, c.variables);
  EXPECT_EQ(back.optimizer.kind, OptimizerConfig::Kind::kAdagrad);
  EXPECT_EQ(back.steps, 3);
}

TEST(WideDeepStepConfigTest, RejectsMalformedConfigs) {
  const Structure good = sample_config().to_structure();
  const auto with = [&](const std::string& key, Structure value) {
    Structure::Fields f = good.fields();
    f[key] = std::move(value);
    return Structure::dict(std::move(f));
  };
  const auto without = [&](const std::string& key) {
    Structure::Fields f = good.fields();
    f.erase(key);
    return Structure::dict(std::move(f));
  };
  const auto rejected = [](const Structure& s) {
    absl::StatusOr<WideDeepStepConfig> c = WideDeepStepConfig::from_structure(s);
    return absl::IsInvalidArgument(c.status());
  };
  EXPECT_TRUE(rejected(Structure(int64_t{3})));
  EXPECT_TRUE(rejected(without("variables")));
  EXPECT_TRUE(rejected(without("iterator")));
  EXPECT_TRUE(rejected(with("run_id", int64_t{1})));
  EXPECT_TRUE(rejected(with("steps", int64_t{0})));
  EXPECT_TRUE(rejected(with("learning_rate", -1.0)));
  EXPECT_TRUE(rejected(with("decay_alpha", 2.0)));
  EXPECT_TRUE(rejected(with("overlap", int64_t{1})));
  EXPECT_TRUE(rejected(without("overlap")));
  EXPECT_TRUE(rejected(with("iterator", Structure::dict({{"x", int64_t{1}}}))));
  // A table of the wrong shape, and one variable too few.
  WideDeepStepConfig c = sample_config();
  c.variables[kDeepTable] = handle("deep/embedding", {100, 5});
  EXPECT_TRUE(rejected(c.to_structure()));
  c = sample_config();
  c.variables.pop_back();
  EXPECT_TRUE(rejected(c.to_structure()));
  // An unknown optimizer, and a bad hyper-parameter.
  Structure::Fields opt = good["optimizer"].fields();
  opt["kind"] = "rmsprop";
  EXPECT_TRUE(rejected(with("optimizer", Structure::dict(opt))));
  opt = good["optimizer"].fields();
  opt["epsilon"] = -1.0;
  EXPECT_TRUE(rejected(with("optimizer", Structure::dict(opt))));
  // A malformed model spec.
  Structure::Fields model = good["model"].fields();
  model["vocab_size"] = int64_t{0};
  EXPECT_TRUE(rejected(with("model", Structure::dict(model))));
  // iterations must be an int64 scalar.
  c = sample_config();
  c.iterations = handle("it", {3});
  EXPECT_TRUE(rejected(c.to_structure()));
}

TEST(WideDeepStepResultTest, RoundTripsAndMerges) {
  WideDeepStepResult a;
  a.loss_sum = 3.5;
  a.examples = 10;
  a.steps = 2;
  ASSERT_TRUE(a.auc
                  .update(Tensor::from_vector<float>({1, 0, 1}),
                          Tensor::from_vector<float>({0.9f, 0.2f, 0.4f}))
                  .ok());
  ASSERT_TRUE(a.accuracy
                  .update(Tensor::from_vector<float>({1, 0, 1}),
                          Tensor::from_vector<float>({0.9f, 0.2f, 0.4f}))
                  .ok());
  const WideDeepStepResult back = ok_value(WideDeepStepResult::from_structure(a.to_structure()));
  EXPECT_EQ(back.to_structure(), a.to_structure());
  WideDeepStepResult total;
  ASSERT_TRUE(total.add(back).ok());
  ASSERT_TRUE(total.add(a).ok());
  EXPECT_EQ(total.examples, 20);
  EXPECT_EQ(total.steps, 4);
  EXPECT_DOUBLE_EQ(total.loss_sum, 7.0);
  EXPECT_NEAR(total.accuracy.result(), 2.0 / 3.0, 1e-12);
  EXPECT_DOUBLE_EQ(total.auc.result(), a.auc.result());
  Structure::Fields f = a.to_structure().fields();
  f["auc"] = Structure::dict({{"metric", "auc"}});
  EXPECT_FALSE(WideDeepStepResult::from_structure(Structure::dict(f)).ok());
  f = a.to_structure().fields();
  f["examples"] = int64_t{-1};
  EXPECT_FALSE(WideDeepStepResult::from_structure(Structure::dict(f)).ok());
}

TEST(WideDeepDatasetTest, YieldsBatchesOfTheTrainingSplit) {
  WideDeepDataSource src;
  src.generator_options = small_generator(5);
  src.generator_options.dense_features = 2;
  src.generator_options.bag_size = 3;
  const Dataset ds = ok_value(make_wide_deep_dataset(
      DatasetContext{1, 2},
      Structure::dict(
          {{"source", src.to_structure()}, {"batch_size", int64_t{16}}, {"seed", int64_t{1}}})));
  DatasetIterator it = ds.make_iterator();
  const std::optional<Structure> batch = ok_value(it.get_next());
  ASSERT_TRUE(batch.has_value());
  ASSERT_EQ(batch->size(), 4u);
  EXPECT_EQ((*batch)[0].tensor().shape(), (Shape{16, 2}));
  EXPECT_EQ((*batch)[1].tensor().shape(), (Shape{16, 3}));
  EXPECT_EQ((*batch)[1].tensor().dtype(), DType::kInt64);
  EXPECT_EQ((*batch)[2].tensor().shape(), (Shape{16, 3}));
  EXPECT_EQ((*batch)[3].tensor().shape(), (Shape{16}));
  EXPECT_FALSE(
      make_wide_deep_dataset(DatasetContext{}, Structure::dict({{"source", src.to_structure()},
                                                                {"batch_size", int64_t{0}},
                                                                {"seed", int64_t{1}}}))
          .ok());
}

TEST(WideDeepTrainerTest, ValidatesOptions) {
  const WideDeepModel model;
  TrainOptions o;
  o.model = "wide_deep";
  EXPECT_TRUE(validate_train_options(o, model).ok());
  o.strategy = "mirrored";
  EXPECT_TRUE(absl::IsInvalidArgument(validate_train_options(o, model)));
  o = TrainOptions();
  EXPECT_TRUE(absl::IsInvalidArgument(validate_train_options(o, model)));  // model mlp
  o.model = "wide_deep";
  o.partitioner = "fixed:x";
  EXPECT_TRUE(absl::IsInvalidArgument(validate_train_options(o, model)));
  o.partitioner = "none";
  WideDeepOptions extra;
  extra.embedding_dim = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(validate_train_options(o, WideDeepModel(extra))));
}

}  // namespace
}  // namespace psflow::internal
