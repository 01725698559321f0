// Dataset sources: from_tensor_slices, from_tensors, range, from_generator.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/dataset_internal.h"

namespace psflow::internal {
namespace {

// Tensor leaves of `s` in nest order (Structure::flatten's), with paths such
// as "[0]" or "['images']" for error messages.
absl::Status collect_tensor_leaves(const Structure& s, const std::string& path,
                                   std::vector<Tensor>* leaves, std::vector<std::string>* paths) {
  const std::string where = path.empty() ? "the components" : "leaf " + path;
  switch (s.kind()) {
    case Structure::Kind::kTuple:
    case Structure::Kind::kList:
      for (size_t i = 0; i < s.size(); ++i) {
        absl::Status st =
            collect_tensor_leaves(s[i], absl::StrCat(path, "[", i, "]"), leaves, paths);
        if (!st.ok()) return st;
      }
      return absl::OkStatus();
    case Structure::Kind::kDict:
      for (const auto& [key, value] : s.fields()) {
        absl::Status st =
            collect_tensor_leaves(value, absl::StrCat(path, "['", key, "']"), leaves, paths);
        if (!st.ok()) return st;
      }
      return absl::OkStatus();
    case Structure::Kind::kTensor:
      if (s.tensor().rank() == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Dataset.from_tensor_slices: ", where,
                         " is a scalar tensor, which has no first dimension to slice; "
                         "give it shape [N] or use from_tensors"));
      }
      leaves->push_back(s.tensor());
      paths->push_back(path.empty() ? "(root)" : path);
      return absl::OkStatus();
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("Dataset.from_tensor_slices: ", where, " is ", s.debug_string(),
                       ", not a tensor; every leaf must be a tensor of rank >= 1"));
  }
}

// `shape` of `templ` with its tensor leaves replaced, in order, by leaves.
Structure rebuild(const Structure& templ, const std::vector<Tensor>& leaves, size_t* next) {
  switch (templ.kind()) {
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      Structure::Items items;
      items.reserve(templ.size());
      for (const Structure& item : templ.items()) {
        items.push_back(rebuild(item, leaves, next));
      }
      return templ.kind() == Structure::Kind::kTuple ? Structure::tuple(std::move(items))
                                                     : Structure::list(std::move(items));
    }
    case Structure::Kind::kDict: {
      Structure::Fields fields;
      for (const auto& [key, value] : templ.fields()) {
        fields.emplace(key, rebuild(value, leaves, next));
      }
      return Structure::dict(std::move(fields));
    }
    default: return Structure(leaves[(*next)++]);
  }
}

class TensorSlicesNode final : public DatasetNode {
 public:
  TensorSlicesNode(Structure components, std::vector<Tensor> leaves, int64_t rows)
      : components_(std::move(components)), leaves_(std::move(leaves)), rows_(rows) {}

  std::unique_ptr<IteratorBase> make_iterator() const override;
  int64_t cardinality() const override { return rows_; }

  // Element `row`: every leaf's row, sharing the leaf's buffer.
  Structure element(int64_t row) const {
    std::vector<Tensor> rows;
    rows.reserve(leaves_.size());
    for (const Tensor& leaf : leaves_) {
      const Shape& shape = leaf.shape();
      // A reshape of a one-row slice cannot fail: same element count.
      rows.push_back(*leaf.slice(row, row + 1).reshape(Shape(shape.begin() + 1, shape.end())));
    }
    size_t next = 0;
    return rebuild(components_, rows, &next);
  }

 private:
  Structure components_;
  std::vector<Tensor> leaves_;
  int64_t rows_;
};

class TensorSlicesIterator final : public IteratorBase {
 public:
  explicit TensorSlicesIterator(std::shared_ptr<const TensorSlicesNode> node)
      : node_(std::move(node)) {}
  NextResult get_next() override {
    if (row_ >= node_->cardinality()) return std::nullopt;
    return node_->element(row_++);
  }

 private:
  std::shared_ptr<const TensorSlicesNode> node_;
  int64_t row_ = 0;
};

std::unique_ptr<IteratorBase> TensorSlicesNode::make_iterator() const {
  // The iterator keeps the node alive so that it may outlive the Dataset.
  return std::make_unique<TensorSlicesIterator>(
      std::static_pointer_cast<const TensorSlicesNode>(shared_from_this()));
}

class TensorsIterator final : public IteratorBase {
 public:
  explicit TensorsIterator(Structure element) : element_(std::move(element)) {}
  NextResult get_next() override {
    if (!element_.has_value()) return std::nullopt;
    std::optional<Structure> out = std::move(element_);
    element_.reset();
    return out;
  }

 private:
  std::optional<Structure> element_;
};

class TensorsNode final : public DatasetNode {
 public:
  explicit TensorsNode(Structure element) : element_(std::move(element)) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<TensorsIterator>(element_);
  }
  int64_t cardinality() const override { return 1; }

 private:
  Structure element_;
};

class RangeIterator final : public IteratorBase {
 public:
  RangeIterator(int64_t start, int64_t step, uint64_t count)
      : next_(start), step_(step), remaining_(count) {}
  NextResult get_next() override {
    if (remaining_ == 0) return std::nullopt;
    const int64_t value = next_;
    --remaining_;
    // Only advance when another value follows: the step past the last value
    // may overflow.
    if (remaining_ > 0) next_ += step_;
    return Structure(Tensor::scalar<int64_t>(value));
  }

 private:
  int64_t next_;
  int64_t step_;
  uint64_t remaining_;
};

class RangeNode final : public DatasetNode {
 public:
  RangeNode(int64_t start, int64_t stop, int64_t step) : start_(start), step_(step) {
    // Unsigned arithmetic: stop - start may not fit in int64.
    if (step > 0 && stop > start) {
      const uint64_t span = static_cast<uint64_t>(stop) - static_cast<uint64_t>(start);
      count_ = (span - 1) / static_cast<uint64_t>(step) + 1;
    } else if (step < 0 && stop < start) {
      const uint64_t span = static_cast<uint64_t>(start) - static_cast<uint64_t>(stop);
      const uint64_t magnitude = static_cast<uint64_t>(-(step + 1)) + 1;
      count_ = (span - 1) / magnitude + 1;
    }
  }
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<RangeIterator>(start_, step_, count_);
  }
  int64_t cardinality() const override {
    // A range longer than int64 can count is, for all purposes, endless.
    return count_ > static_cast<uint64_t>(INT64_MAX) ? kInfiniteCardinality
                                                     : static_cast<int64_t>(count_);
  }

 private:
  int64_t start_;
  int64_t step_;
  uint64_t count_ = 0;
};

class GeneratorIterator final : public IteratorBase {
 public:
  explicit GeneratorIterator(std::function<Dataset::Generator()> make_generator)
      : make_generator_(std::move(make_generator)) {}
  NextResult get_next() override {
    if (done_) return std::nullopt;
    if (!generator_) {
      generator_ = make_generator_();
      if (!generator_) {
        done_ = true;
        return absl::InvalidArgumentError(
            "Dataset.from_generator: make_generator returned an empty Generator");
      }
    }
    NextResult next = generator_();
    if (next.ok() && !next->has_value()) done_ = true;
    return next;
  }

 private:
  std::function<Dataset::Generator()> make_generator_;
  Dataset::Generator generator_;
  bool done_ = false;
};

class GeneratorNode final : public DatasetNode {
 public:
  explicit GeneratorNode(std::function<Dataset::Generator()> make_generator)
      : make_generator_(std::move(make_generator)) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    return std::make_unique<GeneratorIterator>(make_generator_);
  }
  int64_t cardinality() const override { return kUnknownCardinality; }

 private:
  std::function<Dataset::Generator()> make_generator_;
};

}  // namespace

NodePtr make_tensor_slices_node(const Structure& components) {
  std::vector<Tensor> leaves;
  std::vector<std::string> paths;
  absl::Status st = collect_tensor_leaves(components, "", &leaves, &paths);
  if (!st.ok()) return make_error_node(std::move(st));
  if (leaves.empty()) {
    return make_error_node(absl::InvalidArgumentError(
        absl::StrCat("Dataset.from_tensor_slices: ", components.debug_string(),
                     " has no tensor leaves to slice")));
  }
  const int64_t rows = leaves[0].dim(0);
  for (size_t i = 1; i < leaves.size(); ++i) {
    if (leaves[i].dim(0) != rows) {
      return make_error_node(absl::InvalidArgumentError(
          absl::StrCat("Dataset.from_tensor_slices: all leaves must have the same first "
                       "dimension, but leaf ",
                       paths[i], " has ", leaves[i].dim(0), " (shape ",
                       shape_string(leaves[i].shape()), ") and leaf ", paths[0], " has ", rows,
                       " (shape ", shape_string(leaves[0].shape()), ")")));
    }
  }
  return std::make_shared<TensorSlicesNode>(components, std::move(leaves), rows);
}

NodePtr make_tensors_node(Structure components) {
  return std::make_shared<TensorsNode>(std::move(components));
}

NodePtr make_range_node(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeNode>(start, stop, step);
}

NodePtr make_generator_node(std::function<Dataset::Generator()> make_generator) {
  return std::make_shared<GeneratorNode>(std::move(make_generator));
}

}  // namespace psflow::internal
