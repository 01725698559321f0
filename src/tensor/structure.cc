#include "psflow/structure.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "tensor/format.h"

namespace psflow {

using internal::av;
using internal::sv;

namespace {

void flatten_into(const Structure& s, std::vector<Structure>* out) {
  if (s.is_sequence()) {
    for (const Structure& item : s.items()) flatten_into(item, out);
  } else if (s.is_dict()) {
    for (const auto& [key, value] : s.fields()) flatten_into(value, out);
  } else {
    out->push_back(s);
  }
}

void append_debug(std::string* out, const Structure& s) {
  switch (s.kind()) {
    case Structure::Kind::kNone: out->append("None"); return;
    case Structure::Kind::kTensor: out->append(s.tensor().debug_string()); return;
    case Structure::Kind::kInt: absl::StrAppend(out, s.int_value()); return;
    case Structure::Kind::kFloat: internal::append_python_float(out, s.float_value()); return;
    case Structure::Kind::kBool: out->append(s.bool_value() ? "True" : "False"); return;
    case Structure::Kind::kString: internal::append_python_string(out, s.string_value()); return;
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      const bool tuple = s.kind() == Structure::Kind::kTuple;
      out->push_back(tuple ? '(' : '[');
      const Structure::Items& items = s.items();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out->append(", ");
        append_debug(out, items[i]);
      }
      if (tuple && items.size() == 1) out->push_back(',');
      out->push_back(tuple ? ')' : ']');
      return;
    }
    case Structure::Kind::kDict: {
      out->push_back('{');
      bool first = true;
      for (const auto& [key, value] : s.fields()) {
        if (!first) out->append(", ");
        first = false;
        internal::append_python_string(out, key);
        out->append(": ");
        append_debug(out, value);
      }
      out->push_back('}');
      return;
    }
  }
}

absl::Status mismatch(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(path.empty() ? std::string(what)
                                                 : absl::StrCat(path, ": ", av(what)));
}

absl::Status all_close_at(const Structure& a, const Structure& b, double rtol, double atol,
                          std::string* path) {
  if (a.kind() != b.kind()) {
    return mismatch(*path, absl::StrCat(av(kind_name(a.kind())), " vs ", av(kind_name(b.kind()))));
  }
  switch (a.kind()) {
    case Structure::Kind::kNone: return absl::OkStatus();
    case Structure::Kind::kTensor: {
      absl::Status st = all_close(a.tensor(), b.tensor(), rtol, atol);
      return st.ok() ? st : mismatch(*path, sv(st.message()));
    }
    case Structure::Kind::kFloat: {
      const double x = a.float_value();
      const double y = b.float_value();
      if (x == y || std::fabs(x - y) <= atol + rtol * std::fabs(y)) {
        return absl::OkStatus();
      }
      break;
    }
    case Structure::Kind::kInt:
    case Structure::Kind::kBool:
    case Structure::Kind::kString:
      if (a == b) return absl::OkStatus();
      break;
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      if (a.size() != b.size()) {
        return mismatch(
            *path, absl::StrCat(av(kind_name(a.kind())), " of ", a.size(), " items vs ", b.size()));
      }
      for (size_t i = 0; i < a.size(); ++i) {
        const size_t mark = path->size();
        absl::StrAppend(path, "[", i, "]");
        absl::Status st = all_close_at(a[i], b[i], rtol, atol, path);
        if (!st.ok()) return st;
        path->resize(mark);
      }
      return absl::OkStatus();
    }
    case Structure::Kind::kDict: {
      auto ia = a.fields().begin();
      auto ib = b.fields().begin();
      for (; ia != a.fields().end() && ib != b.fields().end(); ++ia, ++ib) {
        if (ia->first != ib->first) break;
        const size_t mark = path->size();
        path->push_back('[');
        internal::append_python_string(path, ia->first);
        path->push_back(']');
        absl::Status st = all_close_at(ia->second, ib->second, rtol, atol, path);
        if (!st.ok()) return st;
        path->resize(mark);
      }
      if (ia == a.fields().end() && ib == b.fields().end()) {
        return absl::OkStatus();
      }
      std::string what = "key ";
      if (ia == a.fields().end()) {
        what.append("(none)");
      } else {
        internal::append_python_string(&what, ia->first);
      }
      what.append(" vs ");
      if (ib == b.fields().end()) {
        what.append("(none)");
      } else {
        internal::append_python_string(&what, ib->first);
      }
      return mismatch(*path, what);
    }
  }
  return mismatch(*path, absl::StrCat(a.debug_string(), " vs ", b.debug_string()));
}

}  // namespace

std::string_view kind_name(Structure::Kind kind) {
  switch (kind) {
    case Structure::Kind::kNone: return "None";
    case Structure::Kind::kTensor: return "tensor";
    case Structure::Kind::kInt: return "int";
    case Structure::Kind::kFloat: return "float";
    case Structure::Kind::kBool: return "bool";
    case Structure::Kind::kString: return "string";
    case Structure::Kind::kTuple: return "tuple";
    case Structure::Kind::kList: return "list";
    case Structure::Kind::kDict: return "dict";
  }
  return "?";
}

std::string_view kind_name_with_article(Structure::Kind kind) {
  switch (kind) {
    case Structure::Kind::kNone: return "None";
    case Structure::Kind::kTensor: return "a tensor";
    case Structure::Kind::kInt: return "an int";
    case Structure::Kind::kFloat: return "a float";
    case Structure::Kind::kBool: return "a bool";
    case Structure::Kind::kString: return "a string";
    case Structure::Kind::kTuple: return "a tuple";
    case Structure::Kind::kList: return "a list";
    case Structure::Kind::kDict: return "a dict";
  }
  return "a value";
}

Structure::Structure(Tensor t) : value_(std::move(t)) {}

Structure Structure::tuple(Items items) {
  Structure s;
  s.value_ = std::make_shared<const Tuple>(Tuple{std::move(items)});
  return s;
}

Structure Structure::list(Items items) {
  Structure s;
  s.value_ = std::make_shared<const List>(List{std::move(items)});
  return s;
}

Structure Structure::dict(Fields fields) {
  Structure s;
  s.value_ = std::make_shared<const Dict>(Dict{std::move(fields)});
  return s;
}

Structure::Kind Structure::kind() const {
  // The variant's alternatives are declared in Kind's order.
  return static_cast<Kind>(value_.index());
}

const Tensor& Structure::tensor() const {
  PSFLOW_CHECK(kind() == Kind::kTensor, "tensor() of a ", av(kind_name(kind())));
  return std::get<Tensor>(value_);
}

int64_t Structure::int_value() const {
  PSFLOW_CHECK(kind() == Kind::kInt, "int_value() of a ", av(kind_name(kind())));
  return std::get<int64_t>(value_);
}

double Structure::float_value() const {
  PSFLOW_CHECK(kind() == Kind::kFloat, "float_value() of a ", av(kind_name(kind())));
  return std::get<double>(value_);
}

bool Structure::bool_value() const {
  PSFLOW_CHECK(kind() == Kind::kBool, "bool_value() of a ", av(kind_name(kind())));
  return std::get<bool>(value_);
}

const std::string& Structure::string_value() const {
  PSFLOW_CHECK(kind() == Kind::kString, "string_value() of a ", av(kind_name(kind())));
  return std::get<std::string>(value_);
}

const Structure::Items& Structure::items() const {
  if (kind() == Kind::kTuple) {
    return std::get<std::shared_ptr<const Tuple>>(value_)->items;
  }
  PSFLOW_CHECK(kind() == Kind::kList, "items() of a ", av(kind_name(kind())));
  return std::get<std::shared_ptr<const List>>(value_)->items;
}

const Structure::Fields& Structure::fields() const {
  PSFLOW_CHECK(kind() == Kind::kDict, "fields() of a ", av(kind_name(kind())));
  return std::get<std::shared_ptr<const Dict>>(value_)->fields;
}

size_t Structure::size() const {
  if (is_sequence()) return items().size();
  if (is_dict()) return fields().size();
  return 0;
}

const Structure& Structure::operator[](size_t i) const {
  const Items& all = items();
  PSFLOW_CHECK(i < all.size(), "index ", i, " is out of range for a ", av(kind_name(kind())),
               " of ", all.size(), " items");
  return all[i];
}

const Structure& Structure::operator[](std::string_view key) const {
  const Fields& all = fields();
  const auto it = all.find(key);
  PSFLOW_CHECK(it != all.end(), "dict has no key '", av(key), "'");
  return it->second;
}

std::vector<Structure> Structure::flatten() const {
  std::vector<Structure> out;
  flatten_into(*this, &out);
  return out;
}

int Structure::depth() const {
  int child = 0;
  if (is_sequence()) {
    for (const Structure& item : items()) child = std::max(child, item.depth());
  } else if (is_dict()) {
    for (const auto& [key, value] : fields()) {
      child = std::max(child, value.depth());
    }
  } else {
    return 0;
  }
  return child + 1;
}

std::string Structure::debug_string() const {
  std::string out;
  append_debug(&out, *this);
  return out;
}

bool operator==(const Structure& a, const Structure& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Structure::Kind::kNone: return true;
    case Structure::Kind::kTensor: return a.tensor() == b.tensor();
    case Structure::Kind::kInt: return a.int_value() == b.int_value();
    case Structure::Kind::kFloat: return a.float_value() == b.float_value();
    case Structure::Kind::kBool: return a.bool_value() == b.bool_value();
    case Structure::Kind::kString: return a.string_value() == b.string_value();
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: return a.items() == b.items();
    case Structure::Kind::kDict: return a.fields() == b.fields();
  }
  return false;
}

std::ostream& operator<<(std::ostream& os, const Structure& s) { return os << s.debug_string(); }

absl::Status all_close(const Structure& a, const Structure& b, double rtol, double atol) {
  std::string path;
  return all_close_at(a, b, rtol, atol, &path);
}

}  // namespace psflow
