#include "ps/execute.h"

#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/strings.h"
#include "tensor/codec.h"

namespace psflow {
namespace {

using Op = v1::VariableOp;

// One op after decoding and validation, ready to run.
struct PreparedOp {
  Op::Kind kind = Op::READ;
  std::string name;
  std::shared_ptr<VariableShard> shard;  // null for CREATE*
  Tensor value;
  Tensor ids;
  const OptimizerConfig* optimizer = nullptr;
  double learning_rate = 0;
};

std::optional<ScatterOp> scatter_op(Op::Kind kind) {
  switch (kind) {
    case Op::SCATTER_UPDATE: return ScatterOp::kUpdate;
    case Op::SCATTER_ADD: return ScatterOp::kAdd;
    case Op::SCATTER_SUB: return ScatterOp::kSub;
    case Op::SCATTER_MUL: return ScatterOp::kMul;
    case Op::SCATTER_DIV: return ScatterOp::kDiv;
    case Op::SCATTER_MIN: return ScatterOp::kMin;
    case Op::SCATTER_MAX: return ScatterOp::kMax;
    default: return std::nullopt;
  }
}

absl::Status with_op_context(const absl::Status& s, int index, const Op& op) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("op ", index, " (",
                                             Op::Kind_Name(op.kind()), " '",
                                             op.variable(), "'): ", s.message()));
}

absl::StatusOr<Tensor> take_tensor(Op& op, bool ids) {
  v1::TensorProto* proto = ids ? op.mutable_ids() : op.mutable_value();
  return tensor_from_proto(proto);
}

absl::Status prepare(VariableStore& store, Op& op,
                     const std::vector<OptimizerConfig>& optimizers, PreparedOp* out) {
  out->kind = op.kind();
  out->name = op.variable();
  if (!Op::Kind_IsValid(op.kind())) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown variable op kind ", static_cast<int>(op.kind())));
  }
  const bool needs_value = op.kind() != Op::READ && op.kind() != Op::GATHER &&
                           op.kind() != Op::DELETE;
  const bool needs_ids = op.kind() == Op::GATHER || op.kind() == Op::APPLY_SPARSE ||
                         scatter_op(op.kind()).has_value();
  if (needs_value) {
    PSFLOW_ASSIGN_OR_RETURN(out->value, take_tensor(op, false));
  }
  if (needs_ids) {
    PSFLOW_ASSIGN_OR_RETURN(out->ids, take_tensor(op, true));
  }
  if (op.kind() == Op::APPLY_DENSE || op.kind() == Op::APPLY_SPARSE) {
    if (op.optimizer() < 0 || op.optimizer() >= static_cast<int>(optimizers.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "optimizer index ", op.optimizer(), " is out of range; the request carries ",
          optimizers.size(), " optimizers"));
    }
    out->optimizer = &optimizers[static_cast<size_t>(op.optimizer())];
    out->learning_rate = op.learning_rate();
  }
  if (op.kind() == Op::CREATE || op.kind() == Op::CREATE_IF_ABSENT) {
    if (op.variable().empty()) {
      return absl::InvalidArgumentError("CREATE needs a variable name");
    }
    return absl::OkStatus();
  }
  if (op.kind() == Op::DELETE) return absl::OkStatus();
  PSFLOW_ASSIGN_OR_RETURN(out->shard, store.find(op.variable()));
  const VariableShard& shard = *out->shard;
  switch (op.kind()) {
    case Op::READ: return absl::OkStatus();
    case Op::GATHER: return shard.validate_gather(out->ids).status();
    case Op::ASSIGN: return shard.validate_assign(out->value);
    case Op::ASSIGN_ADD:
    case Op::ASSIGN_SUB: return shard.validate_arith(out->value);
    case Op::APPLY_DENSE:
      return shard.validate_apply_dense(*out->optimizer, out->learning_rate, out->value);
    case Op::APPLY_SPARSE:
      return shard.validate_apply_sparse(*out->optimizer, out->learning_rate, out->ids,
                                         out->value);
    default:
      return shard.validate_scatter(*scatter_op(op.kind()), out->ids, out->value).status();
  }
}

absl::Status run(VariableStore& store, PreparedOp& op, v1::ExecuteResponse* response) {
  switch (op.kind) {
    case Op::READ:
      tensor_to_proto(op.shard->read(), response->add_results());
      return absl::OkStatus();
    case Op::GATHER: {
      PSFLOW_ASSIGN_OR_RETURN(Tensor rows, op.shard->gather(op.ids));
      tensor_to_proto(rows, response->add_results());
      return absl::OkStatus();
    }
    case Op::ASSIGN: return op.shard->assign(op.value);
    case Op::ASSIGN_ADD: return op.shard->assign_add(op.value);
    case Op::ASSIGN_SUB: return op.shard->assign_sub(op.value);
    case Op::APPLY_DENSE:
      return op.shard->apply_dense_gradient(*op.optimizer, op.learning_rate, op.value);
    case Op::APPLY_SPARSE:
      return op.shard->apply_sparse_gradient(*op.optimizer, op.learning_rate, op.ids,
                                             op.value);
    case Op::CREATE:
    case Op::CREATE_IF_ABSENT:
      return store
          .create(op.name, std::move(op.value),
                  op.kind == Op::CREATE ? VariableStore::IfExists::kReplace
                                        : VariableStore::IfExists::kKeep)
          .status();
    case Op::DELETE:
      store.erase(op.name);
      return absl::OkStatus();
    default:
      return op.shard->scatter(*scatter_op(op.kind), op.ids, op.value);
  }
}

}  // namespace

absl::StatusOr<OptimizerConfig> optimizer_from_proto(const v1::OptimizerProto& p) {
  OptimizerConfig c;
  PSFLOW_ASSIGN_OR_RETURN(c.kind, optimizer_kind_from_name(p.kind()));
  c.momentum = p.momentum();
  c.nesterov = p.nesterov();
  c.initial_accumulator_value = p.initial_accumulator_value();
  c.epsilon = p.epsilon();
  c.beta_1 = p.beta_1();
  c.beta_2 = p.beta_2();
  c.learning_rate_power = p.learning_rate_power();
  c.l1_regularization_strength = p.l1_regularization_strength();
  c.l2_regularization_strength = p.l2_regularization_strength();
  c.beta = p.beta();
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(c));
  return c;
}

void optimizer_to_proto(const OptimizerConfig& c, v1::OptimizerProto* p) {
  p->set_kind(std::string(optimizer_name(c.kind)));
  p->set_momentum(c.momentum);
  p->set_nesterov(c.nesterov);
  p->set_initial_accumulator_value(c.initial_accumulator_value);
  p->set_epsilon(c.epsilon);
  p->set_beta_1(c.beta_1);
  p->set_beta_2(c.beta_2);
  p->set_learning_rate_power(c.learning_rate_power);
  p->set_l1_regularization_strength(c.l1_regularization_strength);
  p->set_l2_regularization_strength(c.l2_regularization_strength);
  p->set_beta(c.beta);
}

absl::Status execute_variable_ops(VariableStore& store, v1::ExecuteRequest& request,
                                  v1::ExecuteResponse* response) {
  std::vector<OptimizerConfig> optimizers;
  optimizers.reserve(static_cast<size_t>(request.optimizers_size()));
  for (int i = 0; i < request.optimizers_size(); ++i) {
    auto config = optimizer_from_proto(request.optimizers(i));
    if (!config.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer ", i, ": ", config.status().message()));
    }
    optimizers.push_back(*config);
  }
  std::vector<PreparedOp> prepared(static_cast<size_t>(request.ops_size()));
  for (int i = 0; i < request.ops_size(); ++i) {
    Op& op = *request.mutable_ops(i);
    PSFLOW_RETURN_IF_ERROR(
        with_op_context(prepare(store, op, optimizers, &prepared[static_cast<size_t>(i)]),
                        i, op));
  }
  for (size_t i = 0; i < prepared.size(); ++i) {
    PSFLOW_RETURN_IF_ERROR(with_op_context(run(store, prepared[i], response),
                                           static_cast<int>(i),
                                           request.ops(static_cast<int>(i))));
  }
  return absl::OkStatus();
}

}  // namespace psflow
