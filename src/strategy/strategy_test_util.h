// Test helpers for the strategy layer: in-process ps tasks behind clients
// that count requests. Header-only; used by src/strategy/*_test.cc.
#ifndef PSFLOW_STRATEGY_STRATEGY_TEST_UTIL_H_
#define PSFLOW_STRATEGY_STRATEGY_TEST_UTIL_H_

#include <atomic>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "ps/server/local_variable_client.h"
#include "ps/server/variable_store.h"
#include "psflow/cluster_resolver.h"
#include "psflow/strategy.h"
#include "strategy/strategy_internal.h"

namespace psflow::internal::testing {

// Forwards to another client and counts requests and ops.
// Thread-safety: as the wrapped client; counters are atomic.
class CountingVariableClient final : public VariableClient {
 public:
  explicit CountingVariableClient(std::shared_ptr<VariableClient> inner)
      : inner_(std::move(inner)) {}

  const std::string& task_name() const override { return inner_->task_name(); }
  bool uses_shared_memory() const override { return inner_->uses_shared_memory(); }
  void execute_batch_async(ExecuteBatch batch, absl::Time deadline, BatchCallback done) override {
    ++requests_;
    ops_ += static_cast<int>(batch.ops.size());
    inner_->execute_batch_async(std::move(batch), deadline, std::move(done));
  }

  [[nodiscard]] int requests() const { return requests_.load(); }
  [[nodiscard]] int ops() const { return ops_.load(); }
  void reset() {
    requests_ = 0;
    ops_ = 0;
  }

 private:
  std::shared_ptr<VariableClient> inner_;
  std::atomic<int> requests_{0};
  std::atomic<int> ops_{0};
};

// A cluster spec with one chief, one worker and `num_ps` ps tasks (the
// addresses are never dialled in unit tests).
inline ClusterSpec test_cluster_spec(int num_ps) {
  std::vector<std::string> ps;
  for (int i = 0; i < num_ps; ++i) ps.push_back(absl::StrCat("127.0.0.1:", 20000 + i));
  return ClusterSpec({{"chief", {"127.0.0.1:19999"}}, {"worker", {"127.0.0.1:19998"}}, {"ps", ps}});
}

// `num_ps` in-process ps tasks and a strategy over them.
// Thread-safety: the strategy and clients are thread-safe; the vectors are
// fixed after construction.
struct LocalPsCluster {
  std::vector<std::shared_ptr<VariableStore>> stores;
  std::vector<std::shared_ptr<CountingVariableClient>> clients;
  std::unique_ptr<ParameterServerStrategy> strategy;

  explicit LocalPsCluster(int num_ps, Partitioner partitioner = nullptr,
                          ParameterServerStrategyOptions options = {}) {
    for (int i = 0; i < num_ps; ++i) {
      stores.push_back(std::make_shared<VariableStore>());
      clients.push_back(std::make_shared<CountingVariableClient>(
          make_local_variable_client(stores.back(), task_name("ps", i))));
    }
    auto factory = [this](const ClusterSpec&,
                          int task) -> absl::StatusOr<std::shared_ptr<VariableClient>> {
      return std::shared_ptr<VariableClient>(clients[static_cast<size_t>(task)]);
    };
    auto s = internal::create_strategy(SimpleClusterResolver(test_cluster_spec(num_ps), "chief", 0),
                                       std::move(partitioner), options, factory);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) strategy = *std::move(s);
  }

  [[nodiscard]] int total_requests() const {
    int n = 0;
    for (const auto& c : clients) n += c->requests();
    return n;
  }
  void reset_counts() {
    for (const auto& c : clients) c->reset();
  }
  // Stored value of `name` on ps `task` (read directly from the store).
  [[nodiscard]] Tensor stored(int task, const std::string& name) const {
    auto shard = stores[static_cast<size_t>(task)]->find(name);
    EXPECT_TRUE(shard.ok()) << shard.status();
    return shard.ok() ? (*shard)->read() : Tensor();
  }
};

// Unwraps a StatusOr in a test, failing it on error (and returning T(), or
// for types without a default value, ending the test binary).
template <typename T>
T value_or_fail(absl::StatusOr<T> s) {
  EXPECT_TRUE(s.ok()) << s.status();
  if constexpr (std::is_default_constructible_v<T>) {
    return s.ok() ? *std::move(s) : T();
  } else {
    return std::move(s).value();  // checked: throws after the failure above
  }
}

// Every scatter op of ShardedVariable by name, for tests that run each on
// a sharded variable and on an unsharded twin.
using ScatterMethod = absl::Status (ShardedVariable::*)(const IndexedSlices&) const;
inline std::vector<std::pair<std::string, ScatterMethod>> scatter_methods() {
  return {{"scatter_add", &ShardedVariable::scatter_add},
          {"scatter_sub", &ShardedVariable::scatter_sub},
          {"scatter_mul", &ShardedVariable::scatter_mul},
          {"scatter_div", &ShardedVariable::scatter_div},
          {"scatter_min", &ShardedVariable::scatter_min},
          {"scatter_max", &ShardedVariable::scatter_max},
          {"scatter_update", &ShardedVariable::scatter_update}};
}

}  // namespace psflow::internal::testing

#endif  // PSFLOW_STRATEGY_STRATEGY_TEST_UTIL_H_
