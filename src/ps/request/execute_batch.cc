#include "ps/request/execute_batch.h"

#include <array>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/logging.h"
#include "base/shown_text.h"
#include "base/strings.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "psflow/status_macros.h"
#include "tensor/codec.h"

namespace psflow::internal {
namespace {

using Op = v1::VariableOp;

bool is_scatter(Op::Kind kind) {
  switch (kind) {
    case Op::SCATTER_UPDATE:
    case Op::SCATTER_ADD:
    case Op::SCATTER_SUB:
    case Op::SCATTER_MUL:
    case Op::SCATTER_DIV:
    case Op::SCATTER_MIN:
    case Op::SCATTER_MAX: return true;
    default: return false;
  }
}

// OptimizerProto's field of each kOptimizerFields entry, found by name
// once: the proto names its fields as the checkpoint index does.
using ProtoFields =
    std::array<const google::protobuf::FieldDescriptor*, std::size(kOptimizerFields)>;
const ProtoFields& proto_fields() {
  static const ProtoFields fields = [] {
    ProtoFields out;
    const google::protobuf::Descriptor& d = *v1::OptimizerProto::descriptor();
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = d.FindFieldByName(std::string(kOptimizerFields[i].name));
      PSFLOW_CHECK(out[i] != nullptr, "OptimizerProto has no field ", av(kOptimizerFields[i].name));
    }
    return out;
  }();
  return fields;
}

}  // namespace

bool op_needs_value(v1::VariableOp::Kind kind) {
  return kind != Op::READ && kind != Op::GATHER && kind != Op::DELETE && kind != Op::SNAPSHOT &&
         kind != Op::DE_CREATE && kind != Op::DE_LOOKUP && kind != Op::DE_STATS &&
         kind != Op::DE_EXPORT;
}

bool op_needs_ids(v1::VariableOp::Kind kind) {
  return kind == Op::GATHER || kind == Op::APPLY_SPARSE || is_scatter(kind) ||
         kind == Op::DE_LOOKUP || kind == Op::DE_APPLY || kind == Op::DE_IMPORT;
}

std::string table_options_to_bytes(const DynamicEmbeddingOptions& o) {
  v1::DynamicTableConfig c;
  c.set_dim(o.dim);
  c.set_dtype(static_cast<v1::DataType>(o.dtype));
  c.set_seed(o.seed);
  c.set_initializer(static_cast<int32_t>(o.initializer));
  c.set_init_scale(o.init_scale);
  optimizer_to_proto(o.optimizer, c.mutable_optimizer());
  c.set_capacity_per_shard(o.capacity_per_shard);
  c.set_ttl_steps(o.ttl_steps);
  c.set_admit_after(o.admit_after);
  c.set_sketch_width(o.sketch_width);
  c.set_admit_probability(o.admit_probability);
  return c.SerializeAsString();
}

absl::StatusOr<DynamicEmbeddingOptions> table_options_from_bytes(const std::string& bytes) {
  v1::DynamicTableConfig c;
  if (!c.ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        "the table definition does not parse as a DynamicTableConfig");
  }
  DynamicEmbeddingOptions o;
  o.dim = c.dim();
  o.dtype = static_cast<DType>(c.dtype());
  o.seed = c.seed();
  o.initializer = static_cast<DynamicEmbeddingInitializer>(c.initializer());
  o.init_scale = c.init_scale();
  absl::StatusOr<OptimizerConfig> optimizer = optimizer_from_proto(c.optimizer());
  if (!optimizer.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the table's optimizer: ", optimizer.status().message()));
  }
  o.optimizer = *optimizer;
  o.capacity_per_shard = c.capacity_per_shard();
  o.ttl_steps = c.ttl_steps();
  o.admit_after = c.admit_after();
  o.sketch_width = c.sketch_width();
  o.admit_probability = c.admit_probability();
  return o;
}

absl::Status with_op_context(const absl::Status& s, size_t index, v1::VariableOp::Kind kind,
                             const std::string& variable) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("op ", index, " (", Op::Kind_Name(kind), " '",
                                             shown_name(variable), "'): ", s.message()));
}

absl::StatusOr<OptimizerConfig> optimizer_from_proto(const v1::OptimizerProto& p) {
  OptimizerConfig c;
  PSFLOW_ASSIGN_OR_RETURN(c.kind, optimizer_kind_from_name(p.kind()));
  const google::protobuf::Reflection& reflection = *p.GetReflection();
  const ProtoFields& fields = proto_fields();
  for (size_t i = 0; i < std::size(kOptimizerFields); ++i) {
    const OptimizerField& f = kOptimizerFields[i];
    if (f.flag != nullptr) {
      c.*f.flag = reflection.GetBool(p, fields[i]);
    } else {
      c.*f.number = reflection.GetDouble(p, fields[i]);
    }
  }
  PSFLOW_RETURN_IF_ERROR(validate_optimizer(c));
  return c;
}

void optimizer_to_proto(const OptimizerConfig& c, v1::OptimizerProto* p) {
  p->set_kind(std::string(optimizer_name(c.kind)));
  const google::protobuf::Reflection& reflection = *p->GetReflection();
  const ProtoFields& fields = proto_fields();
  for (size_t i = 0; i < std::size(kOptimizerFields); ++i) {
    const OptimizerField& f = kOptimizerFields[i];
    if (f.flag != nullptr) {
      reflection.SetBool(p, fields[i], c.*f.flag);
    } else {
      reflection.SetDouble(p, fields[i], c.*f.number);
    }
  }
}

absl::StatusOr<ExecuteBatch> batch_from_proto(v1::ExecuteRequest& request) {
  ExecuteBatch batch;
  if (request.has_update_key()) {
    batch.update_key = UpdateKey{request.update_key().session(), request.update_key().closure_id(),
                                 request.update_key().sequence()};
  }
  batch.optimizers.reserve(static_cast<size_t>(request.optimizers_size()));
  for (int i = 0; i < request.optimizers_size(); ++i) {
    absl::StatusOr<OptimizerConfig> config = optimizer_from_proto(request.optimizers(i));
    if (!config.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("optimizer ", i, ": ", config.status().message()));
    }
    batch.optimizers.push_back(*config);
  }
  batch.ops.resize(static_cast<size_t>(request.ops_size()));
  for (int i = 0; i < request.ops_size(); ++i) {
    Op& op = *request.mutable_ops(i);
    VariableOpArgs& args = batch.ops[static_cast<size_t>(i)];
    args.kind = op.kind();
    args.optimizer = op.optimizer();
    args.learning_rate = op.learning_rate();
    args.step = op.step();
    if (op.has_table()) args.table = op.table().SerializeAsString();
    // Unknown kinds are left for execute_variable_ops to name.
    if (Op::Kind_IsValid(op.kind())) {
      if (op_needs_value(op.kind())) {
        absl::StatusOr<Tensor> value = tensor_from_proto(op.mutable_value());
        if (!value.ok()) {
          return with_op_context(value.status(), static_cast<size_t>(i), op.kind(), op.variable());
        }
        args.value = *std::move(value);
      }
      if (op_needs_ids(op.kind())) {
        absl::StatusOr<Tensor> ids = tensor_from_proto(op.mutable_ids());
        if (!ids.ok()) {
          return with_op_context(ids.status(), static_cast<size_t>(i), op.kind(), op.variable());
        }
        args.ids = *std::move(ids);
      }
      if (op.kind() == Op::RESTORE || op.kind() == Op::DE_IMPORT) {
        args.optimizer_name = std::move(*op.mutable_optimizer_name());
        args.optimizer_steps = op.optimizer_steps();
        args.slot_names.assign(op.slot_names().begin(), op.slot_names().end());
        for (int j = 0; j < op.slots_size(); ++j) {
          absl::StatusOr<Tensor> slot = tensor_from_proto(op.mutable_slots(j));
          if (!slot.ok()) {
            return with_op_context(
                absl::Status(slot.status().code(),
                             absl::StrCat("slot ", j, ": ", slot.status().message())),
                static_cast<size_t>(i), op.kind(), op.variable());
          }
          args.slots.push_back(*std::move(slot));
        }
      }
    }
    args.variable = std::move(*op.mutable_variable());
  }
  return batch;
}

void batch_to_proto(const ExecuteBatch& batch, v1::ExecuteRequest* request) {
  request->Clear();
  if (batch.update_key.has_value()) {
    v1::UpdateKey* key = request->mutable_update_key();
    key->set_session(batch.update_key->session);
    key->set_closure_id(batch.update_key->closure_id);
    key->set_sequence(batch.update_key->sequence);
  }
  for (const OptimizerConfig& config : batch.optimizers) {
    optimizer_to_proto(config, request->add_optimizers());
  }
  for (const VariableOpArgs& args : batch.ops) {
    Op* op = request->add_ops();
    op->set_kind(args.kind);
    op->set_variable(args.variable);
    if (args.value.valid()) tensor_to_proto(args.value, op->mutable_value());
    if (args.ids.valid()) tensor_to_proto(args.ids, op->mutable_ids());
    op->set_optimizer(args.optimizer);
    op->set_learning_rate(args.learning_rate);
    op->set_optimizer_name(args.optimizer_name);
    op->set_optimizer_steps(args.optimizer_steps);
    for (const std::string& name : args.slot_names) op->add_slot_names(name);
    for (const Tensor& slot : args.slots) tensor_to_proto(slot, op->add_slots());
    op->set_step(args.step);
    if (!args.table.empty() && !op->mutable_table()->ParseFromString(args.table)) {
      op->clear_table();
    }
  }
}

bool is_mutating(v1::VariableOp::Kind kind) {
  return kind != v1::VariableOp::READ && kind != v1::VariableOp::GATHER &&
         kind != v1::VariableOp::SNAPSHOT && kind != v1::VariableOp::DE_STATS &&
         kind != v1::VariableOp::DE_EXPORT;
}

}  // namespace psflow::internal
