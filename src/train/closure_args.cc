#include "train/closure_args.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow::internal {

absl::Status ClosureArgs::malformed(std::string_view problem) const {
  return absl::InvalidArgumentError(absl::StrCat("malformed ", av(context), ": ", av(problem)));
}

absl::StatusOr<const Structure*> ClosureArgs::field(const Structure& s, std::string_view key,
                                                    Structure::Kind kind) const {
  if (!s.is_dict()) return malformed("expected a dict");
  auto it = s.fields().find(key);
  if (it == s.fields().end()) return malformed(absl::StrCat("missing '", av(key), "'"));
  if (kind != Structure::Kind::kNone && it->second.kind() != kind) {
    return malformed(absl::StrCat("'", av(key), "' has the wrong type"));
  }
  return &it->second;
}

absl::StatusOr<double> ClosureArgs::float_field(const Structure& s, std::string_view key) const {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* f, field(s, key, Structure::Kind::kFloat));
  return f->float_value();
}

absl::StatusOr<int64_t> ClosureArgs::int_field(const Structure& s, std::string_view key) const {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* f, field(s, key, Structure::Kind::kInt));
  return f->int_value();
}

absl::StatusOr<int64_t> ClosureArgs::int_in_range(const Structure& s, std::string_view key,
                                                  int64_t lo, int64_t hi) const {
  PSFLOW_ASSIGN_OR_RETURN(int64_t v, int_field(s, key));
  if (v < lo || v > hi) {
    return malformed(absl::StrCat("'", av(key), "' is ", v, ", outside [", lo, ", ", hi, "]"));
  }
  return v;
}

absl::StatusOr<std::vector<int64_t>> ClosureArgs::int_list(const Structure& s, std::string_view key,
                                                           size_t max_size, int64_t lo,
                                                           int64_t hi) const {
  PSFLOW_ASSIGN_OR_RETURN(const Structure* list, field(s, key, Structure::Kind::kNone));
  if (!list->is_sequence() || list->size() > max_size) {
    return malformed(absl::StrCat("'", av(key), "' is not a list of at most ", max_size, " sizes"));
  }
  std::vector<int64_t> out;
  for (const Structure& item : list->items()) {
    if (item.kind() != Structure::Kind::kInt || item.int_value() < lo || item.int_value() > hi) {
      return malformed(absl::StrCat("'", av(key), "' must hold integers in [", lo, ", ", hi, "]"));
    }
    out.push_back(item.int_value());
  }
  return out;
}

}  // namespace psflow::internal
