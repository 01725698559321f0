#include "checkpoint/reshard.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"

namespace psflow::internal::checkpoint {
namespace {

int64_t rows_of(const Shape& shape) { return shape.empty() ? 1 : shape[0]; }

size_t row_bytes(DType dtype, const Shape& shape) {
  size_t n = dtype_size(dtype);
  for (size_t i = 1; i < shape.size(); ++i) n *= static_cast<size_t>(shape[i]);
  return n;
}

// Rows [offset, offset + rows) of `t` set to `value`.
void fill_rows(Tensor& t, int64_t first, int64_t rows, double value) {
  if (rows <= 0) return;
  const int64_t per_row = t.num_elements() / std::max<int64_t>(rows_of(t.shape()), 1);
  if (t.dtype() == DType::kFloat32) {
    float* p = t.mutable_flat<float>().data() + first * per_row;
    std::fill(p, p + rows * per_row, static_cast<float>(value));
  } else if (t.dtype() == DType::kFloat64) {
    double* p = t.mutable_flat<double>().data() + first * per_row;
    std::fill(p, p + rows * per_row, value);
  }
}

void copy_rows(const Tensor& from, int64_t from_row, Tensor& to, int64_t to_row, int64_t rows,
               size_t bytes_per_row) {
  if (rows <= 0 || bytes_per_row == 0) return;
  std::memcpy(static_cast<uint8_t*>(to.mutable_raw_data()) + to_row * bytes_per_row,
              static_cast<const uint8_t*>(from.raw_data()) + from_row * bytes_per_row,
              static_cast<size_t>(rows) * bytes_per_row);
}

}  // namespace

absl::StatusOr<std::vector<ShardSnapshot>> reshard(std::string_view variable, DType dtype,
                                                   const Shape& full_shape,
                                                   const std::vector<SavedPart>& saved,
                                                   const std::vector<TargetPart>& targets,
                                                   const OptimizerConfig* fill) {
  auto bad = [&](std::string_view what) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot restore variable '", av(variable), "': ", av(what)));
  };
  // Inputs come from a validated index and the current handles; re-check
  // the invariants this function relies on.
  int64_t next = 0;
  for (const SavedPart& p : saved) {
    if (p.state.value.dtype() != dtype || p.offset != next ||
        p.state.value.rank() != static_cast<int>(full_shape.size())) {
      return bad("the saved parts do not tile the variable");
    }
    next += full_shape.empty() ? 1 : p.state.value.dim(0);
  }
  if (saved.empty() || next != rows_of(full_shape)) return bad("the saved parts do not tile it");
  next = 0;
  for (const TargetPart& t : targets) {
    if (t.offset != next || t.shape.size() != full_shape.size()) {
      return bad("the current parts do not tile the variable");
    }
    next += rows_of(t.shape);
  }
  if (targets.empty() || next != rows_of(full_shape))
    return bad("the current parts do not tile it");

  const size_t bytes_per_row = row_bytes(dtype, full_shape);
  std::vector<ShardSnapshot> out;
  out.reserve(targets.size());
  for (const TargetPart& target : targets) {
    const int64_t begin = target.offset;
    const int64_t end = begin + rows_of(target.shape);
    // A saved part with exactly these rows: share it.
    auto same = std::find_if(saved.begin(), saved.end(), [&](const SavedPart& p) {
      return p.offset == begin && p.state.value.shape() == target.shape;
    });
    if (same != saved.end() && (end > begin || full_shape.empty())) {
      out.push_back(same->state);
      continue;
    }
    std::vector<const SavedPart*> overlapping;
    for (const SavedPart& p : saved) {
      const int64_t p_end = p.offset + rows_of(p.state.value.shape());
      if (p.offset < end && begin < p_end) overlapping.push_back(&p);
    }
    ShardSnapshot s;
    s.value = Tensor(dtype, target.shape);
    for (const SavedPart* p : overlapping) {
      if (p->state.slots.optimizer.empty()) continue;
      if (s.slots.optimizer.empty()) {
        s.slots.optimizer = p->state.slots.optimizer;
      } else if (s.slots.optimizer != p->state.slots.optimizer) {
        return bad(absl::StrCat("rows [", begin, ", ", end, ") come from parts trained by the ",
                                s.slots.optimizer, " and the ", p->state.slots.optimizer,
                                " optimizers, which one part cannot hold"));
      }
      s.slots.steps = std::max(s.slots.steps, p->state.slots.steps);
    }
    std::vector<std::string_view> slot_names;
    if (!s.slots.optimizer.empty()) {
      PSFLOW_ASSIGN_OR_RETURN(OptimizerConfig::Kind kind,
                              optimizer_kind_from_name(s.slots.optimizer));
      slot_names = optimizer_slot_names(kind);
      for (std::string_view name : slot_names) {
        s.slots.slots.emplace(std::string(name), Tensor(dtype, target.shape));
      }
    }
    for (const SavedPart* p : overlapping) {
      const int64_t from = std::max(begin, p->offset);
      const int64_t to = std::min(end, p->offset + rows_of(p->state.value.shape()));
      copy_rows(p->state.value, from - p->offset, s.value, from - begin, to - from, bytes_per_row);
      for (std::string_view name : slot_names) {
        Tensor& slot = s.slots.slots.find(name)->second;
        auto src = p->state.slots.slots.find(name);
        if (src != p->state.slots.slots.end()) {
          copy_rows(src->second, from - p->offset, slot, from - begin, to - from, bytes_per_row);
          continue;
        }
        // Rows this optimizer never touched: the slot's initial value.
        double init = 0;
        if (name == "accumulator") {
          if (fill == nullptr) {
            return bad(absl::StrCat(
                "rows [", from, ", ", to, ") have no ", s.slots.optimizer,
                " state while the rows beside them do, and the initial accumulator value is "
                "unknown; track the optimizer in the Checkpoint"));
          }
          init = optimizer_slot_initial_value(*fill, name);
        }
        fill_rows(slot, from - begin, to - from, init);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace psflow::internal::checkpoint
