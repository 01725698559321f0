// Optimizer: batches every gradient of a step into one request per ps task.
#include "psflow/optimizer.h"

#include <atomic>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/strings.h"
#include "optimizer/optimizer.h"
#include "psflow/status_macros.h"
#include "psflow/strategy.h"
#include "strategy/partial_apply.h"
#include "strategy/request_batch.h"
#include "strategy/rows.h"
#include "strategy/update_binding.h"
#include "strategy/variable_state.h"

namespace psflow {

using internal::av;
using internal::optimizer_name;
using internal::validate_optimizer;
using internal::VariableOpArgs;

namespace internal {

// Thread-safety: immutable except `*known_step`, which is atomic.
struct OptimizerState {
  OptimizerConfig config;
  double learning_rate = 0;
  LearningRateSchedule schedule;  // when set, learning_rate is unused
  ShardedVariable iterations;
  // The largest `iterations` value seen; -1 until one is known. Shared with
  // the copies bound to scheduled closures (bind_update_keys).
  std::shared_ptr<std::atomic<int64_t>> known_step = std::make_shared<std::atomic<int64_t>>(-1);
};

// Thread-safety: stateless.
struct OptimizerAccess {
  static Optimizer bind(const Optimizer& optimizer, std::shared_ptr<UpdateKeys> keys) {
    if (optimizer.state_ == nullptr) return optimizer;
    // The copy shares known_step with the original.
    auto bound = std::make_shared<OptimizerState>(*optimizer.state_);
    bound->iterations = bind_update_keys(bound->iterations, std::move(keys));
    return Optimizer(std::move(bound));
  }
  // apply_gradients, incrementing `iterations` only when `count_step`.
  static absl::Status apply(const Optimizer& optimizer,
                            const std::vector<GradientAndVariable>& grads_and_vars,
                            bool count_step);
  static absl::StatusOr<double> current_learning_rate(const Optimizer& optimizer);
};

Optimizer bind_update_keys(const Optimizer& optimizer, std::shared_ptr<UpdateKeys> keys) {
  return OptimizerAccess::bind(optimizer, std::move(keys));
}

}  // namespace internal

namespace {

using internal::VariableAccess;
using Op = v1::VariableOp;

absl::Status check_learning_rate(double lr, std::string_view where) {
  if (std::isfinite(lr) && lr >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(av(where), " learning rate ", lr, " is invalid; it must be finite and >= 0"));
}

std::string describe(const Tensor& t) {
  return t.valid() ? absl::StrCat(av(dtype_name(t.dtype())), " ", shape_string(t.shape()))
                   : std::string("none");
}

void note_step(internal::OptimizerState& s, int64_t step) {
  int64_t seen = s.known_step->load();
  while (step > seen && !s.known_step->compare_exchange_weak(seen, step)) {
  }
}

// Adds the APPLY ops of one dense gradient.
absl::Status add_dense(internal::RequestBatch& batch, const OptimizerConfig& config, double lr,
                       const Tensor& grad, const ShardedVariable& var) {
  if (grad.dtype() != var.dtype() || grad.shape() != var.shape()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradient for variable '", var.name(), "' is ", describe(grad), " but the variable is ",
        av(dtype_name(var.dtype())), " ", shape_string(var.shape()),
        "; pass a gradient of the variable's dtype and shape"));
  }
  const internal::ShardedState& s = VariableAccess::state(var);
  for (size_t i = 0; i < s.parts.size(); ++i) {
    const auto shard = static_cast<int>(i);
    const internal::VariableState& part = VariableAccess::state(s.parts[i]);
    VariableOpArgs op = internal::make_op(Op::APPLY_DENSE, part);
    // Sent as the variable's wire dtype; the ps widens it back to float32.
    op.wire_dtype = part.policy.wire_dtype;
    op.value = s.parts.size() == 1 ? grad
                                   : grad.slice(s.layout.offset(shard),
                                                s.layout.offset(shard) + s.layout.size(shard));
    op.optimizer = batch.optimizer_index(part, config);
    op.learning_rate = lr;
    batch.add(part, std::move(op));
  }
  return absl::OkStatus();
}

// Adds the APPLY ops of one row-sparse gradient, routed to the shards.
absl::Status add_sparse(internal::RequestBatch& batch, const OptimizerConfig& config, double lr,
                        const IndexedSlices& grad, const ShardedVariable& var) {
  const internal::ShardedState& s = VariableAccess::state(var);
  if (s.shape.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sparse gradient for scalar variable '", s.name, "'; pass a dense gradient"));
  }
  if (!grad.indices.valid() || grad.indices.rank() != 1) {
    return absl::InvalidArgumentError(absl::StrCat("sparse gradient for variable '", s.name,
                                                   "' needs 1-D indices, got ",
                                                   describe(grad.indices)));
  }
  const Shape expected = internal::with_rows(grad.indices.dim(0), internal::row_shape(s.shape));
  if (grad.values.dtype() != s.dtype || grad.values.shape() != expected) {
    return absl::InvalidArgumentError(absl::StrCat("sparse gradient for variable '", s.name,
                                                   "' has values ", describe(grad.values),
                                                   "; expected ", av(dtype_name(s.dtype)), " ",
                                                   shape_string(expected), " (one row per index)"));
  }
  PSFLOW_ASSIGN_OR_RETURN(internal::RoutedIds routed,
                          internal::route_ids(s.layout, grad.indices, s.name));
  for (size_t i = 0; i < s.parts.size(); ++i) {
    if (routed.local_ids[i].empty()) continue;
    const internal::VariableState& part = VariableAccess::state(s.parts[i]);
    VariableOpArgs op = internal::make_op(Op::APPLY_SPARSE, part);
    op.wire_dtype = part.policy.wire_dtype;
    op.ids = Tensor::from_vector<int64_t>(routed.local_ids[i]);
    op.value =
        s.parts.size() == 1 ? grad.values : internal::take_rows(grad.values, routed.positions[i]);
    op.optimizer = batch.optimizer_index(part, config);
    op.learning_rate = lr;
    batch.add(part, std::move(op));
  }
  return absl::OkStatus();
}

bool is_missing(const Gradient& g) {
  const Tensor* dense = std::get_if<Tensor>(&g);
  return dense != nullptr && !dense->valid();
}

}  // namespace

absl::StatusOr<Optimizer> Optimizer::create(OptimizerConfig config, double learning_rate,
                                            OptimizerOptions options) {
  PSFLOW_RETURN_IF_ERROR(check_learning_rate(learning_rate, "the constant"));
  return make(config, learning_rate, nullptr, std::move(options));
}

absl::StatusOr<Optimizer> Optimizer::create(OptimizerConfig config, LearningRateSchedule schedule,
                                            OptimizerOptions options) {
  if (!schedule) {
    return absl::InvalidArgumentError(
        "the learning rate schedule is empty; pass a function of the step or a constant");
  }
  return make(config, 0, std::move(schedule), std::move(options));
}

absl::StatusOr<Optimizer> Optimizer::make(OptimizerConfig config, double learning_rate,
                                          LearningRateSchedule schedule, OptimizerOptions options) {
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(config));
  auto state = std::make_shared<internal::OptimizerState>();
  state->config = config;
  state->learning_rate = learning_rate;
  state->schedule = std::move(schedule);
  if (options.iterations.has_value()) {
    const ShardedVariable& it = *options.iterations;
    PSFLOW_RETURN_IF_ERROR(internal::check_valid(it));
    if (it.dtype() != DType::kInt64 || !it.shape().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("iterations variable '", it.name(), "' is ", av(dtype_name(it.dtype())), " ",
                       shape_string(it.shape()), "; it must be an int64 scalar"));
    }
    state->iterations = it;
  } else {
    const std::string prefix =
        options.name.empty() ? std::string(optimizer_name(config.kind)) : options.name;
    PSFLOW_ASSIGN_OR_RETURN(
        state->iterations,
        create_variable(Tensor::scalar<int64_t>(0), {.name = absl::StrCat(prefix, "/iterations")}));
    state->known_step->store(0);
  }
  return Optimizer(std::move(state));
}

const OptimizerConfig& Optimizer::config() const { return state_->config; }
const ShardedVariable& Optimizer::iterations() const { return state_->iterations; }

double Optimizer::learning_rate(int64_t step) const {
  return state_->schedule ? state_->schedule(step) : state_->learning_rate;
}

namespace internal {

absl::Status apply_gradients_part(const Optimizer& optimizer,
                                  const std::vector<GradientAndVariable>& grads_and_vars,
                                  bool count_step) {
  if (count_step) return OptimizerAccess::apply(optimizer, grads_and_vars, true);
  // A bound optimizer's requests get their update key through the
  // `iterations` op; a part without it carries the key on its variables.
  const std::shared_ptr<UpdateKeys>& keys =
      VariableAccess::state(optimizer.iterations().variables()[0]).update_keys;
  if (keys == nullptr) return OptimizerAccess::apply(optimizer, grads_and_vars, false);
  std::vector<GradientAndVariable> bound = grads_and_vars;
  for (GradientAndVariable& gv : bound) gv.variable = bind_update_keys(gv.variable, keys);
  return OptimizerAccess::apply(optimizer, bound, false);
}

absl::StatusOr<double> current_learning_rate(const Optimizer& optimizer) {
  return OptimizerAccess::current_learning_rate(optimizer);
}

}  // namespace internal

absl::Status Optimizer::apply_gradients(
    const std::vector<GradientAndVariable>& grads_and_vars) const {
  return internal::OptimizerAccess::apply(*this, grads_and_vars, /*count_step=*/true);
}

absl::StatusOr<double> internal::OptimizerAccess::current_learning_rate(
    const Optimizer& optimizer) {
  internal::OptimizerState& s = *optimizer.state_;
  if (!s.schedule) return s.learning_rate;
  if (s.known_step->load() < 0) {
    PSFLOW_ASSIGN_OR_RETURN(Tensor step, s.iterations.read_value());
    note_step(s, step.scalar_value<int64_t>());
  }
  const int64_t step = s.known_step->load();
  const double lr = s.schedule(step);
  PSFLOW_RETURN_IF_ERROR(check_learning_rate(lr, absl::StrCat("the schedule's (step ", step, ")")));
  return lr;
}

absl::Status internal::OptimizerAccess::apply(
    const Optimizer& optimizer, const std::vector<GradientAndVariable>& grads_and_vars,
    bool count_step) {
  internal::OptimizerState& s = *optimizer.state_;
  std::vector<std::string> names;
  bool any = false;
  for (const GradientAndVariable& gv : grads_and_vars) {
    PSFLOW_RETURN_IF_ERROR(internal::check_valid(gv.variable));
    names.push_back(absl::StrCat("'", gv.variable.name(), "'"));
    any = any || !is_missing(gv.gradient);
  }
  if (!any) {
    return absl::InvalidArgumentError(
        absl::StrCat("No gradients provided for any variable: [", absl::StrJoin(names, ", "),
                     "]; every gradient is missing (a default-constructed Tensor)"));
  }

  PSFLOW_ASSIGN_OR_RETURN(const double lr, current_learning_rate(optimizer));

  internal::RequestBatch batch;
  for (const GradientAndVariable& gv : grads_and_vars) {
    if (is_missing(gv.gradient)) continue;
    if (const Tensor* dense = std::get_if<Tensor>(&gv.gradient)) {
      PSFLOW_RETURN_IF_ERROR(add_dense(batch, s.config, lr, *dense, gv.variable));
    } else {
      PSFLOW_RETURN_IF_ERROR(
          add_sparse(batch, s.config, lr, std::get<IndexedSlices>(gv.gradient), gv.variable));
    }
  }
  int step_slot = -1;
  if (count_step) {
    const internal::VariableState& iterations = VariableAccess::state(s.iterations.variables()[0]);
    VariableOpArgs increment = internal::make_op(Op::ASSIGN_ADD, iterations);
    increment.value = Tensor::scalar<int64_t>(1);
    batch.add(iterations, std::move(increment));
    step_slot = s.schedule ? batch.add(iterations, internal::make_op(Op::READ, iterations)) : -1;
  }
  PSFLOW_ASSIGN_OR_RETURN(std::vector<Tensor> results, batch.run());
  if (step_slot >= 0) {
    const Tensor& step = results[static_cast<size_t>(step_slot)];
    if (step.dtype() == DType::kInt64 && step.num_elements() == 1) {
      note_step(s, step.scalar_value<int64_t>());
    }
  }
  return absl::OkStatus();
}

}  // namespace psflow
