#include "ps/request/snapshot_results.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/strings.h"

namespace psflow::internal {

void append_snapshot_results(ShardSnapshot snapshot, std::vector<Tensor>* results) {
  results->push_back(std::move(snapshot.value));
  results->push_back(Tensor::scalar<int64_t>(snapshot.slots.steps));
  std::vector<std::string> names;
  names.reserve(1 + snapshot.slots.slots.size());
  names.push_back(snapshot.slots.optimizer);
  for (const auto& [name, slot] : snapshot.slots.slots) names.push_back(name);
  results->push_back(Tensor::from_strings(std::move(names)));
  for (auto& [name, slot] : snapshot.slots.slots) results->push_back(std::move(slot));
}

absl::StatusOr<ShardSnapshot> take_snapshot_results(std::vector<Tensor>& results, size_t* pos,
                                                    std::string_view variable) {
  auto bad = [&](std::string_view what) {
    return absl::InternalError(absl::StrCat("the SNAPSHOT answer for variable '", av(variable),
                                            "' is malformed: ", av(what),
                                            "; client and ps disagree on the protocol"));
  };
  size_t i = *pos;
  if (results.size() < i + 3) return bad("fewer than 3 results");
  ShardSnapshot s;
  s.value = std::move(results[i]);
  const Tensor& steps = results[i + 1];
  const Tensor& names = results[i + 2];
  if (!s.value.valid()) return bad("the value is missing");
  if (steps.dtype() != DType::kInt64 || steps.rank() != 0)
    return bad("steps is not an int64 scalar");
  if (names.dtype() != DType::kString || names.rank() != 1 || names.num_elements() < 1) {
    return bad("the names are not a non-empty 1-D string tensor");
  }
  s.slots.steps = steps.scalar_value<int64_t>();
  s.slots.optimizer = names.string_at(0);
  const auto k = static_cast<size_t>(names.num_elements() - 1);
  if (results.size() - (i + 3) < k) return bad("slots are missing");
  for (size_t j = 0; j < k; ++j) {
    Tensor& slot = results[i + 3 + j];
    if (slot.dtype() != s.value.dtype() || slot.shape() != s.value.shape()) {
      return bad(absl::StrCat("slot '", names.string_at(static_cast<int64_t>(j + 1)),
                              "' differs from the value in dtype or shape"));
    }
    auto [it, inserted] =
        s.slots.slots.emplace(names.string_at(static_cast<int64_t>(j + 1)), std::move(slot));
    if (!inserted) return bad(absl::StrCat("slot '", it->first, "' appears twice"));
  }
  *pos = i + 3 + k;
  return s;
}

size_t op_result_count(const VariableOpArgs& op, const std::vector<Tensor>& results, size_t first) {
  switch (op.kind) {
    case v1::VariableOp::READ:
    case v1::VariableOp::GATHER:
    case v1::VariableOp::DE_LOOKUP:
    case v1::VariableOp::DE_STATS: return 1;
    case v1::VariableOp::DE_EXPORT: {
      // int64 [5] (clock, applies, k, total, next cursor), keys, last
      // seen, values, k slots.
      const size_t left = first < results.size() ? results.size() - first : 0;
      if (left < 4) return left;
      const Tensor& head = results[first];
      if (head.dtype() != DType::kInt64 || head.num_elements() != 5) return left;
      const int64_t k = head.flat<int64_t>()[2];
      if (k < 0 || static_cast<size_t>(k) > left - 4) return left;
      return 4 + static_cast<size_t>(k);
    }
    case v1::VariableOp::SNAPSHOT: {
      const size_t left = first < results.size() ? results.size() - first : 0;
      if (left < 3) return left;
      const Tensor& names = results[first + 2];
      if (names.dtype() != DType::kString || names.num_elements() < 1) return left;
      return std::min(left, 2 + static_cast<size_t>(names.num_elements()));
    }
    default: return 0;
  }
}

void set_restore_state(const ShardSnapshot& snapshot, VariableOpArgs* op) {
  op->value = snapshot.value;
  op->optimizer_name = snapshot.slots.optimizer;
  op->optimizer_steps = snapshot.slots.steps;
  op->slot_names.clear();
  op->slots.clear();
  for (const auto& [name, slot] : snapshot.slots.slots) {
    op->slot_names.push_back(name);
    op->slots.push_back(slot);
  }
}

absl::StatusOr<ShardSnapshot> restore_state(const VariableOpArgs& op) {
  if (op.slot_names.size() != op.slots.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RESTORE of variable '", op.variable, "' names ", op.slot_names.size(),
        " slot(s) but carries ", op.slots.size(), " slot tensor(s); send one name per slot"));
  }
  ShardSnapshot s;
  s.value = op.value;
  s.slots.optimizer = op.optimizer_name;
  s.slots.steps = op.optimizer_steps;
  for (size_t i = 0; i < op.slots.size(); ++i) {
    auto [it, inserted] = s.slots.slots.emplace(op.slot_names[i], op.slots[i]);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("RESTORE of variable '", op.variable,
                                                     "' names slot '", it->first, "' twice"));
    }
  }
  return s;
}

}  // namespace psflow::internal
