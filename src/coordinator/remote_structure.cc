#include <utility>

#include "base/logging.h"
#include "coordinator/remote_structure_walk.h"
#include "psflow/remote_value.h"
#include "tensor/format.h"

namespace psflow {

using internal::for_each_remote_value;

RemoteStructure RemoteStructure::tuple(Items items) {
  RemoteStructure s;
  s.value_ = std::make_shared<const Tuple>(Tuple{std::move(items)});
  return s;
}

RemoteStructure RemoteStructure::list(Items items) {
  RemoteStructure s;
  s.value_ = std::make_shared<const List>(List{std::move(items)});
  return s;
}

RemoteStructure RemoteStructure::dict(Fields fields) {
  RemoteStructure s;
  s.value_ = std::make_shared<const Dict>(Dict{std::move(fields)});
  return s;
}

RemoteStructure::Kind RemoteStructure::kind() const {
  switch (value_.index()) {
    case 0: return Kind::kValue;
    case 1: return Kind::kRemoteValue;
    case 2: return Kind::kTuple;
    case 3: return Kind::kList;
    default: return Kind::kDict;
  }
}

const Structure& RemoteStructure::value() const {
  PSFLOW_CHECK(kind() == Kind::kValue, "RemoteStructure is not a plain value");
  return std::get<Structure>(value_);
}

const RemoteValue& RemoteStructure::remote_value() const {
  PSFLOW_CHECK(kind() == Kind::kRemoteValue, "RemoteStructure is not a RemoteValue");
  return std::get<RemoteValue>(value_);
}

const RemoteStructure::Items& RemoteStructure::items() const {
  if (const auto* t = std::get_if<std::shared_ptr<const Tuple>>(&value_)) return (*t)->items;
  const auto* l = std::get_if<std::shared_ptr<const List>>(&value_);
  PSFLOW_CHECK(l != nullptr, "RemoteStructure is not a tuple or list");
  return (*l)->items;
}

const RemoteStructure::Fields& RemoteStructure::fields() const {
  const auto* d = std::get_if<std::shared_ptr<const Dict>>(&value_);
  PSFLOW_CHECK(d != nullptr, "RemoteStructure is not a dict");
  return (*d)->fields;
}

std::vector<RemoteValue> RemoteStructure::remote_values() const {
  std::vector<RemoteValue> out;
  for_each_remote_value(*this, "", [&](const std::string&, const RemoteValue& v) {
    out.push_back(v);
    return true;
  });
  return out;
}

std::string RemoteStructure::debug_string() const {
  switch (kind()) {
    case Kind::kValue: return value().debug_string();
    case Kind::kRemoteValue: return remote_value().debug_string();
    case Kind::kTuple:
    case Kind::kList: {
      const bool is_tuple = kind() == Kind::kTuple;
      std::string out = is_tuple ? "(" : "[";
      for (size_t i = 0; i < items().size(); ++i) {
        if (i > 0) out += ", ";
        out += items()[i].debug_string();
      }
      if (is_tuple && items().size() == 1) out += ",";
      out += is_tuple ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : fields()) {
        if (!first) out += ", ";
        first = false;
        internal::append_python_string(&out, key);
        out += ": ";
        out += value.debug_string();
      }
      return out + "}";
    }
  }
  return "?";
}

}  // namespace psflow
