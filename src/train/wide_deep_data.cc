#include "train/wide_deep_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "data/text_readers.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

constexpr int64_t kMaxExamples = 50'000'000;
constexpr int64_t kMaxVocab = 50'000'000;
constexpr int64_t kMaxFeatures = 4096;
constexpr int64_t kMaxBag = 4096;
// Elements of one split's [N, F] or [N, L] tensors.
constexpr int64_t kMaxElements = int64_t{1} << 31;
constexpr uint64_t kIdStride = 2654435761ull;  // prime: a bijection mod any V < it
constexpr double kBias = -0.3;
constexpr double kInteraction = 0.6;
constexpr double kDenseWeightScale = 0.3;
constexpr double kIdWeightScale = 0.5;
constexpr double kTestFraction = 0.1;

// The generator's random numbers, specified exactly (see the header).
class Rng {
 public:
  explicit Rng(uint64_t seed) : gen_(seed * 0x9E3779B97F4A7C15ull + 0x5EED) {}
  double uniform() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  double normal() {
    const double u1 = uniform();
    const double u2 = uniform();
    constexpr double kTwoPi = 6.283185307179586476925;
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(kTwoPi * u2);
  }

 private:
  std::mt19937_64 gen_;
};

struct Hidden {
  std::vector<double> dense;  // w, [F]
  std::vector<double> ids;    // v, [V]
};

Hidden draw_hidden(Rng& rng, const WideDeepGeneratorOptions& o) {
  Hidden h;
  h.dense.resize(o.dense_features);
  for (double& w : h.dense) w = kDenseWeightScale * rng.normal();
  h.ids.resize(o.vocab_size);
  for (double& v : h.ids) v = kIdWeightScale * rng.normal();
  return h;
}

double true_logit(const Hidden& h, const float* x, int64_t f, const int64_t* ids,
                  const float* weights, int64_t l) {
  double logit = kBias;
  for (int64_t j = 0; j < f; ++j) logit += h.dense[j] * x[j];
  if (f >= 2) logit += kInteraction * static_cast<double>(x[0]) * static_cast<double>(x[1]);
  for (int64_t k = 0; k < l; ++k) logit += static_cast<double>(weights[k]) * h.ids[ids[k]];
  return logit;
}

WideDeepExamples allocate(int64_t n, int64_t f, int64_t l) {
  WideDeepExamples e;
  e.dense = Tensor(DType::kFloat32, {n, f});
  e.ids = Tensor(DType::kInt64, {n, l});
  e.weights = Tensor(DType::kFloat32, {n, l});
  e.labels = Tensor(DType::kFloat32, {n});
  return e;
}

absl::Status bad_libsvm(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("wide_deep LIBSVM data '", path, "': ", av(what)));
}

// The rows `rows` of a LIBSVM file as examples with bags of `bag_size`.
WideDeepExamples libsvm_rows(const LibsvmData& data, const std::vector<int64_t>& rows,
                             int64_t bag_size) {
  WideDeepExamples e = allocate(static_cast<int64_t>(rows.size()), 0, bag_size);
  const auto splits = data.row_splits.flat<int64_t>();
  const auto indices = data.indices.flat<int64_t>();
  const auto values = data.values.flat<float>();
  const auto labels = data.labels.flat<float>();
  auto ids = e.ids.mutable_flat<int64_t>();
  auto weights = e.weights.mutable_flat<float>();
  auto out_labels = e.labels.mutable_flat<float>();
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t r = rows[i];
    int64_t slot = static_cast<int64_t>(i) * bag_size;
    for (int64_t k = splits[r]; k < splits[r + 1]; ++k, ++slot) {
      ids[slot] = indices[k];
      weights[slot] = values[k];
    }
    out_labels[i] = labels[r] > 0.5f ? 1.0f : 0.0f;
  }
  return e;
}

// Checks what the model needs of a LIBSVM file; returns its longest row.
absl::StatusOr<int64_t> check_libsvm(const std::string& path, const LibsvmData& data) {
  const int64_t n = data.labels.dim(0);
  if (n == 0) return bad_libsvm(path, "the file has no examples");
  const auto labels = data.labels.flat<float>();
  const auto splits = data.row_splits.flat<int64_t>();
  const auto values = data.values.flat<float>();
  int64_t longest = 1;
  for (int64_t r = 0; r < n; ++r) {
    if (labels[r] != 0.0f && labels[r] != 1.0f && labels[r] != -1.0f) {
      return bad_libsvm(path, absl::StrCat("example ", r + 1, " has label ", labels[r],
                                           "; wide_deep is a binary task: use 0/1 or -1/+1"));
    }
    longest = std::max(longest, splits[r + 1] - splits[r]);
    for (int64_t k = splits[r]; k < splits[r + 1]; ++k) {
      if (!(std::isfinite(values[k]) && values[k] >= 0.0f)) {
        return bad_libsvm(path, absl::StrCat("example ", r + 1, " has value ", values[k],
                                             "; values weight their id's embedding and must be "
                                             "finite and >= 0 (use 1 for binary features)"));
      }
    }
  }
  if (longest > kMaxBag) {
    return bad_libsvm(path, absl::StrCat("an example has ", longest,
                                         " features; wide_deep handles at most ", kMaxBag));
  }
  if (data.num_features > kMaxVocab) {
    return bad_libsvm(path, absl::StrCat("feature index ", data.num_features,
                                         " is too large; wide_deep handles ids below ", kMaxVocab));
  }
  if (n * longest > kMaxElements) return bad_libsvm(path, "the file is too large");
  return longest;
}

absl::StatusOr<int64_t> int_field(const Structure& s, std::string_view key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end() || it->second.kind() != Structure::Kind::kInt) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed wide_deep data source: no integer '", av(key), "'"));
  }
  return it->second.int_value();
}

absl::StatusOr<std::string> string_field(const Structure& s, std::string_view key) {
  auto it = s.fields().find(key);
  if (it == s.fields().end() || it->second.kind() != Structure::Kind::kString) {
    return absl::InvalidArgumentError(
        absl::StrCat("malformed wide_deep data source: no string '", av(key), "'"));
  }
  return it->second.string_value();
}

}  // namespace

WideDeepExamples WideDeepExamples::slice(int64_t begin, int64_t end) const {
  return WideDeepExamples{dense.slice(begin, end), ids.slice(begin, end), weights.slice(begin, end),
                          labels.slice(begin, end)};
}

Structure WideDeepExamples::to_structure() const {
  return Structure::tuple({dense, ids, weights, labels});
}

absl::Status WideDeepGeneratorOptions::validate() const {
  const auto range = [](std::string_view name, int64_t v, int64_t lo, int64_t hi) {
    if (v >= lo && v <= hi) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat("wide_deep generator: ", av(name), " ", v,
                                                   " is out of range; use ", lo, " to ", hi));
  };
  PSFLOW_RETURN_IF_ERROR(range("train_examples", train_examples, 1, kMaxExamples));
  PSFLOW_RETURN_IF_ERROR(range("test_examples", test_examples, 1, kMaxExamples));
  PSFLOW_RETURN_IF_ERROR(range("vocab_size", vocab_size, 1, kMaxVocab));
  PSFLOW_RETURN_IF_ERROR(range("dense_features", dense_features, 0, kMaxFeatures));
  PSFLOW_RETURN_IF_ERROR(range("bag_size", bag_size, 1, kMaxBag));
  const int64_t n = train_examples + test_examples;
  if (n * std::max(dense_features, bag_size) > kMaxElements) {
    return absl::InvalidArgumentError(absl::StrCat("wide_deep generator: ", n, " examples of ",
                                                   dense_features, " dense features and ", bag_size,
                                                   " ids do not fit in memory; use fewer"));
  }
  return absl::OkStatus();
}

absl::StatusOr<WideDeepData> generate_wide_deep_data(const WideDeepGeneratorOptions& o) {
  PSFLOW_RETURN_IF_ERROR(o.validate());
  Rng rng(o.seed);
  const Hidden hidden = draw_hidden(rng, o);
  const int64_t f = o.dense_features;
  const int64_t l = o.bag_size;
  const uint64_t vocab = static_cast<uint64_t>(o.vocab_size);
  const double log_range = std::log(static_cast<double>(o.vocab_size) + 1.0);
  WideDeepData data;
  data.vocab_size = o.vocab_size;
  data.dense_features = f;
  data.bag_size = l;
  for (WideDeepExamples* split : {&data.train, &data.test}) {
    const int64_t n = split == &data.train ? o.train_examples : o.test_examples;
    *split = allocate(n, f, l);
    auto x = split->dense.mutable_flat<float>();
    auto ids = split->ids.mutable_flat<int64_t>();
    auto weights = split->weights.mutable_flat<float>();
    auto labels = split->labels.mutable_flat<float>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < f; ++j) x[i * f + j] = static_cast<float>(rng.normal());
      for (int64_t k = 0; k < l; ++k) {
        const double rank = std::floor(std::exp(rng.uniform() * log_range)) - 1.0;
        const uint64_t r =
            static_cast<uint64_t>(std::clamp(rank, 0.0, static_cast<double>(o.vocab_size - 1)));
        ids[i * l + k] = static_cast<int64_t>((r * kIdStride) % vocab);
        weights[i * l + k] = 1.0f;
      }
      const double logit =
          true_logit(hidden, x.data() + i * f, f, ids.data() + i * l, weights.data() + i * l, l);
      const double p = 1.0 / (1.0 + std::exp(-logit));
      labels[i] = rng.uniform() < p ? 1.0f : 0.0f;
    }
  }
  data.description =
      absl::StrCat("synthetic click-through data (seed ", o.seed, "): ", o.train_examples,
                   " train / ", o.test_examples, " test examples, ", f, " dense features, bags of ",
                   l, " ids from ", o.vocab_size);
  return data;
}

absl::StatusOr<Tensor> wide_deep_oracle_logits(const WideDeepGeneratorOptions& o,
                                               const WideDeepExamples& e) {
  PSFLOW_RETURN_IF_ERROR(o.validate());
  if (e.dense.dim(1) != o.dense_features || e.ids.dim(1) != o.bag_size) {
    return absl::InvalidArgumentError("the examples were not generated with these options");
  }
  Rng rng(o.seed);
  const Hidden hidden = draw_hidden(rng, o);
  const int64_t n = e.size();
  Tensor out(DType::kFloat32, {n});
  auto logits = out.mutable_flat<float>();
  const auto x = e.dense.flat<float>();
  const auto ids = e.ids.flat<int64_t>();
  const auto weights = e.weights.flat<float>();
  const int64_t f = o.dense_features;
  const int64_t l = o.bag_size;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < l; ++k) {
      if (ids[i * l + k] < 0 || ids[i * l + k] >= o.vocab_size) {
        return absl::InvalidArgumentError("an id is outside the generator's vocabulary");
      }
    }
    logits[i] = static_cast<float>(
        true_logit(hidden, x.data() + i * f, f, ids.data() + i * l, weights.data() + i * l, l));
  }
  return out;
}

absl::StatusOr<WideDeepData> load_wide_deep_libsvm(const std::string& path, uint64_t split_seed) {
  std::vector<std::string> paths = absl::StrSplit(path, ',');
  if (paths.size() > 2 || paths[0].empty() || (paths.size() == 2 && paths[1].empty())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "wide_deep data '", path, "': give one LIBSVM file or 'train_file,test_file'"));
  }
  PSFLOW_ASSIGN_OR_RETURN(LibsvmData train, read_libsvm(paths[0]));
  PSFLOW_ASSIGN_OR_RETURN(int64_t bag, check_libsvm(paths[0], train));
  WideDeepData data;
  data.vocab_size = std::max<int64_t>(1, train.num_features);
  const int64_t n = train.labels.dim(0);
  if (paths.size() == 2) {
    PSFLOW_ASSIGN_OR_RETURN(LibsvmData test, read_libsvm(paths[1]));
    PSFLOW_ASSIGN_OR_RETURN(int64_t test_bag, check_libsvm(paths[1], test));
    bag = std::max(bag, test_bag);
    data.vocab_size = std::max(data.vocab_size, test.num_features);
    std::vector<int64_t> all_train(n), all_test(test.labels.dim(0));
    for (int64_t i = 0; i < n; ++i) all_train[i] = i;
    for (size_t i = 0; i < all_test.size(); ++i) all_test[i] = static_cast<int64_t>(i);
    data.train = libsvm_rows(train, all_train, bag);
    data.test = libsvm_rows(test, all_test, bag);
  } else {
    if (n < 2) return bad_libsvm(paths[0], "a file split into train and test needs 2 examples");
    // A fixed 10% of the rows, chosen with the seed (Fisher-Yates).
    std::vector<int64_t> order(n);
    for (int64_t i = 0; i < n; ++i) order[i] = i;
    std::mt19937_64 gen(split_seed * 0x9E3779B97F4A7C15ull + 0x5B11);
    for (int64_t i = n - 1; i > 0; --i) {
      std::swap(order[i], order[gen() % static_cast<uint64_t>(i + 1)]);
    }
    const int64_t num_test =
        std::clamp<int64_t>(std::llround(static_cast<double>(n) * kTestFraction), 1, n - 1);
    std::vector<bool> is_test(n, false);
    for (int64_t i = 0; i < num_test; ++i) is_test[order[i]] = true;
    std::vector<int64_t> train_rows, test_rows;
    for (int64_t i = 0; i < n; ++i) (is_test[i] ? test_rows : train_rows).push_back(i);
    data.train = libsvm_rows(train, train_rows, bag);
    data.test = libsvm_rows(train, test_rows, bag);
  }
  data.dense_features = 0;
  data.bag_size = bag;
  data.description =
      absl::StrCat("LIBSVM data '", path, "': ", data.train.size(), " train / ", data.test.size(),
                   " test examples, up to ", bag, " ids per example from ", data.vocab_size);
  return data;
}

Structure WideDeepDataSource::to_structure() const {
  if (!generator) {
    return Structure::dict(
        {{"source", "libsvm"}, {"path", path}, {"seed", static_cast<int64_t>(seed)}});
  }
  const WideDeepGeneratorOptions& g = generator_options;
  return Structure::dict({{"source", "generator"},
                          {"train_examples", g.train_examples},
                          {"test_examples", g.test_examples},
                          {"vocab_size", g.vocab_size},
                          {"dense_features", g.dense_features},
                          {"bag_size", g.bag_size},
                          {"seed", static_cast<int64_t>(g.seed)}});
}

absl::StatusOr<WideDeepDataSource> WideDeepDataSource::from_structure(const Structure& s) {
  if (!s.is_dict())
    return absl::InvalidArgumentError("malformed wide_deep data source: not a dict");
  WideDeepDataSource out;
  PSFLOW_ASSIGN_OR_RETURN(std::string source, string_field(s, "source"));
  PSFLOW_ASSIGN_OR_RETURN(int64_t seed, int_field(s, "seed"));
  if (source == "libsvm") {
    out.generator = false;
    PSFLOW_ASSIGN_OR_RETURN(out.path, string_field(s, "path"));
    out.seed = static_cast<uint64_t>(seed);
    return out;
  }
  if (source != "generator") {
    return absl::InvalidArgumentError(absl::StrCat("malformed wide_deep data source: source '",
                                                   source, "' is not generator or libsvm"));
  }
  WideDeepGeneratorOptions& g = out.generator_options;
  g.seed = static_cast<uint64_t>(seed);
  PSFLOW_ASSIGN_OR_RETURN(g.train_examples, int_field(s, "train_examples"));
  PSFLOW_ASSIGN_OR_RETURN(g.test_examples, int_field(s, "test_examples"));
  PSFLOW_ASSIGN_OR_RETURN(g.vocab_size, int_field(s, "vocab_size"));
  PSFLOW_ASSIGN_OR_RETURN(g.dense_features, int_field(s, "dense_features"));
  PSFLOW_ASSIGN_OR_RETURN(g.bag_size, int_field(s, "bag_size"));
  PSFLOW_RETURN_IF_ERROR(g.validate());
  return out;
}

absl::StatusOr<std::shared_ptr<const WideDeepData>> load_wide_deep_data(
    const WideDeepDataSource& source) {
  static absl::Mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const WideDeepData>>();
  const std::string key = source.to_structure().debug_string();
  absl::MutexLock lock(&mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  absl::StatusOr<WideDeepData> data = source.generator
                                          ? generate_wide_deep_data(source.generator_options)
                                          : load_wide_deep_libsvm(source.path, source.seed);
  if (!data.ok()) return data.status();
  auto shared = std::make_shared<const WideDeepData>(*std::move(data));
  // One run's data per process: a new source replaces the old one.
  cache->clear();
  (*cache)[key] = shared;
  return shared;
}

}  // namespace psflow::internal
