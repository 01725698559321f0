#include "optimizer/optimizer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace psflow::internal {
namespace {

using Kind = OptimizerConfig::Kind;

// Scalar reference implementations written from TF's op definitions
// (training_ops: ApplyGradientDescent, ApplyMomentum, ApplyAdagradV2,
// ApplyAdam, ApplyFtrl), independent of the kernels under test.
struct RefState {
  double w, s0 = 0, s1 = 0;
};

void reference_step(const OptimizerConfig& c, double lr, int64_t t, RefState& st, double g) {
  switch (c.kind) {
    case Kind::kSgd: st.w -= lr * g; break;
    case Kind::kMomentum:
      st.s0 = c.momentum * st.s0 + g;
      st.w -= c.nesterov ? lr * g + lr * c.momentum * st.s0 : lr * st.s0;
      break;
    case Kind::kAdagrad:
      st.s0 += g * g;
      st.w -= lr * g / (std::sqrt(st.s0) + c.epsilon);
      break;
    case Kind::kAdam: {
      const double lr_t = lr * std::sqrt(1 - std::pow(c.beta_2, t)) / (1 - std::pow(c.beta_1, t));
      st.s0 = c.beta_1 * st.s0 + (1 - c.beta_1) * g;
      st.s1 = c.beta_2 * st.s1 + (1 - c.beta_2) * g * g;
      st.w -= lr_t * st.s0 / (std::sqrt(st.s1) + c.epsilon);
      break;
    }
    case Kind::kFtrl: {
      const double p = -c.learning_rate_power;
      const double new_acc = st.s0 + g * g;
      st.s1 += g - (std::pow(new_acc, p) - std::pow(st.s0, p)) / lr * st.w;
      const double quadratic =
          (std::pow(new_acc, p) + c.beta) / lr + 2 * c.l2_regularization_strength;
      const double l1 = c.l1_regularization_strength;
      st.w = std::abs(st.s1) > l1 ? ((st.s1 > 0 ? l1 : -l1) - st.s1) / quadratic : 0.0;
      st.s0 = new_acc;
      break;
    }
  }
}

double initial_s0(const OptimizerConfig& c) {
  return (c.kind == Kind::kAdagrad || c.kind == Kind::kFtrl) ? c.initial_accumulator_value : 0.0;
}

std::vector<OptimizerConfig> all_configs() {
  std::vector<OptimizerConfig> out;
  OptimizerConfig c;
  c.kind = Kind::kSgd;
  out.push_back(c);
  c.kind = Kind::kMomentum;
  out.push_back(c);
  c.nesterov = true;
  out.push_back(c);
  c = {};
  c.kind = Kind::kAdagrad;
  out.push_back(c);
  c.kind = Kind::kAdam;
  out.push_back(c);
  c.kind = Kind::kFtrl;
  out.push_back(c);
  c.l1_regularization_strength = 0.01;
  c.l2_regularization_strength = 0.1;
  c.beta = 0.5;
  out.push_back(c);
  c.learning_rate_power = -0.7;
  out.push_back(c);
  return out;
}

std::string config_label(const OptimizerConfig& c) {
  return std::string(optimizer_name(c.kind)) + (c.nesterov ? "+nesterov" : "") +
         (c.l1_regularization_strength > 0 ? "+l1l2" : "") +
         (c.learning_rate_power != -0.5 ? "+power" : "");
}

TEST(OptimizerTest, DenseMatchesScalarReferenceForEveryOptimizer) {
  const std::vector<double> w0 = {0.5, -1.25, 2.0, 0.0, 3.5, -0.75};
  const std::vector<std::vector<double>> grads = {{0.1, -0.2, 0.3, -0.4, 0.5, 0.0},
                                                  {-0.3, 0.2, 0.1, 0.05, -0.5, 0.25},
                                                  {0.7, 0.7, -0.7, 0.1, 0.2, -0.3}};
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    Tensor var = Tensor::from_vector<double>(w0, {2, 3});
    OptimizerSlots slots;
    std::vector<RefState> ref;
    for (double w : w0) ref.push_back(RefState{w, initial_s0(c), 0});
    for (size_t step = 0; step < grads.size(); ++step) {
      const double lr = 0.05 * static_cast<double>(step + 1);
      ASSERT_TRUE(
          apply_dense_gradient(c, lr, var, slots, Tensor::from_vector<double>(grads[step], {2, 3}))
              .ok());
      for (size_t i = 0; i < ref.size(); ++i) {
        reference_step(c, lr, static_cast<int64_t>(step + 1), ref[i], grads[step][i]);
      }
    }
    EXPECT_EQ(slots.steps, 3);
    EXPECT_EQ(slots.optimizer, optimizer_name(c.kind));
    for (size_t i = 0; i < ref.size(); ++i) {
      EXPECT_NEAR(var.flat<double>()[i], ref[i].w, 1e-12) << "element " << i;
    }
  }
}

TEST(OptimizerTest, Float32DenseAdamTracksFloat64Reference) {
  OptimizerConfig c;
  c.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1.0f, -2.0f, 0.5f}, {3});
  OptimizerSlots slots;
  std::vector<RefState> ref = {{1.0}, {-2.0}, {0.5}};
  const std::vector<float> g = {0.25f, -0.5f, 1.0f};
  for (int step = 1; step <= 5; ++step) {
    ASSERT_TRUE(apply_dense_gradient(c, 0.01, var, slots, Tensor::from_vector<float>(g, {3})).ok());
    for (size_t i = 0; i < 3; ++i) reference_step(c, 0.01, step, ref[i], g[i]);
  }
  for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(var.flat<float>()[i], ref[i].w, 1e-5);
}

TEST(OptimizerTest, SparseSumsDuplicatesAndTouchesOnlyGivenRows) {
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    // 4 rows of width 2.
    const std::vector<double> w0 = {1, 2, 3, 4, 5, 6, 7, 8};
    Tensor var = Tensor::from_vector<double>(w0, {4, 2});
    OptimizerSlots slots;
    Tensor ids = Tensor::from_vector<int64_t>({2, 0, 2}, {3});
    Tensor rows = Tensor::from_vector<double>({0.5, -0.5, 1.0, 1.0, 0.25, 0.75}, {3, 2});
    ASSERT_TRUE(apply_sparse_gradient(c, 0.1, var, slots, ids, rows).ok());
    // Row 2 receives the sum of its two gradient rows, row 0 its one row.
    const std::vector<std::pair<int, std::vector<double>>> touched = {{0, {1.0, 1.0}},
                                                                      {2, {0.75, 0.25}}};
    std::vector<double> expected = w0;
    for (const auto& [row, g] : touched) {
      for (int j = 0; j < 2; ++j) {
        RefState st{w0[row * 2 + j], initial_s0(c), 0};
        reference_step(c, 0.1, 1, st, g[j]);
        expected[row * 2 + j] = st.w;
      }
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(var.flat<double>()[i], expected[i], 1e-12) << "element " << i;
    }
  }
}

TEST(OptimizerTest, SparseEqualsDenseWhenEveryRowIsGivenOnce) {
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    const std::vector<double> w0 = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6};
    const std::vector<double> g = {0.3, -0.1, 0.2, 0.4, -0.6, 0.05};
    Tensor dense = Tensor::from_vector<double>(w0, {3, 2});
    Tensor sparse = Tensor::from_vector<double>(w0, {3, 2});
    OptimizerSlots ds, ss;
    for (int step = 0; step < 3; ++step) {
      ASSERT_TRUE(
          apply_dense_gradient(c, 0.2, dense, ds, Tensor::from_vector<double>(g, {3, 2})).ok());
      ASSERT_TRUE(apply_sparse_gradient(c, 0.2, sparse, ss,
                                        Tensor::from_vector<int32_t>({0, 1, 2}, {3}),
                                        Tensor::from_vector<double>(g, {3, 2}))
                      .ok());
    }
    ASSERT_TRUE(all_close(dense, sparse, 1e-12, 1e-12).ok());
  }
}

// Long enough for FTRL's stack chunks (256 elements) to take several rounds
// with a partial last one, and for Eigen's vector loops to have a tail.
TEST(OptimizerTest, LongDenseSpansMatchScalarReference) {
  constexpr size_t kN = 1000;
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> w0(kN), g(kN);
  for (size_t i = 0; i < kN; ++i) {
    w0[i] = dist(gen);
    g[i] = dist(gen);
  }
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    Tensor var = Tensor::from_vector<double>(w0, {static_cast<int64_t>(kN)});
    OptimizerSlots slots;
    std::vector<RefState> ref;
    for (double w : w0) ref.push_back(RefState{w, initial_s0(c), 0});
    for (int step = 1; step <= 2; ++step) {
      ASSERT_TRUE(apply_dense_gradient(c, 0.1, var, slots,
                                       Tensor::from_vector<double>(g, {static_cast<int64_t>(kN)}))
                      .ok());
      for (size_t i = 0; i < kN; ++i) reference_step(c, 0.1, step, ref[i], g[i]);
    }
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_NEAR(var.flat<double>()[i], ref[i].w, 1e-12) << "element " << i;
    }
  }
}

// The kernels' documented formula in float32, one element at a time and in
// the kernels' order of operations. This file is built without
// floating-point contraction, like the kernels (src/CMakeLists.txt).
void float_formula_step(const OptimizerConfig& c, double learning_rate, int64_t t, float& w,
                        float& s0, float& s1, float g) {
  const auto lr = static_cast<float>(learning_rate);
  switch (c.kind) {
    case Kind::kSgd: w = w - lr * g; break;
    case Kind::kMomentum: {
      const auto mom = static_cast<float>(c.momentum);
      s0 = mom * s0 + g;
      w = c.nesterov ? w - (lr * g + (lr * mom) * s0) : w - lr * s0;
      break;
    }
    case Kind::kAdagrad:
      s0 = s0 + g * g;
      w = w - lr * g / (std::sqrt(s0) + static_cast<float>(c.epsilon));
      break;
    case Kind::kAdam: {
      const double td = static_cast<double>(t);
      const auto lr_t = static_cast<float>(learning_rate * std::sqrt(1.0 - std::pow(c.beta_2, td)) /
                                           (1.0 - std::pow(c.beta_1, td)));
      s0 = s0 + (1.0f - static_cast<float>(c.beta_1)) * (g - s0);
      s1 = s1 + (1.0f - static_cast<float>(c.beta_2)) * (g * g - s1);
      w = w - lr_t * s0 / (std::sqrt(s1) + static_cast<float>(c.epsilon));
      break;
    }
    case Kind::kFtrl: {
      const auto p = static_cast<float>(-c.learning_rate_power);
      const bool root = c.learning_rate_power == -0.5;
      const float new_acc = s0 + g * g;
      const float new_pow = root ? std::sqrt(new_acc) : std::pow(new_acc, p);
      const float old_pow = root ? std::sqrt(s0) : std::pow(s0, p);
      s1 = s1 + (g - (new_pow - old_pow) / lr * w);
      const float quadratic = (new_pow + static_cast<float>(c.beta)) / lr +
                              2.0f * static_cast<float>(c.l2_regularization_strength);
      const auto l1 = static_cast<float>(c.l1_regularization_strength);
      w = std::abs(s1) > l1 ? (l1 * (s1 > 0 ? 1.0f : -1.0f) - s1) / quadratic : 0.0f;
      s0 = new_acc;
      break;
    }
  }
}

// The kernels run the widest vectors the CPU has (optimizer_kernels.h), yet
// must round exactly like this one-element-at-a-time formula, so that every
// ps machine trains to the same values: float32 updates of 1,003 elements
// (vector bodies and tails) and of scattered rows are compared bit for bit.
TEST(OptimizerTest, Float32UpdatesAreBitIdenticalToTheScalarFormula) {
  constexpr int64_t kRows = 59;
  constexpr int64_t kWidth = 17;
  constexpr size_t kN = 1003;
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> w0(kN), g(kN);
  for (size_t i = 0; i < kN; ++i) {
    w0[i] = dist(gen);
    g[i] = dist(gen);
  }
  const std::vector<int64_t> ids = {3, 58, 0, 17, 41, 9, 22, 57, 1, 30, 12};
  std::vector<float> table0(static_cast<size_t>(kRows * kWidth));
  std::vector<float> row_grads(ids.size() * static_cast<size_t>(kWidth));
  for (float& v : table0) v = dist(gen);
  for (float& v : row_grads) v = dist(gen);
  for (const OptimizerConfig& c : all_configs()) {
    SCOPED_TRACE(config_label(c));
    const auto s0_init = static_cast<float>(initial_s0(c));
    // Dense.
    Tensor var = Tensor::from_vector<float>(w0, {static_cast<int64_t>(kN)});
    OptimizerSlots slots;
    std::vector<float> w = w0, s0(kN, s0_init), s1(kN, 0.0f);
    for (int step = 1; step <= 3; ++step) {
      ASSERT_TRUE(apply_dense_gradient(c, 0.1, var, slots,
                                       Tensor::from_vector<float>(g, {static_cast<int64_t>(kN)}))
                      .ok());
      for (size_t i = 0; i < kN; ++i) float_formula_step(c, 0.1, step, w[i], s0[i], s1[i], g[i]);
    }
    for (size_t i = 0; i < kN; ++i) {
      ASSERT_EQ(var.flat<float>()[i], w[i]) << "dense element " << i;
    }
    // Sparse: distinct ids, each row once.
    Tensor table = Tensor::from_vector<float>(table0, {kRows, kWidth});
    OptimizerSlots table_slots;
    std::vector<float> tw = table0, ts0(table0.size(), s0_init), ts1(table0.size(), 0.0f);
    for (int step = 1; step <= 2; ++step) {
      ASSERT_TRUE(
          apply_sparse_gradient(
              c, 0.1, table, table_slots, Tensor::from_vector<int64_t>(ids),
              Tensor::from_vector<float>(row_grads, {static_cast<int64_t>(ids.size()), kWidth}))
              .ok());
      for (size_t r = 0; r < ids.size(); ++r) {
        for (int64_t j = 0; j < kWidth; ++j) {
          const auto e = static_cast<size_t>(ids[r] * kWidth + j);
          float_formula_step(c, 0.1, step, tw[e], ts0[e], ts1[e],
                             row_grads[r * static_cast<size_t>(kWidth) + static_cast<size_t>(j)]);
        }
      }
    }
    for (size_t e = 0; e < tw.size(); ++e) {
      ASSERT_EQ(table.flat<float>()[e], tw[e]) << "table element " << e;
    }
  }
}

// The sparse kernel (distinct ids found by hashing, duplicates summed in
// the order given, rows prefetched ahead) against a plain reference: sum
// each id's rows with a std::map, then apply the scalar reference to every
// element of the touched rows. Float32 rows of an odd width (unaligned rows,
// vector tails), ids with many repeats (adjacent and far apart), int32 and
// int64 ids, several steps so the slots carry over.
TEST(OptimizerTest, SparseFloatRowsWithDuplicatesMatchReference) {
  constexpr int64_t kRows = 50;
  constexpr int64_t kDim = 37;
  constexpr int64_t kIds = 300;
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> value(-1, 1);
  std::uniform_int_distribution<int64_t> row(0, kRows - 1);
  std::vector<float> w0(static_cast<size_t>(kRows * kDim));
  for (float& w : w0) w = value(gen);
  for (const OptimizerConfig& c : all_configs()) {
    for (const DType id_dtype : {DType::kInt32, DType::kInt64}) {
      SCOPED_TRACE(config_label(c) + (id_dtype == DType::kInt32 ? " int32" : " int64"));
      Tensor var = Tensor::from_vector<float>(w0, {kRows, kDim});
      OptimizerSlots slots;
      std::vector<RefState> ref;
      for (float w : w0) ref.push_back(RefState{w, initial_s0(c), 0});
      std::vector<bool> touched(static_cast<size_t>(kRows), false);
      for (int step = 1; step <= 3; ++step) {
        std::vector<int64_t> ids(static_cast<size_t>(kIds));
        for (size_t i = 0; i < ids.size(); ++i) {
          // Every third id repeats its predecessor: adjacent duplicates.
          ids[i] = (i % 3 == 2) ? ids[i - 1] : row(gen);
        }
        std::vector<float> rows(static_cast<size_t>(kIds * kDim));
        for (float& g : rows) g = value(gen);
        Tensor id_tensor;
        if (id_dtype == DType::kInt32) {
          id_tensor =
              Tensor::from_vector<int32_t>(std::vector<int32_t>(ids.begin(), ids.end()), {kIds});
        } else {
          id_tensor = Tensor::from_vector<int64_t>(ids, {kIds});
        }
        const double lr = 0.05 * step;
        ASSERT_TRUE(apply_sparse_gradient(c, lr, var, slots, id_tensor,
                                          Tensor::from_vector<float>(rows, {kIds, kDim}))
                        .ok());
        std::map<int64_t, std::vector<double>> summed;
        for (size_t i = 0; i < ids.size(); ++i) {
          std::vector<double>& acc = summed[ids[i]];
          acc.resize(static_cast<size_t>(kDim), 0.0);
          for (int64_t j = 0; j < kDim; ++j) acc[j] += rows[i * kDim + j];
        }
        for (const auto& [id, g] : summed) {
          touched[static_cast<size_t>(id)] = true;
          for (int64_t j = 0; j < kDim; ++j) {
            reference_step(c, lr, step, ref[static_cast<size_t>(id * kDim + j)], g[j]);
          }
        }
      }
      EXPECT_EQ(slots.steps, 3);
      for (int64_t r = 0; r < kRows; ++r) {
        for (int64_t j = 0; j < kDim; ++j) {
          const size_t i = static_cast<size_t>(r * kDim + j);
          const float got = var.flat<float>()[i];
          if (!touched[static_cast<size_t>(r)]) {
            ASSERT_EQ(got, w0[i]) << "untouched row " << r << " changed";
            continue;
          }
          ASSERT_NEAR(got, ref[i].w, 2e-4 * std::max(1.0, std::abs(ref[i].w)))
              << "row " << r << " column " << j;
        }
      }
    }
  }
}

// One id repeated for the whole batch: a single row receives the sum.
TEST(OptimizerTest, SparseWithOneRepeatedIdAppliesTheSumOnce) {
  OptimizerConfig c;
  c.kind = Kind::kAdagrad;
  Tensor var = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  OptimizerSlots slots;
  const Tensor ids = Tensor::from_vector<int64_t>({1, 1, 1, 1}, {4});
  const Tensor rows = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  ASSERT_TRUE(apply_sparse_gradient(c, 0.1, var, slots, ids, rows).ok());
  RefState a{3, c.initial_accumulator_value}, b{4, c.initial_accumulator_value};
  reference_step(c, 0.1, 1, a, 1 + 3 + 5 + 7);
  reference_step(c, 0.1, 1, b, 2 + 4 + 6 + 8);
  EXPECT_NEAR(var.flat<double>()[2], a.w, 1e-12);
  EXPECT_NEAR(var.flat<double>()[3], b.w, 1e-12);
  EXPECT_EQ(var.flat<double>()[0], 1);
  EXPECT_EQ(var.flat<double>()[5], 6);
  EXPECT_NEAR(slots.slots.at("accumulator").flat<double>()[2], a.s0, 1e-12);
}

TEST(OptimizerTest, RejectsBadInputWithoutChangingAnything) {
  OptimizerConfig adam;
  adam.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  const Tensor before = var.clone();
  OptimizerSlots slots;

  auto s = apply_dense_gradient(adam, 0.1, var, slots, Tensor::from_vector<float>({1, 2}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[2, 2]"), absl::string_view::npos) << s;

  s = apply_dense_gradient(adam, -1, var, slots, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  s = apply_sparse_gradient(adam, 0.1, var, slots, Tensor::from_vector<int64_t>({0, 2}, {2}),
                            Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("row id 2"), absl::string_view::npos) << s;

  s = apply_sparse_gradient(adam, 0.1, var, slots, Tensor::from_vector<int64_t>({0}, {1}),
                            Tensor::from_vector<float>({1, 1, 1, 1}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  OptimizerConfig bad = adam;
  bad.beta_1 = 1.5;
  s = apply_dense_gradient(bad, 0.1, var, slots, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("beta_1"), absl::string_view::npos) << s;

  // NaN hyper-parameters compare false with every bound: each is refused.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (double OptimizerConfig::*field :
       {&OptimizerConfig::momentum, &OptimizerConfig::initial_accumulator_value,
        &OptimizerConfig::epsilon, &OptimizerConfig::beta_1, &OptimizerConfig::beta_2,
        &OptimizerConfig::learning_rate_power, &OptimizerConfig::l1_regularization_strength,
        &OptimizerConfig::l2_regularization_strength, &OptimizerConfig::beta}) {
    OptimizerConfig with_nan = adam;
    with_nan.*field = nan;
    s = apply_dense_gradient(with_nan, 0.1, var, slots,
                             Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("= nan is invalid"), absl::string_view::npos) << s;
  }
  OptimizerConfig ftrl;
  ftrl.kind = Kind::kFtrl;
  s = apply_dense_gradient(ftrl, 0, var, slots, Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("learning rate 0 is invalid for ftrl"), absl::string_view::npos) << s;

  Tensor ints = Tensor::from_vector<int32_t>({1, 2}, {2});
  s = apply_dense_gradient(adam, 0.1, ints, slots, Tensor::from_vector<int32_t>({1, 2}, {2}));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(var, before);
  EXPECT_TRUE(slots.optimizer.empty());
  EXPECT_EQ(slots.steps, 0);
}

// A gradient prepared (checked and summed) for one variable layout is
// refused by a variable of another, which keeps its value and slots.
TEST(OptimizerTest, PreparedSparseGradientChecksTheVariableItUpdates) {
  OptimizerConfig c;
  c.kind = Kind::kAdagrad;
  const Tensor ids = Tensor::from_vector<int64_t>({1, 1, 0});
  const Tensor rows = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
  absl::StatusOr<PreparedSparseGradient> g =
      prepare_sparse_gradient(c, 0.1, DType::kFloat32, {3, 2}, ids, rows);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->ids(), (std::vector<int64_t>{1, 0}));
  Tensor other = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  OptimizerSlots slots;
  const absl::Status s = apply_sparse_gradient(*g, other, slots);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("[3, 2]"), std::string_view::npos) << s;
  EXPECT_EQ(other.flat<float>()[0], 1.0f);
  EXPECT_TRUE(slots.slots.empty());
  EXPECT_EQ(slots.steps, 0);
  // The layout it was made for takes it: row 1 gets the sum of two rows.
  Tensor var = Tensor::from_vector<float>({0, 0, 0, 0, 0, 0}, {3, 2});
  ASSERT_TRUE(apply_sparse_gradient(*g, var, slots).ok());
  EXPECT_EQ(slots.steps, 1);
  EXPECT_LT(var.flat<float>()[2], 0.0f);  // row 1, from 1 + 3 = 4
  EXPECT_EQ(var.flat<float>()[4], 0.0f);  // row 2 untouched
}

TEST(OptimizerTest, SlotsBelongToOneOptimizer) {
  OptimizerConfig adagrad;
  adagrad.kind = Kind::kAdagrad;
  OptimizerConfig adam;
  adam.kind = Kind::kAdam;
  Tensor var = Tensor::from_vector<float>({1, 2}, {2});
  OptimizerSlots slots;
  const Tensor g = Tensor::from_vector<float>({0.5f, 0.5f}, {2});
  ASSERT_TRUE(apply_dense_gradient(adagrad, 0.1, var, slots, g).ok());
  const Tensor after_one = var.clone();
  auto s = apply_dense_gradient(adam, 0.1, var, slots, g);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("adagrad"), absl::string_view::npos) << s;
  EXPECT_EQ(var, after_one);
  ASSERT_EQ(slots.slots.count("accumulator"), 1u);
  // Adagrad's accumulator starts at 0.1 and gained 0.25.
  EXPECT_NEAR(slots.slots.at("accumulator").flat<float>()[0], 0.35f, 1e-6);
}

TEST(OptimizerTest, NamesRoundTripAndUnknownNamesAreRejected) {
  for (Kind k : {Kind::kSgd, Kind::kMomentum, Kind::kAdagrad, Kind::kAdam, Kind::kFtrl}) {
    auto parsed = optimizer_kind_from_name(optimizer_name(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
  }
  auto bad = optimizer_kind_from_name("rmsprop");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("rmsprop"), absl::string_view::npos);
}

}  // namespace
}  // namespace psflow::internal
