#include "train/closure_args.h"

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"

namespace psflow {

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

}  // namespace psflow
