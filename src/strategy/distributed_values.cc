#include "psflow/distributed_values.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/strings.h"

namespace psflow {

using internal::av;

struct DistributedNest::Node {
  Structure::Kind kind = Structure::Kind::kTuple;  // kTuple, kList or kDict.
  std::vector<DistributedNest> items;
  std::map<std::string, DistributedNest> fields;

  // The nest whose root is `node`.
  static DistributedNest nest(Node node) {
    DistributedNest n;
    n.value_ = std::make_shared<const Node>(std::move(node));
    return n;
  }
};

DistributedValues::DistributedValues(std::string_view type_name, std::vector<Structure> values)
    : type_name_(type_name),
      values_(std::make_shared<const std::vector<Structure>>(std::move(values))) {
  PSFLOW_CHECK(!values_->empty(), av(type_name), " needs at least one value");
}

const Structure& DistributedValues::operator[](int replica_id) const {
  PSFLOW_CHECK(replica_id >= 0 && replica_id < num_replicas(), "replica ", replica_id,
               " out of range for ", av(type_name_), " of ", num_replicas(), " values");
  return (*values_)[replica_id];
}

std::string DistributedValues::debug_string() const {
  // TF: "%s:{\n%s\n}" % (class name, ",\n".join("  %d: %s" % (i, v))).
  std::string out = absl::StrCat(av(type_name_), ":{\n");
  for (size_t i = 0; i < values_->size(); ++i) {
    if (i > 0) out.append(",\n");
    absl::StrAppend(&out, "  ", i, ": ", (*values_)[i].debug_string());
  }
  out.append("\n}");
  return out;
}

bool operator==(const DistributedValues& a, const DistributedValues& b) {
  return a.type_name_ == b.type_name_ && *a.values_ == *b.values_;
}

std::ostream& operator<<(std::ostream& os, const DistributedValues& v) {
  return os << v.debug_string();
}

DistributedNest DistributedNest::tuple(std::vector<DistributedNest> items) {
  return Node::nest({Structure::Kind::kTuple, std::move(items), {}});
}

DistributedNest DistributedNest::list(std::vector<DistributedNest> items) {
  return Node::nest({Structure::Kind::kList, std::move(items), {}});
}

DistributedNest DistributedNest::dict(std::map<std::string, DistributedNest> fields) {
  return Node::nest({Structure::Kind::kDict, {}, std::move(fields)});
}

const Structure& DistributedNest::plain() const {
  PSFLOW_CHECK(is_plain(), "DistributedNest::plain() on a non-plain value");
  return std::get<Structure>(value_);
}

const DistributedValues& DistributedNest::distributed() const {
  PSFLOW_CHECK(is_distributed(), "DistributedNest::distributed() on a non-distributed value");
  return std::get<DistributedValues>(value_);
}

bool DistributedNest::contains_distributed() const {
  if (is_distributed()) return true;
  if (is_plain()) return false;
  const Node& node = *std::get<std::shared_ptr<const Node>>(value_);
  for (const DistributedNest& item : node.items) {
    if (item.contains_distributed()) return true;
  }
  for (const auto& [key, value] : node.fields) {
    if (value.contains_distributed()) return true;
  }
  return false;
}

absl::StatusOr<Structure> DistributedNest::map_structure(const LeafFn& fn) const {
  // A local class may use Node, as the member function may.
  struct Walker {
    const LeafFn& fn;
    absl::StatusOr<Structure> walk(const DistributedNest& n, std::string* path) const {
      if (n.is_plain() || n.is_distributed()) {
        absl::StatusOr<Structure> s = fn(n);
        if (s.ok() || path->empty()) return s;
        return absl::Status(s.status().code(),
                            absl::StrCat("at ", *path, ": ", s.status().message()));
      }
      const Node& node = *std::get<std::shared_ptr<const Node>>(n.value_);
      const size_t mark = path->size();
      if (node.kind == Structure::Kind::kDict) {
        Structure::Fields fields;
        for (const auto& [key, value] : node.fields) {
          absl::StrAppend(path, "['", key, "']");
          absl::StatusOr<Structure> s = walk(value, path);
          if (!s.ok()) return s.status();
          path->resize(mark);
          fields.emplace(key, *std::move(s));
        }
        return Structure::dict(std::move(fields));
      }
      Structure::Items items;
      for (size_t i = 0; i < node.items.size(); ++i) {
        absl::StrAppend(path, "[", i, "]");
        absl::StatusOr<Structure> s = walk(node.items[i], path);
        if (!s.ok()) return s.status();
        path->resize(mark);
        items.push_back(*std::move(s));
      }
      return node.kind == Structure::Kind::kTuple ? Structure::tuple(std::move(items))
                                                  : Structure::list(std::move(items));
    }
  };
  std::string path;
  return Walker{fn}.walk(*this, &path);
}

absl::StatusOr<Structure> DistributedNest::select_replica(int replica_id, int num_replicas) const {
  return map_structure([&](const DistributedNest& leaf) -> absl::StatusOr<Structure> {
    if (leaf.is_plain()) return leaf.plain();
    const DistributedValues& v = leaf.distributed();
    if (v.num_replicas() != num_replicas) {
      return absl::InvalidArgumentError(
          absl::StrCat(av(v.type_name()), " has ", v.num_replicas(), " values but there are ",
                       num_replicas, " replicas; make it with a group of the same size"));
    }
    return v[replica_id];
  });
}

std::string DistributedNest::debug_string() const {
  if (is_plain()) return plain().debug_string();
  if (is_distributed()) return distributed().debug_string();
  const Node& node = *std::get<std::shared_ptr<const Node>>(value_);
  std::string out;
  if (node.kind == Structure::Kind::kDict) {
    out.push_back('{');
    bool first = true;
    for (const auto& [key, value] : node.fields) {
      if (!first) out.append(", ");
      first = false;
      absl::StrAppend(&out, "'", key, "': ", value.debug_string());
    }
    out.push_back('}');
    return out;
  }
  const bool tuple = node.kind == Structure::Kind::kTuple;
  out.push_back(tuple ? '(' : '[');
  for (size_t i = 0; i < node.items.size(); ++i) {
    if (i > 0) out.append(", ");
    out.append(node.items[i].debug_string());
  }
  if (tuple && node.items.size() == 1) out.push_back(',');
  out.push_back(tuple ? ')' : ']');
  return out;
}

}  // namespace psflow
