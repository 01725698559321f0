// A LocalCluster shared by every test of a suite: its tasks' start-up is
// the slow part, so a suite starts one in SetUpTestSuite and stops it in
// TearDownTestSuite:
//
//   static void SetUpTestSuite() { start_suite_cluster(cluster_, 2, 1, PSFLOW_BINARY_PATH); }
//   static void TearDownTestSuite() { stop_suite_cluster(cluster_); }
#ifndef PSFLOW_TESTS_INTEGRATION_SUITE_CLUSTER_H_
#define PSFLOW_TESTS_INTEGRATION_SUITE_CLUSTER_H_

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ps/client/variable_client.h"
#include "psflow/cluster_spec.h"
#include "psflow/local_cluster.h"

namespace psflow::internal {

// Starts `num_ps` ps and `num_workers` worker tasks of `binary` into
// `cluster` (left null, with a test failure, when they do not start).
inline void start_suite_cluster(LocalCluster*& cluster, int num_ps, int num_workers,
                                const char* binary) {
  LocalClusterOptions options;
  options.num_ps = num_ps;
  options.num_workers = num_workers;
  options.binary_path = binary;
  auto started = LocalCluster::start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  cluster = started->release();
}

// The same for a suite that needs options of its own (no chief, restarts).
inline void start_suite_cluster(LocalCluster*& cluster, const LocalClusterOptions& options) {
  auto started = LocalCluster::start(options);
  ASSERT_TRUE(started.ok()) << started.status();
  cluster = started->release();
}

// A gRPC VariableClient for each of the cluster's first `num_ps` ps tasks,
// as a chief holds them (a test failure when an address is missing).
inline void connect_to_ps_tasks(const LocalCluster& cluster, int num_ps,
                                std::vector<std::shared_ptr<VariableClient>>& clients) {
  for (int i = 0; i < num_ps; ++i) {
    absl::StatusOr<std::string> address = cluster.cluster_spec().task_address("ps", i);
    ASSERT_TRUE(address.ok()) << address.status();
    clients.push_back(make_grpc_variable_client(*address, task_name("ps", i)));
  }
}

inline void stop_suite_cluster(LocalCluster*& cluster) {
  delete cluster;
  cluster = nullptr;
}

}  // namespace psflow::internal

#endif  // PSFLOW_TESTS_INTEGRATION_SUITE_CLUSTER_H_
