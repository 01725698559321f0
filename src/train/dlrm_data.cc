#include "train/dlrm_data.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/strings.h"
#include "data/criteo_generator.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

DlrmExamples to_examples(const CriteoData& d, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  DlrmExamples out;
  out.dense = Tensor(DType::kFloat32, {n, kCriteoDenseFeatures});
  out.keys = Tensor(DType::kInt64, {n, kCriteoCategoricalFeatures});
  out.labels = Tensor(DType::kFloat32, {n});
  auto dense = out.dense.mutable_flat<float>();
  auto keys = out.keys.mutable_flat<int64_t>();
  auto labels = out.labels.mutable_flat<float>();
  for (int64_t r = 0; r < n; ++r) {
    labels[r] = d.labels[begin + r];
    for (int j = 0; j < kCriteoDenseFeatures; ++j) {
      const int64_t x = d.dense[(begin + r) * kCriteoDenseFeatures + j];
      dense[r * kCriteoDenseFeatures + j] =
          static_cast<float>(std::log1p(static_cast<double>(std::max<int64_t>(x, 0))));
    }
    for (int f = 0; f < kCriteoCategoricalFeatures; ++f) {
      keys[r * kCriteoCategoricalFeatures + f] =
          d.keys[(begin + r) * kCriteoCategoricalFeatures + f];
    }
  }
  return out;
}

absl::StatusOr<DlrmData> read_dlrm_data(const DlrmDataSource& source) {
  CriteoData raw;
  std::string what;
  PSFLOW_ASSIGN_OR_RETURN(std::optional<CriteoGeneratorOptions> generated,
                          parse_generated_criteo(source.data_dir));
  if (generated.has_value()) {
    PSFLOW_RETURN_IF_ERROR(generate_criteo_data(*generated, raw));
    what = absl::StrCat("generated Criteo-shaped data (seed ", generated->seed, ")");
  } else {
    PSFLOW_ASSIGN_OR_RETURN(std::vector<std::string> files, criteo_files(source.data_dir));
    CriteoReadOptions options;
    options.bad_lines = source.bad_lines;
    for (const std::string& file : files) {
      PSFLOW_RETURN_IF_ERROR(read_criteo_file(file, options, raw));
    }
    what = absl::StrCat("Criteo data '", source.data_dir, "' (", files.size(), " file",
                        files.size() == 1 ? "" : "s", ")");
  }
  const int64_t n = raw.rows();
  if (n < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--data-dir '", source.data_dir, "' holds ", n,
                     " example(s); dlrm needs at least 2 (training and test)"));
  }
  const int64_t num_test =
      std::clamp<int64_t>(std::llround(static_cast<double>(n) * source.test_fraction), 1, n - 1);
  DlrmData data;
  data.train = to_examples(raw, 0, n - num_test);
  data.test = to_examples(raw, n - num_test, n);
  data.skipped_lines = raw.skipped_lines;
  data.description =
      absl::StrCat(what, ": ", data.train.size(), " train / ", data.test.size(), " test examples");
  if (raw.skipped_lines > 0) {
    absl::StrAppend(&data.description, "; ", raw.skipped_lines,
                    " bad line(s) skipped, the first: ", raw.first_skipped);
  }
  return data;
}

}  // namespace

DlrmExamples DlrmExamples::slice(int64_t begin, int64_t end) const {
  return {dense.slice(begin, end), keys.slice(begin, end), labels.slice(begin, end)};
}

Structure DlrmExamples::to_structure() const {
  return Structure::tuple({Structure(dense), Structure(keys), Structure(labels)});
}

Structure DlrmDataSource::to_structure() const {
  return Structure::dict({{"data_dir", data_dir},
                          {"test_fraction", test_fraction},
                          {"skip_bad_lines", bad_lines == CriteoBadLines::kSkip}});
}

absl::StatusOr<DlrmDataSource> DlrmDataSource::from_structure(const Structure& s) {
  const auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("malformed dlrm data source: ", av(what)));
  };
  if (!s.is_dict()) return bad("not a dict");
  DlrmDataSource out;
  const auto& f = s.fields();
  auto dir = f.find("data_dir");
  auto fraction = f.find("test_fraction");
  auto skip = f.find("skip_bad_lines");
  if (dir == f.end() || dir->second.kind() != Structure::Kind::kString) return bad("data_dir");
  if (fraction == f.end() || fraction->second.kind() != Structure::Kind::kFloat) {
    return bad("test_fraction");
  }
  if (skip == f.end() || skip->second.kind() != Structure::Kind::kBool)
    return bad("skip_bad_lines");
  out.data_dir = dir->second.string_value();
  out.test_fraction = fraction->second.float_value();
  if (!(out.test_fraction > 0.0 && out.test_fraction < 1.0))
    return bad("test_fraction not in (0, 1)");
  out.bad_lines = skip->second.bool_value() ? CriteoBadLines::kSkip : CriteoBadLines::kError;
  return out;
}

absl::StatusOr<std::shared_ptr<const DlrmData>> load_dlrm_data(const DlrmDataSource& source) {
  static absl::Mutex mu;
  static auto* cache = new std::map<std::string, std::shared_ptr<const DlrmData>>();
  const std::string key = source.to_structure().debug_string();
  absl::MutexLock lock(&mu);
  auto it = cache->find(key);
  if (it != cache->end()) return it->second;
  PSFLOW_ASSIGN_OR_RETURN(DlrmData data, read_dlrm_data(source));
  auto shared = std::make_shared<const DlrmData>(std::move(data));
  // One run's data per process: a new source replaces the old one.
  cache->clear();
  (*cache)[key] = shared;
  return shared;
}

}  // namespace psflow::internal
