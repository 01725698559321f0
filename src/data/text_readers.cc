#include "data/text_readers.h"

#include <zlib.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

// The whole file; gzopen reads uncompressed files transparently too.
absl::StatusOr<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat("text file ", path, " does not exist"));
  }
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string text;
  char chunk[1 << 16];
  while (true) {
    const int got = gzread(f.get(), chunk, sizeof(chunk));
    if (got < 0) {
      int errnum = 0;
      const char* message = gzerror(f.get(), &errnum);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": read failed: ", message == nullptr ? "?" : message));
    }
    if (got == 0) break;
    text.append(chunk, static_cast<size_t>(got));
  }
  return text;
}

// Calls fn(line_number, line) for each line (1-based, without "\n" or a
// trailing "\r") until fn returns an error.
template <typename Fn>
absl::Status for_each_line(std::string_view text, Fn fn) {
  int64_t number = 0;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    PSFLOW_RETURN_IF_ERROR(fn(++number, line));
    begin = end + 1;
  }
  return absl::OkStatus();
}

bool is_space(char c) { return c == ' ' || c == '\t'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// from_chars rejects a leading '+', which writers of text data do use.
template <typename T>
bool parse_number(std::string_view s, T* out) {
  if (s.size() > 1 && s.front() == '+' && s[1] != '-') s.remove_prefix(1);
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Splits one CSV line; cells may be double-quoted with "" for a quote.
absl::Status split_csv_line(std::string_view line, char delimiter,
                            std::vector<std::string>* cells) {
  cells->clear();
  size_t i = 0;
  while (true) {
    std::string cell;
    while (i < line.size() && is_space(line[i]) && line[i] != delimiter) ++i;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell.push_back('"');
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        cell.push_back(line[i++]);
      }
      if (!closed) {
        return absl::InvalidArgumentError(absl::StrCat("column ", cells->size(),
                                                       ": unterminated quote (quoted cells cannot "
                                                       "span lines)"));
      }
      while (i < line.size() && is_space(line[i]) && line[i] != delimiter) ++i;
      if (i < line.size() && line[i] != delimiter) {
        return absl::InvalidArgumentError(absl::StrCat("column ", cells->size(), ": unexpected '",
                                                       std::string(1, line[i]),
                                                       "' after a closing quote"));
      }
    } else {
      const size_t end = std::min(line.find(delimiter, i), line.size());
      cell = std::string(trim(line.substr(i, end - i)));
      i = end;
    }
    cells->push_back(std::move(cell));
    if (i >= line.size()) return absl::OkStatus();
    ++i;  // the delimiter
  }
}

std::string column_label(int64_t column, const std::vector<std::string>& names) {
  if (static_cast<size_t>(column) < names.size() && !names[column].empty()) {
    return absl::StrCat("column ", column, " ('", names[column], "')");
  }
  return absl::StrCat("column ", column);
}

}  // namespace

absl::StatusOr<CsvData> read_csv(const std::string& path, const CsvOptions& options) {
  if (!options.label_name.empty() && !options.has_header) {
    return absl::InvalidArgumentError(
        absl::StrCat("read_csv(", path, "): label_name '", options.label_name,
                     "' needs has_header = true; use label_column to pick the label by index"));
  }
  PSFLOW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));

  std::vector<std::string> names;  // header names; empty without a header
  int64_t num_columns = -1;        // from the header or the first row
  int64_t label = -1;              // resolved label column; -1: none
  std::vector<float> features;
  std::vector<float> labels;
  std::vector<std::string> cells;
  bool header_pending = options.has_header;

  // Fixes num_columns and resolves the label column against it.
  auto set_columns = [&](int64_t count, int64_t line_number) -> absl::Status {
    num_columns = count;
    if (!options.label_name.empty()) {
      for (size_t c = 0; c < names.size(); ++c) {
        if (names[c] == options.label_name) label = static_cast<int64_t>(c);
      }
      if (label < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_number, ": no column is named '", options.label_name,
                         "'; the header has: ", absl::StrJoin(names, ", ")));
      }
    } else if (options.label_column.has_value()) {
      const int64_t c = *options.label_column;
      if (c < -count || c >= count) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":", line_number, ": label_column ", c, " is out of range for ",
                         count, " columns; it must be in [", -count, ", ", count, ")"));
      }
      label = c < 0 ? c + count : c;
    }
    return absl::OkStatus();
  };

  PSFLOW_RETURN_IF_ERROR(
      for_each_line(text, [&](int64_t line_number, std::string_view line) -> absl::Status {
        if (trim(line).empty()) return absl::OkStatus();
        absl::Status split = split_csv_line(line, options.delimiter, &cells);
        if (!split.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ":", line_number, ": ", split.message()));
        }
        if (header_pending) {
          header_pending = false;
          names = cells;
          return set_columns(static_cast<int64_t>(names.size()), line_number);
        }
        if (num_columns < 0) {
          PSFLOW_RETURN_IF_ERROR(set_columns(static_cast<int64_t>(cells.size()), line_number));
        }
        if (static_cast<int64_t>(cells.size()) != num_columns) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ":", line_number, ": ", cells.size(), " columns, but ",
                           names.empty() ? "the first row has " : "the header has ", num_columns));
        }
        for (int64_t c = 0; c < num_columns; ++c) {
          const std::string& cell = cells[static_cast<size_t>(c)];
          float value = 0;
          if (!parse_number(cell, &value)) {
            return absl::InvalidArgumentError(absl::StrCat(
                path, ":", line_number, ": ", column_label(c, names),
                cell.empty() ? ": empty cell, expected a number"
                             : absl::StrCat(": cannot parse '", cell, "' as a number")));
          }
          (c == label ? labels : features).push_back(value);
        }
        return absl::OkStatus();
      }));
  if (header_pending) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": no header line (the file is empty); pass has_header = false for "
                     "headerless files"));
  }

  CsvData data;
  const int64_t num_features = std::max<int64_t>(0, num_columns - (label >= 0 ? 1 : 0));
  const int64_t rows = num_features > 0 ? static_cast<int64_t>(features.size()) / num_features
                                        : static_cast<int64_t>(labels.size());
  data.features = Tensor::from_vector<float>(features, {rows, num_features});
  if (label >= 0 || (options.label_column.has_value() && num_columns < 0)) {
    data.labels = Tensor::from_vector<float>(labels, {rows});
  }
  for (int64_t c = 0; c < num_columns; ++c) {
    if (c == label) continue;
    data.feature_names.push_back(static_cast<size_t>(c) < names.size() && !names[c].empty()
                                     ? names[c]
                                     : absl::StrCat("column_", c));
  }
  return data;
}

absl::StatusOr<LibsvmData> read_libsvm(const std::string& path, const LibsvmOptions& options) {
  PSFLOW_ASSIGN_OR_RETURN(const std::string text, read_text_file(path));
  std::vector<float> labels;
  std::vector<int64_t> row_splits = {0};
  std::vector<int64_t> indices;
  std::vector<float> values;
  int64_t num_features = 0;
  const int64_t base = options.zero_based ? 0 : 1;

  PSFLOW_RETURN_IF_ERROR(
      for_each_line(text, [&](int64_t line_number, std::string_view line) -> absl::Status {
        if (const size_t hash = line.find('#'); hash != std::string_view::npos) {
          line = line.substr(0, hash);
        }
        auto bad = [&](std::string_view token, std::string_view why) {
          return absl::InvalidArgumentError(
              absl::StrCat(path, ":", line_number, ": token '", av(token), "' ", av(why)));
        };
        bool have_label = false;
        int64_t previous = -1;
        size_t i = 0;
        while (i < line.size()) {
          while (i < line.size() && is_space(line[i])) ++i;
          if (i == line.size()) break;
          size_t end = i;
          while (end < line.size() && !is_space(line[end])) ++end;
          const std::string_view token = line.substr(i, end - i);
          i = end;
          if (!have_label) {
            float label = 0;
            if (!parse_number(token, &label)) {
              return bad(token, "is not a number; a line starts with its label");
            }
            labels.push_back(label);
            have_label = true;
            continue;
          }
          const size_t colon = token.find(':');
          if (colon == std::string_view::npos) {
            return bad(token, "is not index:value");
          }
          int64_t index = 0;
          float value = 0;
          if (!parse_number(token.substr(0, colon), &index)) {
            return bad(token, "does not start with an integer index");
          }
          if (!parse_number(token.substr(colon + 1), &value)) {
            return bad(token, "does not end with a numeric value");
          }
          if (index < base) {
            return bad(token, absl::StrCat("has index ", index, " below the index base ", base,
                                           options.zero_based
                                               ? ""
                                               : " (pass zero_based = true for 0-based files)"));
          }
          index -= base;
          if (index <= previous) {
            return bad(token,
                       "has an index not above the previous one; indices must "
                       "be strictly ascending within a line");
          }
          previous = index;
          num_features = std::max(num_features, index + 1);
          indices.push_back(index);
          values.push_back(value);
        }
        if (have_label) row_splits.push_back(static_cast<int64_t>(indices.size()));
        return absl::OkStatus();
      }));

  LibsvmData data;
  data.labels = Tensor::from_vector<float>(labels, {static_cast<int64_t>(labels.size())});
  data.row_splits =
      Tensor::from_vector<int64_t>(row_splits, {static_cast<int64_t>(row_splits.size())});
  data.indices = Tensor::from_vector<int64_t>(indices, {static_cast<int64_t>(indices.size())});
  data.values = Tensor::from_vector<float>(values, {static_cast<int64_t>(values.size())});
  data.num_features = num_features;
  return data;
}

absl::StatusOr<Tensor> libsvm_to_dense(const LibsvmData& data, int64_t num_features) {
  if (num_features < 0) num_features = data.num_features;
  if (num_features < data.num_features) {
    return absl::InvalidArgumentError(absl::StrCat(
        "libsvm_to_dense: num_features ", num_features, " is below the data's ", data.num_features,
        " (largest index + 1); pass -1 or at least ", data.num_features));
  }
  const int64_t rows = data.labels.num_elements();
  PSFLOW_ASSIGN_OR_RETURN(Tensor dense, Tensor::create(DType::kFloat32, {rows, num_features}));
  absl::Span<const int64_t> splits = data.row_splits.flat<int64_t>();
  absl::Span<const int64_t> indices = data.indices.flat<int64_t>();
  absl::Span<const float> values = data.values.flat<float>();
  if (static_cast<int64_t>(splits.size()) != rows + 1 || indices.size() != values.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("libsvm_to_dense: inconsistent LibsvmData: ", rows, " labels, ", splits.size(),
                     " row_splits, ", indices.size(), " indices, ", values.size(), " values"));
  }
  absl::Span<float> out = dense.mutable_flat<float>();
  const int64_t nnz = static_cast<int64_t>(indices.size());
  for (int64_t r = 0; r < rows; ++r) {
    if (splits[r] < 0 || splits[r] > splits[r + 1] || splits[r + 1] > nnz) {
      return absl::InvalidArgumentError(
          absl::StrCat("libsvm_to_dense: row_splits[", r, "..", r + 1, "] = ", splits[r], ", ",
                       splits[r + 1], " is not a range within the ", nnz, " entries"));
    }
    for (int64_t k = splits[r]; k < splits[r + 1]; ++k) {
      if (indices[k] < 0 || indices[k] >= num_features) {
        return absl::InvalidArgumentError(absl::StrCat("libsvm_to_dense: row ", r, " has index ",
                                                       indices[k], " outside [0, ", num_features,
                                                       ")"));
      }
      out[static_cast<size_t>(r * num_features + indices[k])] = values[k];
    }
  }
  return dense;
}

}  // namespace psflow::internal
