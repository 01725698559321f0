// Nested values: tuples, lists and dicts of tensors and scalars.
#ifndef PSFLOW_STRUCTURE_H_
#define PSFLOW_STRUCTURE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "psflow/tensor.h"

namespace psflow {

// A nested value as TF's `nest` sees it: None, a tensor, a Python-like
// scalar (int, float, bool, string), or a tuple / list / dict of further
// structures. Dict keys are kept sorted, as TF's nest orders them.
// `(2, (3, 4), [5], {'v': 1})` is
//   Structure::tuple({2, Structure::tuple({3, 4}), Structure::list({5}),
//                     Structure::dict({{"v", 1}})})
//
// Thread-safety: a value type; const methods may run concurrently.
class Structure {
 public:
  enum class Kind { kNone, kTensor, kInt, kFloat, kBool, kString, kTuple, kList, kDict };
  using Items = std::vector<Structure>;
  using Fields = std::map<std::string, Structure, std::less<>>;

  Structure() = default;  // None
  Structure(Tensor t);    // NOLINT: implicit on purpose, for nested literals
  Structure(int v) : value_(static_cast<int64_t>(v)) {}  // NOLINT
  Structure(int64_t v) : value_(v) {}                    // NOLINT
  Structure(double v) : value_(v) {}                     // NOLINT
  Structure(bool v) : value_(v) {}                       // NOLINT
  Structure(std::string v) : value_(std::move(v)) {}     // NOLINT
  Structure(const char* v) : value_(std::string(v)) {}   // NOLINT

  [[nodiscard]] static Structure none() { return Structure(); }
  [[nodiscard]] static Structure tuple(Items items);
  [[nodiscard]] static Structure list(Items items);
  [[nodiscard]] static Structure dict(Fields fields);

  [[nodiscard]] Kind kind() const;
  [[nodiscard]] bool is_none() const { return kind() == Kind::kNone; }
  [[nodiscard]] bool is_tensor() const { return kind() == Kind::kTensor; }
  [[nodiscard]] bool is_sequence() const { return kind() == Kind::kTuple || kind() == Kind::kList; }
  [[nodiscard]] bool is_dict() const { return kind() == Kind::kDict; }

  // Accessors abort when the kind does not match (a programming error);
  // code handling untrusted values checks kind() first.
  [[nodiscard]] const Tensor& tensor() const;
  [[nodiscard]] int64_t int_value() const;
  [[nodiscard]] double float_value() const;
  [[nodiscard]] bool bool_value() const;
  [[nodiscard]] const std::string& string_value() const;
  [[nodiscard]] const Items& items() const;    // tuple or list
  [[nodiscard]] const Fields& fields() const;  // dict
  // Element count of a tuple, list or dict; 0 otherwise.
  [[nodiscard]] size_t size() const;
  [[nodiscard]] const Structure& operator[](size_t i) const;
  [[nodiscard]] const Structure& operator[](std::string_view key) const;

  // Leaves in nest order (depth first, dict entries by sorted key). None
  // counts as a leaf, as in TF's nest.flatten.
  [[nodiscard]] std::vector<Structure> flatten() const;
  // Nesting depth: 0 for a leaf.
  [[nodiscard]] int depth() const;

  // Python-like printout: `(2, (3, 4), [5], {'v': 1})`, `(1,)`, `1.0`,
  // `'it'`, `True`, `None`, as Python's repr() of the same value; tensors
  // print as Tensor::debug_string.
  [[nodiscard]] std::string debug_string() const;

  // Exact equality (tensors by Tensor ==; tuple != list; 1 != 1.0).
  friend bool operator==(const Structure& a, const Structure& b);

 private:
  struct Tuple {
    Items items;
  };
  struct List {
    Items items;
  };
  struct Dict {
    Fields fields;
  };
  std::variant<std::monostate, Tensor, int64_t, double, bool, std::string,
               std::shared_ptr<const Tuple>, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>>
      value_;
};

// A kind as error messages name it: "None", "tensor", "int", "float", "bool",
// "string", "tuple", "list", "dict".
[[nodiscard]] std::string_view kind_name(Structure::Kind kind);
// The same with its article: "None", "a tensor", "an int", ... "a dict".
[[nodiscard]] std::string_view kind_name_with_article(Structure::Kind kind);

// Prints debug_string().
std::ostream& operator<<(std::ostream& os, const Structure& s);

// Same shape of nesting, and leaves equal up to all_close for float tensors
// and floats. The message names the path of the first difference, e.g.
// "[1][0]: 3 vs 4".
[[nodiscard]] absl::Status all_close(const Structure& a, const Structure& b, double rtol = 1e-5,
                                     double atol = 1e-8);

}  // namespace psflow

#endif  // PSFLOW_STRUCTURE_H_
