#include "strategy/reduce_nest.h"

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/reduce_kernels.h"

namespace psflow::internal {
namespace {

std::string_view nest_kind_name(Structure::Kind kind) {
  switch (kind) {
    case Structure::Kind::kTuple: return "tuple";
    case Structure::Kind::kList: return "list";
    case Structure::Kind::kDict: return "dict";
    default: return "leaf";
  }
}

bool is_nest(const Structure& s) { return s.is_sequence() || s.is_dict(); }

absl::Status nesting_mismatch(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat("nesting differs at ", path.empty() ? "the top" : path, ": ", what));
}

absl::Status check_nesting_at(const Structure& a, const Structure& b, std::string* path) {
  if (!is_nest(a) && !is_nest(b)) return absl::OkStatus();
  if (a.kind() != b.kind()) {
    return nesting_mismatch(
        *path, absl::StrCat(av(nest_kind_name(a.kind())), " vs ", av(nest_kind_name(b.kind()))));
  }
  if (a.size() != b.size()) {
    return nesting_mismatch(*path, absl::StrCat(av(nest_kind_name(a.kind())), " of ", a.size(),
                                                " vs ", b.size(), " elements"));
  }
  const size_t mark = path->size();
  if (a.is_sequence()) {
    for (size_t i = 0; i < a.size(); ++i) {
      absl::StrAppend(path, "[", i, "]");
      PSFLOW_RETURN_IF_ERROR(check_nesting_at(a[i], b[i], path));
      path->resize(mark);
    }
    return absl::OkStatus();
  }
  auto ia = a.fields().begin();
  auto ib = b.fields().begin();
  for (; ia != a.fields().end(); ++ia, ++ib) {
    if (ia->first != ib->first) {
      return nesting_mismatch(*path, absl::StrCat("key '", ia->first, "' vs '", ib->first, "'"));
    }
    absl::StrAppend(path, "['", ia->first, "']");
    PSFLOW_RETURN_IF_ERROR(check_nesting_at(ia->second, ib->second, path));
    path->resize(mark);
  }
  return absl::OkStatus();
}

Structure pack_at(const Structure& like, absl::Span<const Structure> leaves, size_t* next) {
  if (like.is_sequence()) {
    Structure::Items items;
    items.reserve(like.size());
    for (const Structure& item : like.items()) items.push_back(pack_at(item, leaves, next));
    return like.kind() == Structure::Kind::kTuple ? Structure::tuple(std::move(items))
                                                  : Structure::list(std::move(items));
  }
  if (like.is_dict()) {
    Structure::Fields fields;
    for (const auto& [key, value] : like.fields())
      fields.emplace(key, pack_at(value, leaves, next));
    return Structure::dict(std::move(fields));
  }
  PSFLOW_CHECK(*next < leaves.size(), "pack_like: too few leaves");
  return leaves[(*next)++];
}

// Checks the nesting, then combines leaf position j of every component
// with `combine`; errors of nested leaves name the leaf ("leaf 2: ...").
absl::StatusOr<Structure> leafwise(
    absl::Span<const Structure> components,
    const std::function<absl::StatusOr<Tensor>(absl::Span<const Tensor>)>& combine) {
  PSFLOW_CHECK(!components.empty());
  for (size_t r = 1; r < components.size(); ++r) {
    absl::Status s = check_same_nesting(components[0], components[r]);
    if (!s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica ", r, " does not nest like replica 0: ", s.message()));
    }
  }
  std::vector<std::vector<Structure>> flat;
  flat.reserve(components.size());
  for (const Structure& c : components) flat.push_back(c.flatten());
  const bool nested = is_nest(components[0]);
  std::vector<Structure> out;
  out.reserve(flat[0].size());
  std::vector<Tensor> tensors(components.size());
  for (size_t j = 0; j < flat[0].size(); ++j) {
    absl::Status status;
    for (size_t r = 0; r < components.size() && status.ok(); ++r) {
      absl::StatusOr<Tensor> t = leaf_to_tensor(flat[r][j]);
      if (t.ok()) {
        tensors[r] = *std::move(t);
      } else {
        status =
            absl::InvalidArgumentError(absl::StrCat("replica ", r, ": ", t.status().message()));
      }
    }
    absl::StatusOr<Tensor> combined = status.ok() ? combine(tensors) : status;
    if (!combined.ok()) {
      if (!nested) return combined.status();
      return absl::Status(combined.status().code(),
                          absl::StrCat("leaf ", j, ": ", combined.status().message()));
    }
    out.push_back(*std::move(combined));
  }
  return pack_like(components[0], out);
}

}  // namespace

absl::Status check_same_nesting(const Structure& a, const Structure& b) {
  std::string path;
  return check_nesting_at(a, b, &path);
}

Structure pack_like(const Structure& like, absl::Span<const Structure> leaves) {
  size_t next = 0;
  Structure out = pack_at(like, leaves, &next);
  PSFLOW_CHECK(next == leaves.size(), "pack_like: too many leaves");
  return out;
}

absl::StatusOr<Structure> reduce_components(ReduceOp op, absl::Span<const Structure> components,
                                            const std::optional<std::vector<int>>& axes) {
  return leafwise(components, [&](absl::Span<const Tensor> tensors) -> absl::StatusOr<Tensor> {
    if (!axes.has_value()) {
      PSFLOW_ASSIGN_OR_RETURN(Tensor sum, add_replicas(tensors));
      if (op == ReduceOp::kSum) return sum;
      return divide(sum, static_cast<double>(tensors.size()));
    }
    std::vector<Tensor> partial;
    partial.reserve(tensors.size());
    int64_t denominator = 0;
    for (size_t r = 0; r < tensors.size(); ++r) {
      const Tensor& t = tensors[r];
      if (!t.valid()) {
        return absl::InvalidArgumentError(absl::StrCat("replica ", r, " holds an invalid tensor"));
      }
      PSFLOW_RETURN_IF_ERROR(check_reducible(t.dtype()));
      absl::StatusOr<std::vector<int>> normalized = normalize_axes(*axes, t.rank());
      if (!normalized.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("replica ", r, ": ", normalized.status().message()));
      }
      partial.push_back(sum_along(t, *normalized));
      denominator += axes_size(t.shape(), *normalized);
    }
    PSFLOW_ASSIGN_OR_RETURN(Tensor sum, add_replicas(partial));
    if (op == ReduceOp::kSum) return sum;
    return divide(sum, static_cast<double>(denominator));
  });
}

absl::StatusOr<Structure> gather_components(absl::Span<const Structure> components, int axis) {
  return leafwise(components,
                  [&](absl::Span<const Tensor> tensors) { return concat_replicas(tensors, axis); });
}

}  // namespace psflow::internal
