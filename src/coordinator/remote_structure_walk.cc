#include "coordinator/remote_structure_walk.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "psflow/status_macros.h"
#include "tensor/format.h"

namespace psflow::internal {
namespace {

// Returns false once `visit` asked to stop.
bool walk(const RemoteStructure& s, std::string* path,
          absl::FunctionRef<bool(const std::string&, const RemoteValue&)> visit) {
  const size_t length = path->size();
  switch (s.kind()) {
    case RemoteStructure::Kind::kValue: return true;
    case RemoteStructure::Kind::kRemoteValue: return visit(*path, s.remote_value());
    case RemoteStructure::Kind::kTuple:
    case RemoteStructure::Kind::kList:
      for (size_t i = 0; i < s.items().size(); ++i) {
        absl::StrAppend(path, "[", i, "]");
        const bool go_on = walk(s.items()[i], path, visit);
        path->resize(length);
        if (!go_on) return false;
      }
      return true;
    case RemoteStructure::Kind::kDict:
      for (const auto& [key, value] : s.fields()) {
        path->push_back('[');
        internal::append_python_string(path, key);
        path->push_back(']');
        const bool go_on = walk(value, path, visit);
        path->resize(length);
        if (!go_on) return false;
      }
      return true;
  }
  return true;
}

}  // namespace

void for_each_remote_value(
    const RemoteStructure& s, std::string_view root,
    absl::FunctionRef<bool(const std::string& path, const RemoteValue& value)> visit) {
  std::string path(root);
  walk(s, &path, visit);
}

absl::StatusOr<Structure> resolve_remote_values(
    const RemoteStructure& s,
    absl::FunctionRef<absl::StatusOr<Structure>(const RemoteValue& value)> resolve) {
  switch (s.kind()) {
    case RemoteStructure::Kind::kValue: return s.value();
    case RemoteStructure::Kind::kRemoteValue: return resolve(s.remote_value());
    case RemoteStructure::Kind::kTuple:
    case RemoteStructure::Kind::kList: {
      Structure::Items items;
      items.reserve(s.items().size());
      for (const RemoteStructure& item : s.items()) {
        PSFLOW_ASSIGN_OR_RETURN(Structure value, resolve_remote_values(item, resolve));
        items.push_back(std::move(value));
      }
      return s.kind() == RemoteStructure::Kind::kTuple ? Structure::tuple(std::move(items))
                                                       : Structure::list(std::move(items));
    }
    case RemoteStructure::Kind::kDict: {
      Structure::Fields fields;
      for (const auto& [key, value] : s.fields()) {
        PSFLOW_ASSIGN_OR_RETURN(Structure resolved, resolve_remote_values(value, resolve));
        fields.emplace(key, std::move(resolved));
      }
      return Structure::dict(std::move(fields));
    }
  }
  return Structure();
}

}  // namespace psflow::internal
