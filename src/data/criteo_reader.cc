#include "data/criteo_reader.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <memory>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {
namespace {

// The splitmix64 finalizer (Steele, Lea, Flood 2014).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

constexpr uint64_t kFeatureSalt = 0xC417E0C417E0ULL;
constexpr uint64_t kMissingSalt = 0x3155316E67ULL;
// Longest accepted feature field: an int64 with its sign has at most 20
// characters, a 64-bit value at most 16 hex digits.
constexpr size_t kMaxIntegerChars = 20;
constexpr size_t kMaxHexChars = 16;

std::string field_name(int field) {
  if (field == 0) return "label";
  if (field <= kCriteoDenseFeatures) return absl::StrCat("I", field);
  return absl::StrCat("C", field - kCriteoDenseFeatures);
}

// At most the first 24 characters of a field, for messages.
std::string shown(std::string_view s) {
  if (s.size() <= 24) return std::string(s);
  return absl::StrCat(av(s.substr(0, 24)), "... (", s.size(), " characters)");
}

// A decimal int64 with an optional '-' ("" is missing: handled by the
// caller). Empty on success, else what is wrong.
std::string parse_integer(std::string_view s, int64_t* out) {
  if (s.size() > kMaxIntegerChars) return "too long for an int64";
  const bool negative = s.front() == '-';
  std::string_view digits = negative ? s.substr(1) : s;
  if (digits.empty()) return "not a decimal integer";
  uint64_t v = 0;
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  for (char c : digits) {
    if (c < '0' || c > '9') return "not a decimal integer";
    const auto d = static_cast<uint64_t>(c - '0');
    if (v > (limit - d) / 10) return "out of the int64 range";
    v = v * 10 + d;
  }
  *out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  return {};
}

std::string parse_hex(std::string_view s, uint64_t* out) {
  if (s.size() > kMaxHexChars) return "longer than 16 hex digits";
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return "not a hexadecimal value";
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return {};
}

// Parses one line (without "\n" or "\r") and appends it to `out`; on a bad
// line, appends nothing and returns the error.
absl::Status parse_line(std::string_view line, std::string_view source, int64_t number,
                        CriteoData& out) {
  std::array<std::string_view, kCriteoFields> fields;
  int count = 0;
  size_t begin = 0;
  bool extra = false;
  while (true) {
    const size_t tab = line.find('\t', begin);
    const std::string_view f =
        line.substr(begin, tab == std::string_view::npos ? std::string_view::npos : tab - begin);
    if (count < kCriteoFields) {
      fields[count] = f;
    } else if (count > kCriteoFields || !f.empty() || tab != std::string_view::npos) {
      extra = true;  // a 41st field is allowed only as an empty last one
    }
    ++count;
    if (tab == std::string_view::npos) break;
    begin = tab + 1;
  }
  const auto bad = [&](int field, std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(av(source), ":", number, ": field ", field + 1,
                                                   " (", field_name(field), "): ", av(what)));
  };
  if (count < kCriteoFields || extra) {
    return absl::InvalidArgumentError(absl::StrCat(
        av(source), ":", number, ": ", count, " tab-separated fields; a Criteo line has ",
        kCriteoFields, " (label, I1..I13, C1..C26; empty fields for missing values)"));
  }
  if (fields[0] != "0" && fields[0] != "1") {
    return bad(0, absl::StrCat("'", shown(fields[0]), "' is not a label; use 0 or 1"));
  }
  std::array<int64_t, kCriteoDenseFeatures> dense{};
  for (int i = 0; i < kCriteoDenseFeatures; ++i) {
    const std::string_view f = fields[1 + i];
    if (f.empty()) continue;  // missing: 0
    if (std::string e = parse_integer(f, &dense[i]); !e.empty()) {
      return bad(1 + i, absl::StrCat("'", shown(f), "' is ", e));
    }
  }
  std::array<int64_t, kCriteoCategoricalFeatures> keys{};
  for (int i = 0; i < kCriteoCategoricalFeatures; ++i) {
    const int field = 1 + kCriteoDenseFeatures + i;
    const std::string_view f = fields[field];
    if (f.empty()) {
      keys[i] = criteo_missing_key(i);
      continue;
    }
    uint64_t v = 0;
    if (std::string e = parse_hex(f, &v); !e.empty()) {
      return bad(field, absl::StrCat("'", shown(f), "' is ", e));
    }
    keys[i] = criteo_key(i, v);
  }
  out.labels.push_back(fields[0] == "1" ? 1.0F : 0.0F);
  out.dense.insert(out.dense.end(), dense.begin(), dense.end());
  out.keys.insert(out.keys.end(), keys.begin(), keys.end());
  return absl::OkStatus();
}

// Thread-safety: stateless.
struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};

}  // namespace

int64_t criteo_key(int feature, uint64_t value) {
  return static_cast<int64_t>(mix(mix(kFeatureSalt + static_cast<uint64_t>(feature)) ^ value));
}

int64_t criteo_missing_key(int feature) {
  return static_cast<int64_t>(mix(mix(kMissingSalt + static_cast<uint64_t>(feature))));
}

absl::Status parse_criteo_text(std::string_view text, std::string_view source, int64_t first_line,
                               const CriteoReadOptions& options, CriteoData& out) {
  int64_t number = first_line;
  size_t begin = 0;
  for (; begin < text.size(); ++number) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    absl::Status parsed = parse_line(line, source, number, out);
    if (parsed.ok()) continue;
    if (options.bad_lines == CriteoBadLines::kError) return parsed;
    if (out.skipped_lines++ == 0) out.first_skipped = std::string(parsed.message());
  }
  return absl::OkStatus();
}

absl::Status read_criteo_file(const std::string& path, const CriteoReadOptions& options,
                              CriteoData& out) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return absl::NotFoundError(absl::StrCat("Criteo file ", path, " does not exist"));
  }
  std::unique_ptr<gzFile_s, GzCloser> f(gzopen(path.c_str(), "rb"));
  if (!f) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  // Parsed a chunk of whole lines at a time, so a large file never sits
  // whole in memory as text.
  std::string pending;
  int64_t line = 1;
  std::string chunk(1 << 20, '\0');
  while (true) {
    const int got = gzread(f.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
    if (got < 0) {
      int errnum = 0;
      const char* message = gzerror(f.get(), &errnum);
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": read failed: ", message == nullptr ? "?" : message));
    }
    if (got == 0) break;
    pending.append(chunk.data(), static_cast<size_t>(got));
    const size_t last = pending.rfind('\n');
    if (last == std::string::npos) continue;
    const std::string_view whole(pending.data(), last + 1);
    PSFLOW_RETURN_IF_ERROR(parse_criteo_text(whole, path, line, options, out));
    line += std::count(whole.begin(), whole.end(), '\n');
    pending.erase(0, last + 1);
  }
  return parse_criteo_text(pending, path, line, options, out);
}

absl::StatusOr<std::vector<std::string>> criteo_files(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return std::vector<std::string>{path};
  if (!std::filesystem::is_directory(path, ec)) {
    return absl::NotFoundError(absl::StrCat("Criteo data ", path, " does not exist"));
  }
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    const std::string ext = entry.path().extension().string();
    if (ext == ".tsv" || ext == ".txt" || ext == ".gz") files.push_back(entry.path().string());
  }
  if (ec) return absl::InvalidArgumentError(absl::StrCat("cannot list ", path, ": ", ec.message()));
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("directory ", path,
                     " holds no Criteo file (*.tsv, *.txt or *.gz); give a file or a "
                     "directory of them, or generated:<rows> for generated data"));
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace psflow::internal
