// VariableAggregation / VariableSynchronization names.
#include "psflow/variable_policy.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace psflow {

std::string_view variable_aggregation_name(VariableAggregation a) {
  switch (a) {
    case VariableAggregation::kNone: return "NONE";
    case VariableAggregation::kSum: return "SUM";
    case VariableAggregation::kMean: return "MEAN";
    case VariableAggregation::kOnlyFirstReplica: return "ONLY_FIRST_REPLICA";
  }
  return "";
}

std::string_view variable_synchronization_name(VariableSynchronization s) {
  switch (s) {
    case VariableSynchronization::kAuto: return "AUTO";
    case VariableSynchronization::kNone: return "NONE";
    case VariableSynchronization::kOnWrite: return "ON_WRITE";
    case VariableSynchronization::kOnRead: return "ON_READ";
  }
  return "";
}

absl::StatusOr<VariableAggregation> variable_aggregation_from_name(std::string_view name) {
  for (VariableAggregation a :
       {VariableAggregation::kNone, VariableAggregation::kSum, VariableAggregation::kMean,
        VariableAggregation::kOnlyFirstReplica}) {
    if (variable_aggregation_name(a) == name) return a;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown variable aggregation '", std::string(name),
                   "'; expected NONE, SUM, MEAN or ONLY_FIRST_REPLICA"));
}

absl::StatusOr<VariableSynchronization> variable_synchronization_from_name(std::string_view name) {
  for (VariableSynchronization s :
       {VariableSynchronization::kAuto, VariableSynchronization::kNone,
        VariableSynchronization::kOnWrite, VariableSynchronization::kOnRead}) {
    if (variable_synchronization_name(s) == name) return s;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown variable synchronization '",
                                                 std::string(name),
                                                 "'; expected AUTO, NONE, ON_WRITE or ON_READ"));
}

}  // namespace psflow
