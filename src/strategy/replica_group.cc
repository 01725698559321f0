#include "psflow/replica_group.h"

#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/logging.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "strategy/distributed_dataset_impl.h"
#include "strategy/reduce_nest.h"
#include "strategy/replica_collective.h"
#include "strategy/thread_scopes.h"
#include "strategy/unscheduled_run.h"

namespace psflow {

using internal::av;

namespace {

absl::Status prefixed(const absl::Status& status, std::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(av(prefix), status.message()));
}

absl::Status not_in_replica_context(std::string_view method, std::string_view instead) {
  if (get_replica_context() == nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(av(method),
                   "() may only be called in cross-replica context, not inside a function run "
                   "by ReplicaGroup::run",
                   av(instead)));
}

// Makes `context` the thread's replica context while alive.
class ReplicaContextSetter {
 public:
  explicit ReplicaContextSetter(const ReplicaContext* context)
      : previous_(internal::current_replica_context()) {
    internal::current_replica_context() = context;
  }
  ReplicaContextSetter(const ReplicaContextSetter&) = delete;
  ReplicaContextSetter& operator=(const ReplicaContextSetter&) = delete;
  ~ReplicaContextSetter() { internal::current_replica_context() = previous_; }

 private:
  const ReplicaContext* previous_;
};

absl::StatusOr<Structure> reduce_nest(int num_replicas, ReduceOp op, const DistributedNest& value,
                                      const std::optional<std::vector<int>>& axes) {
  PSFLOW_RETURN_IF_ERROR(
      not_in_replica_context("reduce", "; use ReplicaContext::all_reduce there"));
  absl::StatusOr<Structure> out =
      value.map_structure([&](const DistributedNest& leaf) -> absl::StatusOr<Structure> {
        if (leaf.is_distributed()) {
          return internal::reduce_components(op, leaf.distributed().values(), axes);
        }
        // TF's ParameterServerStrategy: _reduce_to returns a non-distributed
        // value as is; with an axis, strategy.reduce first runs reduce_sum
        // on every replica, which makes it a per-replica value.
        if (!axes.has_value()) return leaf.plain();
        const std::vector<Structure> copies(num_replicas, leaf.plain());
        return internal::reduce_components(op, copies, axes);
      });
  if (out.ok()) return out;
  const std::string axis_text = !axes.has_value() ? "None"
                                : axes->size() == 1
                                    ? absl::StrCat((*axes)[0])
                                    : absl::StrCat("(", absl::StrJoin(*axes, ", "), ")");
  return prefixed(out.status(),
                  absl::StrCat("reduce(", av(reduce_op_name(op)), ", axis=", axis_text, "): "));
}

}  // namespace

ReplicaGroup::ReplicaGroup(int num_replicas, ReplicaGroupOptions options)
    : num_replicas_(num_replicas), options_(std::move(options)) {
  PSFLOW_CHECK(num_replicas >= 1, "a ReplicaGroup needs at least one replica, got ", num_replicas);
}

absl::StatusOr<ReplicaGroup> ReplicaGroup::create(int num_replicas, ReplicaGroupOptions options) {
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas must be at least 1, got ", num_replicas));
  }
  if (options.num_input_pipelines < 1 || options.input_pipeline_id < 0 ||
      options.input_pipeline_id >= options.num_input_pipelines) {
    return absl::InvalidArgumentError(
        absl::StrCat("input_pipeline_id must be in [0, num_input_pipelines), got ",
                     options.input_pipeline_id, " of ", options.num_input_pipelines));
  }
  if (options.collective_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective_timeout must be positive, got ",
                     absl::FormatDuration(options.collective_timeout)));
  }
  return ReplicaGroup(num_replicas, std::move(options));
}

absl::StatusOr<PerReplica> ReplicaGroup::run(const ReplicaFn& fn,
                                             std::vector<DistributedNest> args) const {
  PSFLOW_RETURN_IF_ERROR(not_in_replica_context("run", " (runs do not nest)"));
  if (!fn) return absl::InvalidArgumentError("run: fn is empty");
  internal::warn_if_unscheduled_run("run");
  const int n = num_replicas_;
  // Select every replica's arguments first, so that a bad argument fails
  // before any replica runs.
  std::vector<std::vector<Structure>> replica_args(n);
  for (int r = 0; r < n; ++r) {
    replica_args[r].reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      absl::StatusOr<Structure> arg = args[i].select_replica(r, n);
      if (!arg.ok()) return prefixed(arg.status(), absl::StrCat("run: argument ", i, ": "));
      replica_args[r].push_back(*std::move(arg));
    }
  }

  internal::ReplicaCollective collective(n, options_.collective_timeout);
  std::vector<absl::StatusOr<Structure>> results(n, Structure());
  auto run_replica = [&](int r) {
    const ReplicaContext context(&collective, r, n);
    absl::StatusOr<Structure> result;
    {
      ReplicaContextSetter setter(&context);
      result = fn(context, replica_args[r]);
    }
    collective.depart(r, result.status());
    results[r] = std::move(result);
  };
  // Replica threads see the caller's strategy and colocation scopes.
  const internal::ThreadScopes scopes = internal::thread_scopes();
  std::vector<std::thread> threads;
  threads.reserve(n - 1);
  for (int r = 1; r < n; ++r) {
    threads.emplace_back([&, r] {
      internal::thread_scopes() = scopes;
      run_replica(r);
    });
  }
  run_replica(0);
  for (std::thread& t : threads) t.join();

  PSFLOW_RETURN_IF_ERROR(collective.first_error());
  std::vector<Structure> values;
  values.reserve(n);
  for (absl::StatusOr<Structure>& result : results) values.push_back(*std::move(result));
  return PerReplica(std::move(values));
}

absl::StatusOr<Structure> ReplicaGroup::reduce(ReduceOp op, const DistributedNest& value,
                                               std::optional<int> axis) const {
  internal::warn_if_unscheduled_run("reduce");
  std::optional<std::vector<int>> axes;
  if (axis.has_value()) axes = std::vector<int>{*axis};
  return reduce_nest(num_replicas_, op, value, axes);
}

absl::StatusOr<Structure> ReplicaGroup::reduce(ReduceOp op, const DistributedNest& value,
                                               std::vector<int> axes) const {
  internal::warn_if_unscheduled_run("reduce");
  return reduce_nest(num_replicas_, op, value, std::move(axes));
}

absl::StatusOr<Structure> ReplicaGroup::reduce(std::string_view op, const DistributedNest& value,
                                               std::optional<int> axis) const {
  PSFLOW_ASSIGN_OR_RETURN(ReduceOp parsed, reduce_op_from_string(op));
  return reduce(parsed, value, axis);
}

absl::StatusOr<Structure> ReplicaGroup::reduce(std::string_view op, const DistributedNest& value,
                                               std::vector<int> axes) const {
  PSFLOW_ASSIGN_OR_RETURN(ReduceOp parsed, reduce_op_from_string(op));
  return reduce(parsed, value, std::move(axes));
}

absl::StatusOr<Structure> ReplicaGroup::gather(const DistributedNest& value, int axis) const {
  PSFLOW_RETURN_IF_ERROR(
      not_in_replica_context("gather", "; use ReplicaContext::all_gather there"));
  absl::StatusOr<Structure> out =
      value.map_structure([&](const DistributedNest& leaf) -> absl::StatusOr<Structure> {
        // TF returns a non-distributed value as is.
        if (leaf.is_plain()) return leaf.plain();
        return internal::gather_components(leaf.distributed().values(), axis);
      });
  if (out.ok()) return out;
  return prefixed(out.status(), absl::StrCat("gather(axis=", axis, "): "));
}

Structure ReplicaGroup::experimental_local_results(const DistributedValues& value) const {
  return Structure::tuple(value.values());
}

Structure ReplicaGroup::experimental_local_results(const Structure& value) const {
  return Structure::tuple({value});
}

absl::StatusOr<PerReplica> ReplicaGroup::experimental_distribute_values_from_function(
    const ValueFn& value_fn) const {
  if (!value_fn) {
    return absl::InvalidArgumentError(
        "experimental_distribute_values_from_function: empty value_fn");
  }
  std::vector<Structure> values;
  values.reserve(num_replicas_);
  for (int r = 0; r < num_replicas_; ++r) {
    absl::StatusOr<Structure> value = value_fn(ValueContext(r, num_replicas_));
    if (!value.ok()) return prefixed(value.status(), absl::StrCat("replica ", r, ": "));
    values.push_back(*std::move(value));
  }
  return PerReplica(std::move(values));
}

absl::StatusOr<DistributedDataset> ReplicaGroup::experimental_distribute_dataset(
    const Dataset& dataset) const {
  absl::Status status = dataset.status();
  if (!status.ok()) return prefixed(status, "experimental_distribute_dataset: ");
  return DistributedDataset(internal::make_rebatching_dataset(dataset, num_replicas_));
}

absl::StatusOr<DistributedDataset> ReplicaGroup::distribute_datasets_from_function(
    const DatasetFn& dataset_fn) const {
  if (!dataset_fn) {
    return absl::InvalidArgumentError("distribute_datasets_from_function: empty dataset_fn");
  }
  const InputContext context(options_.num_input_pipelines, options_.input_pipeline_id,
                             num_replicas_);
  absl::StatusOr<Dataset> dataset = dataset_fn(context);
  if (!dataset.ok()) return prefixed(dataset.status(), "distribute_datasets_from_function: ");
  absl::Status status = dataset->status();
  if (!status.ok()) return prefixed(status, "distribute_datasets_from_function: ");
  return DistributedDataset(internal::make_per_replica_dataset(*std::move(dataset), num_replicas_));
}

}  // namespace psflow
