#include "psflow/cluster_coordinator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "coordinator/cluster.h"
#include "coordinator/cluster_coordinator_internal.h"
#include "coordinator/grpc_worker_connection.h"
#include "coordinator/in_process_worker.h"
#include "coordinator/remote_structure_walk.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "strategy/coordinator_slot.h"
#include "worker/per_worker_lease.h"

namespace psflow {

using internal::Cluster;
using internal::CoordinatorAccess;
using internal::InProcessWorker;
using internal::make_grpc_worker_connection;
using internal::resolve_remote_values;
using internal::WorkerConnection;

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::create_in_process(
    int num_workers, ClusterCoordinatorOptions options) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "A ClusterCoordinator needs at least one worker; num_workers is ", num_workers, "."));
  }
  const FunctionRegistry& registry =
      options.registry != nullptr ? *options.registry : FunctionRegistry::global();
  std::vector<std::unique_ptr<WorkerConnection>> workers;
  workers.reserve(num_workers);
  for (int i = 0; i < num_workers; ++i) {
    workers.push_back(
        std::make_unique<InProcessWorker>(i, registry, num_workers, options.variables));
  }
  return internal::create_coordinator(std::move(workers), options);
}

namespace {

// A strategy's coordinator as the strategy remembers it
// (strategy/coordinator_slot.h): its cluster and the options it was made
// with. Thread-safety: immutable but for the cluster, which is thread-safe.
struct StrategyCoordinator {
  StrategyCoordinator(std::vector<std::unique_ptr<WorkerConnection>> workers,
                      const ClusterCoordinatorOptions& options,
                      std::vector<internal::TaskHeartbeats::Task> heartbeats)
      : options(options), cluster(std::move(workers), options, std::move(heartbeats)) {}

  const ClusterCoordinatorOptions options;
  Cluster cluster;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::create(
    const ParameterServerStrategy& strategy, ClusterCoordinatorOptions options) {
  const ClusterSpec& spec = strategy.cluster_spec();
  // Kept beyond the slot's lock: if this is the last reference, the
  // coordinator stops outside it.
  std::shared_ptr<StrategyCoordinator> record;
  return internal::StrategyCoordinatorSlot::with_slot(
      strategy,
      [&](std::weak_ptr<void>& slot) -> absl::StatusOr<std::unique_ptr<ClusterCoordinator>> {
        record = std::static_pointer_cast<StrategyCoordinator>(slot.lock());
        if (record != nullptr && !(record->options == options)) {
          return absl::FailedPreconditionError(
              "This strategy already has a ClusterCoordinator, made with other options; TF "
              "keeps one coordinator per strategy. Use that one (create() with the same options "
              "returns it), or destroy every handle to it before making one with new options.");
        }
        if (record == nullptr) {
          std::vector<std::unique_ptr<WorkerConnection>> workers;
          for (int index : spec.task_indices(kWorkerJob)) {
            if (index != static_cast<int>(workers.size())) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "Worker tasks must be numbered 0..n-1 without gaps; the cluster has worker ",
                  index, " but no worker ", workers.size(), ". The cluster spec is ",
                  spec.to_json()));
            }
            PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(kWorkerJob, index));
            workers.push_back(make_grpc_worker_connection(address, index, options.worker_timeout));
          }
          if (workers.empty()) {
            return absl::InvalidArgumentError("A ClusterCoordinator needs at least one worker.");
          }
          PSFLOW_RETURN_IF_ERROR(internal::validate_coordinator_options(options));
          std::vector<internal::TaskHeartbeats::Task> heartbeats;
          for (const std::string_view job : {kWorkerJob, kPsJob}) {
            for (int index : spec.task_indices(job)) {
              PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(job, index));
              heartbeats.push_back(internal::heartbeat_task(address, job, index));
            }
          }
          record = std::make_shared<StrategyCoordinator>(std::move(workers), options,
                                                         std::move(heartbeats));
          slot = record;
        }
        return std::unique_ptr<ClusterCoordinator>(
            new ClusterCoordinator(std::shared_ptr<Cluster>(record, &record->cluster)));
      });
}

absl::Status internal::validate_coordinator_options(const ClusterCoordinatorOptions& options) {
  if (options.heartbeat_interval > absl::ZeroDuration() &&
      options.heartbeat_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClusterCoordinatorOptions::heartbeat_timeout must be > 0 while heartbeats "
                     "are on (heartbeat_interval ",
                     absl::FormatDuration(options.heartbeat_interval), "); it is ",
                     absl::FormatDuration(options.heartbeat_timeout), "."));
  }
  if (options.schedule_start_delay < absl::ZeroDuration() ||
      options.schedule_start_delay_max < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ClusterCoordinatorOptions::schedule_start_delay and schedule_start_delay_max must not be "
        "negative; got ",
        absl::FormatDuration(options.schedule_start_delay), " and ",
        absl::FormatDuration(options.schedule_start_delay_max), "."));
  }
  if (options.per_worker_dispose_batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClusterCoordinatorOptions::per_worker_dispose_batch_size must be at least "
                     "1; got ",
                     options.per_worker_dispose_batch_size, "."));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> internal::CoordinatorAccess::create(
    std::vector<std::unique_ptr<WorkerConnection>> workers, ClusterCoordinatorOptions options,
    std::vector<internal::TaskHeartbeats::Task> heartbeats) {
  if (workers.empty()) {
    return absl::InvalidArgumentError("A ClusterCoordinator needs at least one worker.");
  }
  for (size_t i = 0; i < workers.size(); ++i) {
    if (workers[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("Worker connection ", i, " is null."));
    }
  }
  PSFLOW_RETURN_IF_ERROR(internal::validate_coordinator_options(options));
  return std::unique_ptr<ClusterCoordinator>(new ClusterCoordinator(
      std::make_shared<Cluster>(std::move(workers), options, std::move(heartbeats))));
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> internal::create_coordinator(
    std::vector<std::unique_ptr<WorkerConnection>> workers, ClusterCoordinatorOptions options) {
  return CoordinatorAccess::create(std::move(workers), std::move(options));
}

ClusterCoordinator::ClusterCoordinator(std::shared_ptr<Cluster> cluster)
    : cluster_(std::move(cluster)) {}

ClusterCoordinator::~ClusterCoordinator() = default;

absl::StatusOr<RemoteValue> ClusterCoordinator::schedule(std::string_view function_name,
                                                         RemoteStructure args) {
  return cluster_->schedule(function_name, std::move(args));
}

absl::Status ClusterCoordinator::join() { return cluster_->join(); }

absl::StatusOr<bool> ClusterCoordinator::done() { return cluster_->done(); }

void ClusterCoordinator::cancel(absl::Status reason) {
  if (reason.ok()) reason = absl::CancelledError("ClusterCoordinator::cancel");
  cluster_->cancel(reason);
}

int64_t ClusterCoordinator::closures_in_doubt() const { return cluster_->closures_in_doubt(); }

absl::StatusOr<Structure> ClusterCoordinator::fetch(const RemoteStructure& values) const {
  return resolve_remote_values(values, [](const RemoteValue& value) { return value.fetch(); });
}

absl::StatusOr<std::vector<Structure>> ClusterCoordinator::fetch(
    const std::vector<RemoteValue>& values) const {
  std::vector<Structure> out;
  out.reserve(values.size());
  for (const RemoteValue& value : values) {
    PSFLOW_ASSIGN_OR_RETURN(Structure fetched, value.fetch());
    out.push_back(std::move(fetched));
  }
  return out;
}

int ClusterCoordinator::num_workers() const { return cluster_->num_workers(); }

std::vector<TaskState> ClusterCoordinator::get_task_states() const {
  return cluster_->task_states(absl::Now());
}

absl::StatusOr<PerWorkerDataset> ClusterCoordinator::create_per_worker_dataset(
    std::string_view dataset_fn, Structure args) const {
  PSFLOW_ASSIGN_OR_RETURN(PerWorkerDataset dataset,
                          PerWorkerDataset::create(std::string(dataset_fn), std::move(args)));
  return internal::PerWorkerAccess::bind(std::move(dataset), cluster_->per_worker());
}

absl::StatusOr<PerWorkerResource> ClusterCoordinator::create_per_worker_resource(
    std::string_view resource_fn, Structure args) const {
  PSFLOW_ASSIGN_OR_RETURN(PerWorkerResource resource,
                          PerWorkerResource::create(std::string(resource_fn), std::move(args)));
  return internal::PerWorkerAccess::bind(resource, *cluster_->per_worker());
}

}  // namespace psflow
