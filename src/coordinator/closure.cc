#include "coordinator/closure.h"

#include <utility>

#include "base/logging.h"
#include "coordinator/closure_errors.h"
#include "coordinator/remote_structure_walk.h"

namespace psflow::internal {

Closure::Closure(uint64_t id, std::string function_name, RemoteStructure args)
    : id_(id),
      args_(std::move(args)),
      inputs_(args_.kind() == RemoteStructure::Kind::kValue ? std::vector<RemoteValue>()
                                                            : args_.remote_values()),
      remaining_inputs_(inputs_.size()),
      output_(std::make_shared<internal::RemoteValueState>(id, std::move(function_name))) {}

absl::Status Closure::input_error() const {
  absl::Status error;
  for_each_remote_value(args_, "args", [&](const std::string& path, const RemoteValue& value) {
    const auto& state = internal::RemoteValueAccess::state(value);
    if (!state->failed()) return true;
    error = closure_input_error(function_name(), path, state->closure_id(), state->function_name(),
                                state->result().status());
    return false;
  });
  return error;
}

Structure Closure::resolve_args(int worker_index) const {
  if (args_.kind() == RemoteStructure::Kind::kValue) return args_.value();
  absl::StatusOr<Structure> args = resolve_remote_values(args_, [](const RemoteValue& value) {
    return internal::RemoteValueAccess::state(value)->result();
  });
  PSFLOW_CHECK(args.ok(), "closure ", id_,
               " dispatched with a failed input: ", args.status().ToString());
  return *std::move(args);
}

namespace {

// RemoteStructure -> Structure, each RemoteValue either by value or, when
// `by_reference`, as None plus a reference at its path.
Structure resolve_with_refs(const RemoteStructure& s, StructurePath& path,
                            absl::FunctionRef<bool(const internal::RemoteValueState&)> by_reference,
                            std::vector<RunRequest::InputRef>* refs) {
  switch (s.kind()) {
    case RemoteStructure::Kind::kValue: return s.value();
    case RemoteStructure::Kind::kRemoteValue: {
      const auto& state = internal::RemoteValueAccess::state(s.remote_value());
      if (by_reference(*state)) {
        refs->push_back(RunRequest::InputRef{state->closure_id(), path});
        return Structure();
      }
      absl::StatusOr<Structure> value = state->result();
      PSFLOW_CHECK(value.ok(),
                   "closure dispatched with a failed input: ", value.status().ToString());
      return *std::move(value);
    }
    case RemoteStructure::Kind::kTuple:
    case RemoteStructure::Kind::kList: {
      Structure::Items items;
      items.reserve(s.items().size());
      for (size_t i = 0; i < s.items().size(); ++i) {
        path.emplace_back(static_cast<int64_t>(i));
        items.push_back(resolve_with_refs(s.items()[i], path, by_reference, refs));
        path.pop_back();
      }
      return s.kind() == RemoteStructure::Kind::kTuple ? Structure::tuple(std::move(items))
                                                       : Structure::list(std::move(items));
    }
    case RemoteStructure::Kind::kDict: {
      Structure::Fields fields;
      for (const auto& [key, value] : s.fields()) {
        path.emplace_back(key);
        fields.emplace(key, resolve_with_refs(value, path, by_reference, refs));
        path.pop_back();
      }
      return Structure::dict(std::move(fields));
    }
  }
  PSFLOW_CHECK(false, "unknown RemoteStructure kind");
  return Structure();
}

}  // namespace

Structure Closure::resolve_args(
    int worker_index, absl::FunctionRef<bool(const internal::RemoteValueState&)> by_reference,
    std::vector<RunRequest::InputRef>* refs) const {
  if (args_.kind() == RemoteStructure::Kind::kValue) return args_.value();
  StructurePath path;
  return resolve_with_refs(args_, path, by_reference, refs);
}

}  // namespace psflow::internal
