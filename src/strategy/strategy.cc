// ParameterServerStrategy: cluster validation, ps clients, and placement of
// new variables (TF's parameter_server_strategy_v2 `_create_variable`; the
// rule itself in strategy/placement.h).
#include "psflow/strategy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "ps/client/retrying_variable_client.h"
#include "ps/client/variable_client.h"
#include "psflow/status_macros.h"
#include "strategy/client_lookup.h"
#include "strategy/creation_hook.h"
#include "strategy/creation_refusal.h"
#include "strategy/local_variables.h"
#include "strategy/name_registry.h"
#include "strategy/placement.h"
#include "strategy/strategy_internal.h"
#include "strategy/thread_scopes.h"
#include "strategy/variable_creation.h"

namespace psflow {

using internal::make_ps_client;
using internal::VariableClient;

namespace {

constexpr std::string_view kDefaultName = "Variable";

std::string base_name(const VariableOptions& options) {
  return options.name.empty() ? std::string(kDefaultName) : options.name;
}

absl::StatusOr<std::shared_ptr<VariableClient>> grpc_client(const ClusterSpec& spec, int task) {
  PSFLOW_ASSIGN_OR_RETURN(std::string address, spec.task_address(kPsJob, task));
  return std::shared_ptr<VariableClient>(make_ps_client(address, task_name(kPsJob, task)));
}

absl::Status check_dense_ps(const ClusterSpec& spec) {
  const std::vector<int> indices = spec.task_indices(kPsJob);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] != static_cast<int>(i)) {
      return absl::InvalidArgumentError(
          absl::StrCat("ps tasks must be numbered 0..", indices.size() - 1,
                       " for variable placement, got "
                       "indices [",
                       absl::StrJoin(indices, ", "), "]; list the ps addresses as a JSON list"));
    }
  }
  return absl::OkStatus();
}

// A variable outside any scope: in this process, never sharded.
absl::StatusOr<ShardedVariable> create_local(const Tensor* value, const Initializer* init,
                                             const VariableOptions& options) {
  PSFLOW_ASSIGN_OR_RETURN(internal::InitialValue initial,
                          internal::describe_initial_value(value, init));
  if (options.colocate_with.has_value()) {
    PSFLOW_ASSIGN_OR_RETURN(internal::PartTarget target,
                            internal::colocation_target(*options.colocate_with));
    if (target.job != internal::kLocalJob) {
      return absl::InvalidArgumentError(
          absl::StrCat("colocate_with '", options.colocate_with->name(), "' on ",
                       options.colocate_with->variables()[0].device(),
                       " needs its strategy: create the variable inside strategy.scope() or with "
                       "strategy->create_variable()"));
    }
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::VariablePolicy policy,
                          internal::policy_of(options, base_name(options)));
  const internal::PartitionPlan plan{{initial.shape.empty() ? 0 : initial.shape[0]}, false};
  const std::string name = internal::reserve_local_name(base_name(options), 0);
  return internal::after_creation(
      options.name, internal::create_parts(initial, name, plan,
                                           {{std::string(internal::kLocalJob), internal::kLocalTask,
                                             internal::local_variable_client()}},
                                           kDefaultVariableTimeout, policy));
}

absl::StatusOr<ShardedVariable> create_in_current_scope(const Tensor* value,
                                                        const Initializer* init,
                                                        VariableOptions options) {
  PSFLOW_RETURN_IF_ERROR(internal::check_variable_creation_allowed(options));
  const internal::ThreadScopes& scopes = internal::thread_scopes();
  if (scopes.mixed) {
    return absl::FailedPreconditionError(
        "Mixing different ParameterServerStrategy objects: the scope() of one strategy was "
        "entered inside the scope() of another on this thread; leave the outer scope first");
  }
  if (scopes.strategy == nullptr) return create_local(value, init, options);
  if (value != nullptr) return scopes.strategy->create_variable(*value, std::move(options));
  return scopes.strategy->create_variable(*init, std::move(options));
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> ParameterServerStrategy::create(
    const ClusterResolver& cluster_resolver, Partitioner variable_partitioner,
    ParameterServerStrategyOptions options) {
  return internal::create_strategy(cluster_resolver, std::move(variable_partitioner), options,
                                   nullptr);
}

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> internal::StrategyAccess::create(
    const ClusterResolver& cluster_resolver, Partitioner variable_partitioner,
    ParameterServerStrategyOptions options, VariableClientFactory factory) {
  PSFLOW_ASSIGN_OR_RETURN(ClusterSpec spec, cluster_resolver.cluster_spec());
  PSFLOW_ASSIGN_OR_RETURN(std::optional<std::string> task_type, cluster_resolver.task_type());
  PSFLOW_ASSIGN_OR_RETURN(std::optional<int> task_id, cluster_resolver.task_id());
  PSFLOW_RETURN_IF_ERROR(validate_parameter_server_cluster(spec, task_type, task_id));
  PSFLOW_RETURN_IF_ERROR(check_dense_ps(spec));
  if (variable_placement_name(options.placement).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ParameterServerStrategyOptions::placement ", static_cast<int>(options.placement),
        " is not a VariablePlacement; use kFewestBytes or kRoundRobin"));
  }
  if (wire_dtype_name(options.wire_dtype) == "invalid") {
    return absl::InvalidArgumentError(absl::StrCat(
        "ParameterServerStrategyOptions::wire_dtype ", static_cast<int>(options.wire_dtype),
        " is not a WireDType; use kFloat32 or kBFloat16"));
  }
  if (!factory) factory = grpc_client;
  std::vector<std::shared_ptr<VariableClient>> clients;
  for (int i = 0; i < spec.num_tasks(kPsJob); ++i) {
    absl::StatusOr<std::shared_ptr<VariableClient>> client = factory(spec, i);
    if (!client.ok()) {
      return absl::Status(client.status().code(),
                          absl::StrCat("cannot make a variable client for ", task_name(kPsJob, i),
                                       ": ", client.status().message()));
    }
    if (*client == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("the client factory returned no client for ", task_name(kPsJob, i)));
    }
    clients.push_back(*std::move(client));
  }
  return std::unique_ptr<ParameterServerStrategy>(new ParameterServerStrategy(
      std::move(spec), std::move(variable_partitioner), std::move(clients), options));
}

ParameterServerStrategy::ParameterServerStrategy(
    ClusterSpec spec, Partitioner partitioner,
    std::vector<std::shared_ptr<VariableClient>> ps_clients,
    const ParameterServerStrategyOptions& options)
    : spec_(std::move(spec)),
      partitioner_(std::move(partitioner)),
      ps_clients_(std::move(ps_clients)),
      timeout_(options.variable_timeout),
      placement_(options.placement),
      wire_dtype_(options.wire_dtype),
      load_(std::make_unique<internal::PsLoad>()),
      names_(std::make_unique<internal::NameRegistry>()) {
  load_->bytes.assign(ps_clients_.size(), 0);
}

ParameterServerStrategy::~ParameterServerStrategy() = default;

StrategyScope ParameterServerStrategy::scope() { return StrategyScope(this); }

ColocationScope ParameterServerStrategy::colocate_vars_with(const ShardedVariable& v) const {
  return ColocationScope(this, v);
}

absl::StatusOr<ShardedVariable> ParameterServerStrategy::create_variable(Tensor initial_value,
                                                                         VariableOptions options) {
  const std::string requested = options.name;
  return internal::after_creation(requested,
                                  create_impl(&initial_value, nullptr, std::move(options)));
}

absl::StatusOr<ShardedVariable> ParameterServerStrategy::create_variable(Initializer initial_value,
                                                                         VariableOptions options) {
  const std::string requested = options.name;
  return internal::after_creation(requested,
                                  create_impl(nullptr, &initial_value, std::move(options)));
}

absl::StatusOr<ShardedVariable> ParameterServerStrategy::create_impl(const Tensor* value,
                                                                     const Initializer* init,
                                                                     VariableOptions options) {
  PSFLOW_RETURN_IF_ERROR(internal::check_variable_creation_allowed(options));
  PSFLOW_ASSIGN_OR_RETURN(internal::InitialValue initial,
                          internal::describe_initial_value(value, init));
  const std::string base = base_name(options);
  PSFLOW_ASSIGN_OR_RETURN(internal::VariablePolicy policy, internal::policy_of(options, base));
  policy.wire_dtype = options.wire_dtype.value_or(wire_dtype_);
  const internal::ThreadScopes& scopes = internal::thread_scopes();
  std::optional<ShardedVariable> colocate_with = std::move(options.colocate_with);
  if (!colocate_with.has_value() && scopes.colocation_owner == this) {
    colocate_with = scopes.colocation;
  }

  internal::PartitionPlan plan;
  std::vector<internal::PartTarget> targets;
  std::string name;
  if (colocate_with.has_value()) {
    // TF: colocated variables are never partitioned and use no counter slot.
    PSFLOW_ASSIGN_OR_RETURN(internal::PartTarget target,
                            internal::colocation_target(*colocate_with));
    plan = {{initial.shape.empty() ? 0 : initial.shape[0]}, false};
    targets.push_back(std::move(target));
    if (targets[0].job == internal::kLocalJob) {
      name = internal::reserve_local_name(base, 0);
    } else {
      absl::MutexLock lock(&mu_);
      name = names_->reserve(base, 0);
      // Bytes colocated on one of this strategy's tasks are bytes it holds.
      const int task = targets[0].task;
      if (targets[0].job == kPsJob && task >= 0 && task < num_ps() &&
          targets[0].client == ps_clients_[static_cast<size_t>(task)]) {
        load_->bytes[static_cast<size_t>(task)] +=
            internal::part_bytes(initial.dtype, initial.shape, plan.sizes[0]);
      }
    }
  } else {
    PSFLOW_ASSIGN_OR_RETURN(
        plan, internal::plan_partitions(partitioner_, initial.shape, initial.dtype, base));
    std::vector<int64_t> bytes;
    for (int64_t rows : plan.sizes) {
      bytes.push_back(internal::part_bytes(initial.dtype, initial.shape, rows));
    }
    absl::MutexLock lock(&mu_);
    name = names_->reserve(base, plan.partitioned ? static_cast<int>(plan.sizes.size()) : 0);
    for (int task : internal::place_parts(placement_, bytes, *load_)) {
      targets.push_back({std::string(kPsJob), task, ps_clients_[static_cast<size_t>(task)]});
    }
  }
  return internal::create_parts(initial, name, plan, targets, timeout_, policy);
}

std::vector<int64_t> ParameterServerStrategy::placed_bytes() const {
  absl::MutexLock lock(&mu_);
  return load_->bytes;
}

VariableClientLookup ParameterServerStrategy::client_lookup() const {
  return internal::make_client_lookup(
      [ps = internal::ps_client_lookup(ps_clients_)](
          std::string_view job, int task) -> absl::StatusOr<std::shared_ptr<VariableClient>> {
        if (job == internal::kLocalJob && task == internal::kLocalTask) {
          return internal::local_variable_client();
        }
        return internal::find_client(ps, job, task);
      });
}

std::string_view variable_placement_name(VariablePlacement placement) {
  switch (placement) {
    case VariablePlacement::kFewestBytes: return "fewest_bytes";
    case VariablePlacement::kRoundRobin: return "round_robin";
  }
  return "";
}

absl::StatusOr<ShardedVariable> create_variable(Tensor initial_value, VariableOptions options) {
  return create_in_current_scope(&initial_value, nullptr, std::move(options));
}

absl::StatusOr<ShardedVariable> create_variable(Initializer initial_value,
                                                VariableOptions options) {
  return create_in_current_scope(nullptr, &initial_value, std::move(options));
}

}  // namespace psflow
