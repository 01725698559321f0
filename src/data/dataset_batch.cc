// batch: stacks consecutive elements leaf by leaf into contiguous tensors.
// This is the per-step hot path of image pipelines (60,000 Fashion-MNIST
// rows an epoch), so tensor leaves are copied with one memcpy per element.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "data/dataset_internal.h"

namespace psflow::internal {
namespace {

absl::Status mismatch(const std::string& path, size_t index, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("Dataset.batch: element ", index, " of the batch does not match element 0 at ",
                   path.empty() ? "the root" : absl::StrCat("leaf ", path), ": ", av(what),
                   "; batch needs equal nesting, dtypes and shapes (map elements to a common "
                   "shape first)"));
}

Tensor stack_tensors(const std::vector<const Structure*>& elems) {
  const Tensor& first = elems[0]->tensor();
  Shape shape;
  shape.reserve(first.shape().size() + 1);
  shape.push_back(static_cast<int64_t>(elems.size()));
  shape.insert(shape.end(), first.shape().begin(), first.shape().end());
  Tensor out(first.dtype(), std::move(shape));
  if (first.dtype() == DType::kString) {
    const int64_t per = first.num_elements();
    for (size_t i = 0; i < elems.size(); ++i) {
      const Tensor& t = elems[i]->tensor();
      for (int64_t j = 0; j < per; ++j) {
        out.mutable_string_at(static_cast<int64_t>(i) * per + j) = t.string_at(j);
      }
    }
    return out;
  }
  const size_t row_bytes = first.byte_size();
  if (row_bytes == 0) return out;
  auto* dst = static_cast<uint8_t*>(out.mutable_raw_data());
  for (const Structure* e : elems) {
    std::memcpy(dst, e->tensor().raw_data(), row_bytes);
    dst += row_bytes;
  }
  return out;
}

template <typename T, typename Get>
Tensor stack_scalars(const std::vector<const Structure*>& elems, Get get) {
  Tensor out(dtype_of<T>(), Shape{static_cast<int64_t>(elems.size())});
  if constexpr (std::is_same_v<T, std::string>) {
    for (size_t i = 0; i < elems.size(); ++i) {
      out.mutable_string_at(static_cast<int64_t>(i)) = get(*elems[i]);
    }
  } else {
    absl::Span<T> flat = out.mutable_flat<T>();
    for (size_t i = 0; i < elems.size(); ++i) flat[i] = get(*elems[i]);
  }
  return out;
}

absl::StatusOr<Structure> stack(const std::vector<const Structure*>& elems,
                                const std::string& path) {
  const Structure& first = *elems[0];
  const Structure::Kind kind = first.kind();
  for (size_t i = 1; i < elems.size(); ++i) {
    const Structure& e = *elems[i];
    if (e.kind() != kind) {
      return mismatch(path, i,
                      absl::StrCat(av(kind_name_with_article(e.kind())), " vs ",
                                   av(kind_name_with_article(kind))));
    }
    if (first.is_sequence() && e.size() != first.size()) {
      return mismatch(path, i, absl::StrCat(e.size(), " items vs ", first.size()));
    }
    if (kind == Structure::Kind::kTensor) {
      const Tensor& a = e.tensor();
      const Tensor& b = first.tensor();
      if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
        return mismatch(
            path, i,
            absl::StrCat(av(dtype_name(a.dtype())), " ", shape_string(a.shape()), " vs ",
                         av(dtype_name(b.dtype())), " ", shape_string(b.shape())));
      }
    }
  }
  std::vector<const Structure*> children(elems.size());
  switch (kind) {
    case Structure::Kind::kTuple:
    case Structure::Kind::kList: {
      Structure::Items items;
      items.reserve(first.size());
      for (size_t k = 0; k < first.size(); ++k) {
        for (size_t i = 0; i < elems.size(); ++i) children[i] = &(*elems[i])[k];
        absl::StatusOr<Structure> s = stack(children, absl::StrCat(path, "[", k, "]"));
        if (!s.ok()) return s.status();
        items.push_back(*std::move(s));
      }
      return kind == Structure::Kind::kTuple ? Structure::tuple(std::move(items))
                                             : Structure::list(std::move(items));
    }
    case Structure::Kind::kDict: {
      Structure::Fields fields;
      for (const auto& [key, value] : first.fields()) {
        for (size_t i = 0; i < elems.size(); ++i) {
          const Structure::Fields& f = elems[i]->fields();
          auto it = f.find(key);
          if (it == f.end() || f.size() != first.fields().size()) {
            return mismatch(path, i, "different dict keys");
          }
          children[i] = &it->second;
        }
        absl::StatusOr<Structure> s = stack(children, absl::StrCat(path, "['", key, "']"));
        if (!s.ok()) return s.status();
        fields.emplace(key, *std::move(s));
      }
      return Structure::dict(std::move(fields));
    }
    case Structure::Kind::kTensor: return Structure(stack_tensors(elems));
    case Structure::Kind::kInt:
      return Structure(
          stack_scalars<int64_t>(elems, [](const Structure& s) { return s.int_value(); }));
    case Structure::Kind::kFloat:
      return Structure(
          stack_scalars<double>(elems, [](const Structure& s) { return s.float_value(); }));
    case Structure::Kind::kBool:
      return Structure(
          stack_scalars<bool>(elems, [](const Structure& s) { return s.bool_value(); }));
    case Structure::Kind::kString:
      return Structure(stack_scalars<std::string>(
          elems, [](const Structure& s) -> const std::string& { return s.string_value(); }));
    case Structure::Kind::kNone: return Structure::none();
  }
  return absl::InternalError("unreachable Structure kind");
}

class BatchIterator final : public IteratorBase {
 public:
  BatchIterator(std::unique_ptr<IteratorBase> input, int64_t batch_size, bool drop_remainder,
                size_t reserve)
      : input_(std::move(input)),
        batch_size_(static_cast<size_t>(batch_size)),
        drop_remainder_(drop_remainder) {
    pending_.reserve(reserve);
  }

  NextResult get_next() override {
    // After an input error, the next call completes the batch.
    if (absl::Status s = fill_buffer(&input_, batch_size_, &pending_); !s.ok()) return s;
    if (pending_.empty() || (pending_.size() < batch_size_ && drop_remainder_)) {
      pending_.clear();
      return std::nullopt;
    }
    absl::StatusOr<Structure> batch = stack_elements(pending_);
    pending_.clear();
    if (!batch.ok()) return batch.status();
    return std::optional<Structure>(*std::move(batch));
  }

 private:
  std::unique_ptr<IteratorBase> input_;  // null once exhausted
  size_t batch_size_;
  bool drop_remainder_;
  std::vector<Structure> pending_;
};

class BatchNode final : public DatasetNode {
 public:
  BatchNode(NodePtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}
  std::unique_ptr<IteratorBase> make_iterator() const override {
    const size_t reserve = static_cast<size_t>(std::min<int64_t>(batch_size_, 1 << 16));
    return std::make_unique<BatchIterator>(input_->make_iterator(), batch_size_, drop_remainder_,
                                           reserve);
  }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : n / batch_size_ + (n % batch_size_ != 0);
  }

 private:
  NodePtr input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

absl::StatusOr<Structure> stack_elements(const std::vector<Structure>& elements) {
  if (elements.empty()) {
    return absl::InvalidArgumentError("Dataset.batch: no elements to stack");
  }
  std::vector<const Structure*> elems;
  elems.reserve(elements.size());
  for (const Structure& e : elements) elems.push_back(&e);
  return stack(elems, "");
}

NodePtr make_batch_node(NodePtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size, drop_remainder);
}

}  // namespace psflow::internal
