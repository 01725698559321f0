// Helpers for checkpoint tests: temporary directories, whole-variable
// state (value and slots reassembled over parts), and byte surgery on files.
// Header-only; used by src/checkpoint/*_test.cc.
#ifndef PSFLOW_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_
#define PSFLOW_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_

#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "optimizer/optimizer.h"
#include "psflow/variable.h"
#include "strategy/variable_snapshots.h"

namespace psflow::internal::testing {

// A fresh directory under the test temp dir, removed on destruction.
// Thread-safety: a value owned by one test.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = (std::filesystem::path(::testing::TempDir()) /
             absl::StrCat("psflow_ckpt_", ::getpid(), "_", counter.fetch_add(1)))
                .string();
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::string operator/(const std::string& name) const {
    return (std::filesystem::path(path_) / name).string();
  }

 private:
  std::string path_;
};

inline std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Rows of `parts` (same dtype, rank >= 1) stacked along axis 0; a single
// part (scalars included) is returned as is.
inline Tensor concat_rows(const std::vector<Tensor>& parts) {
  if (parts.size() == 1) return parts[0];
  Shape shape = parts[0].shape();
  shape[0] = 0;
  for (const Tensor& p : parts) shape[0] += p.dim(0);
  Tensor out(parts[0].dtype(), shape);
  size_t at = 0;
  for (const Tensor& p : parts) {
    std::memcpy(static_cast<uint8_t*>(out.mutable_raw_data()) + at, p.raw_data(), p.byte_size());
    at += p.byte_size();
  }
  return out;
}

// A variable's whole state as if it were one part: the value, each slot
// (rows of parts without optimizer state hold `fill`'s initial values) and
// each part's optimizer and step count.
struct FullState {
  Tensor value;
  std::map<std::string, Tensor> slots;
  std::vector<std::string> optimizers;
  std::vector<int64_t> steps;
};

inline FullState full_state(const ShardedVariable& v, const OptimizerConfig& fill = {}) {
  FullState out;
  auto snaps = internal::snapshot_variables({v});
  EXPECT_TRUE(snaps.ok()) << snaps.status();
  if (!snaps.ok()) return out;
  std::vector<Tensor> values;
  std::string optimizer;
  for (const ShardSnapshot& s : (*snaps)[0]) {
    values.push_back(s.value);
    out.optimizers.push_back(s.slots.optimizer);
    out.steps.push_back(s.slots.steps);
    if (!s.slots.optimizer.empty()) optimizer = s.slots.optimizer;
  }
  out.value = concat_rows(values);
  if (optimizer.empty()) return out;
  for (std::string_view slot : optimizer_slot_names(*optimizer_kind_from_name(optimizer))) {
    std::vector<Tensor> rows;
    for (const ShardSnapshot& s : (*snaps)[0]) {
      auto it = s.slots.slots.find(slot);
      if (it != s.slots.slots.end()) {
        rows.push_back(it->second);
        continue;
      }
      Tensor init(s.value.dtype(), s.value.shape());
      const double x = optimizer_slot_initial_value(fill, slot);
      if (init.dtype() == DType::kFloat32)
        init.mutable_vec<float>().setConstant(static_cast<float>(x));
      if (init.dtype() == DType::kFloat64) init.mutable_vec<double>().setConstant(x);
      rows.push_back(init);
    }
    out.slots.emplace(std::string(slot), concat_rows(rows));
  }
  return out;
}

inline void expect_same_full_state(const FullState& a, const FullState& b, bool same_steps = true) {
  EXPECT_EQ(a.value, b.value);
  ASSERT_EQ(a.slots.size(), b.slots.size());
  for (const auto& [name, t] : a.slots) EXPECT_EQ(t, b.slots.at(name)) << name;
  if (same_steps) {
    EXPECT_EQ(a.optimizers, b.optimizers);
    EXPECT_EQ(a.steps, b.steps);
  }
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_CHECKPOINT_CHECKPOINT_TEST_UTIL_H_
