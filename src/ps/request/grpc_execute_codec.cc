#include "ps/request/grpc_execute_codec.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <bit>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/strings.h"
#include "psflow/status_macros.h"
#include "psflow/v1/variable.pb.h"
#include "rpc/byte_buffer_writer.h"
#include "rpc/tensor_stream.h"
#include "rpc/wire_stream.h"
#include "tensor/codec_internal.h"
#include "tensor/wire.h"

namespace psflow::internal {
namespace {

using internal::WireType;

// How result `i` travels: `wire[i]`, float32 past its end.
WireDType result_wire(const std::vector<WireDType>& wire, size_t i) {
  return i < wire.size() ? wire[i] : WireDType::kFloat32;
}

// Field numbers of proto/psflow/v1/variable.proto.
constexpr uint32_t kRequestOps = 1;
constexpr uint32_t kRequestOptimizers = 2;
constexpr uint32_t kRequestUpdateKey = 3;
constexpr uint32_t kRequestSharedMemory = 4;
// SharedMemoryCall holds a 16-byte token and two integers: far less.
constexpr size_t kMaxSharedMemoryCallBytes = 256;
constexpr uint32_t kOpKind = 1;
constexpr uint32_t kOpVariable = 2;
constexpr uint32_t kOpValue = 3;
constexpr uint32_t kOpIds = 4;
constexpr uint32_t kOpOptimizer = 5;
constexpr uint32_t kOpLearningRate = 6;
constexpr uint32_t kOpOptimizerName = 7;
constexpr uint32_t kOpOptimizerSteps = 8;
constexpr uint32_t kOpSlotNames = 9;
constexpr uint32_t kOpSlots = 10;
constexpr uint32_t kOpStep = 11;
constexpr uint32_t kOpTable = 12;
constexpr uint32_t kOpResultDtype = 13;
// Optimizers keep at most 2 slots; more is malformed, and bounding them
// keeps a hostile request from making millions of tiny entries.
constexpr size_t kMaxSlotsPerOp = 16;
constexpr uint32_t kResponseResults = 1;
constexpr uint32_t kOptimizerKind = 1;
constexpr uint32_t kOptimizerMomentum = 2;
constexpr uint32_t kOptimizerNesterov = 3;
constexpr uint32_t kOptimizerBeta = 11;

// int32 and enum fields: negative values are sign-extended to 10 bytes.
uint64_t int32_varint(int32_t v) { return static_cast<uint64_t>(static_cast<int64_t>(v)); }

// VariableOp.result_dtype for `op`: only ops answering with a tensor say
// how they want it (0: unset).
int32_t result_dtype_field(const VariableOpArgs& op) {
  const bool answers = op.kind == v1::VariableOp::READ || op.kind == v1::VariableOp::GATHER ||
                       op.kind == v1::VariableOp::DE_LOOKUP;
  return answers ? result_dtype_value(op.wire_dtype) : 0;
}

size_t op_body_size(const VariableOpArgs& op, size_t value_size, size_t ids_size,
                    const std::vector<size_t>& slot_sizes) {
  size_t size = 0;
  if (op.kind != 0) {
    size += internal::tag_size(kOpKind) + internal::varint_size(int32_varint(op.kind));
  }
  if (!op.variable.empty()) {
    size += internal::length_delimited_size(kOpVariable, op.variable.size());
  }
  if (op.value.valid()) size += internal::length_delimited_size(kOpValue, value_size);
  if (op.ids.valid()) size += internal::length_delimited_size(kOpIds, ids_size);
  if (op.optimizer != 0) {
    size += internal::tag_size(kOpOptimizer) + internal::varint_size(int32_varint(op.optimizer));
  }
  if (std::bit_cast<uint64_t>(op.learning_rate) != 0) {
    size += internal::tag_size(kOpLearningRate) + 8;
  }
  if (!op.optimizer_name.empty()) {
    size += internal::length_delimited_size(kOpOptimizerName, op.optimizer_name.size());
  }
  if (op.optimizer_steps != 0) {
    size += internal::tag_size(kOpOptimizerSteps) +
            internal::varint_size(static_cast<uint64_t>(op.optimizer_steps));
  }
  for (const std::string& name : op.slot_names) {
    size += internal::length_delimited_size(kOpSlotNames, name.size());
  }
  for (size_t slot_size : slot_sizes) {
    size += internal::length_delimited_size(kOpSlots, slot_size);
  }
  if (op.step != 0) {
    size += internal::tag_size(kOpStep) + internal::varint_size(static_cast<uint64_t>(op.step));
  }
  if (!op.table.empty()) size += internal::length_delimited_size(kOpTable, op.table.size());
  if (const int32_t d = result_dtype_field(op); d != 0) {
    size += internal::tag_size(kOpResultDtype) + internal::varint_size(int32_varint(d));
  }
  return size;
}

// Where a tensor goes: its offset in the shared region, or -1 for the
// message itself.
int64_t place(const Tensor& t, WireDType wire, SharedArena* arena) {
  if (arena == nullptr || !t.valid() || !shareable(t, wire)) return -1;
  return arena->reserve(content_bytes(t, wire));
}

size_t placed_size(const Tensor& t, WireDType wire, int64_t at) {
  return at >= 0 ? shared_tensor_proto_size(t, wire, static_cast<uint64_t>(at))
                 : encoded_size(t, wire);
}

void write_placed(const Tensor& t, WireDType wire, int64_t at, const SharedArena* arena,
                  ByteBufferWriter& out) {
  if (at >= 0) {
    write_shared_tensor_proto(t, wire, static_cast<uint64_t>(at), *arena, out);
  } else {
    write_tensor_proto(t, wire, out);
  }
}

void write_op(const VariableOpArgs& op, SharedArena* arena, ByteBufferWriter& out) {
  constexpr WireDType kAsIs = WireDType::kFloat32;
  const int64_t value_at = place(op.value, op.wire_dtype, arena);
  const int64_t ids_at = place(op.ids, kAsIs, arena);
  const size_t value_size = op.value.valid() ? placed_size(op.value, op.wire_dtype, value_at) : 0;
  const size_t ids_size = op.ids.valid() ? placed_size(op.ids, kAsIs, ids_at) : 0;
  std::vector<int64_t> slot_at;
  std::vector<size_t> slot_sizes;
  slot_at.reserve(op.slots.size());
  slot_sizes.reserve(op.slots.size());
  for (const Tensor& slot : op.slots) {
    slot_at.push_back(place(slot, kAsIs, arena));
    slot_sizes.push_back(placed_size(slot, kAsIs, slot_at.back()));
  }
  std::string* bytes = out.bytes();
  internal::put_tag(bytes, kRequestOps, WireType::kLengthDelimited);
  internal::put_varint(bytes, op_body_size(op, value_size, ids_size, slot_sizes));
  if (op.kind != 0) {
    internal::put_tag(bytes, kOpKind, WireType::kVarint);
    internal::put_varint(bytes, int32_varint(op.kind));
  }
  if (!op.variable.empty()) {
    internal::put_tag(bytes, kOpVariable, WireType::kLengthDelimited);
    internal::put_varint(bytes, op.variable.size());
    bytes->append(op.variable);
  }
  if (op.value.valid()) {
    internal::put_tag(bytes, kOpValue, WireType::kLengthDelimited);
    internal::put_varint(bytes, value_size);
    write_placed(op.value, op.wire_dtype, value_at, arena, out);
  }
  if (op.ids.valid()) {
    internal::put_tag(bytes, kOpIds, WireType::kLengthDelimited);
    internal::put_varint(bytes, ids_size);
    write_placed(op.ids, kAsIs, ids_at, arena, out);
  }
  if (op.optimizer != 0) {
    internal::put_tag(bytes, kOpOptimizer, WireType::kVarint);
    internal::put_varint(bytes, int32_varint(op.optimizer));
  }
  if (std::bit_cast<uint64_t>(op.learning_rate) != 0) {
    internal::put_tag(bytes, kOpLearningRate, WireType::kFixed64);
    internal::put_fixed64(bytes, std::bit_cast<uint64_t>(op.learning_rate));
  }
  if (!op.optimizer_name.empty()) {
    internal::put_tag(bytes, kOpOptimizerName, WireType::kLengthDelimited);
    internal::put_varint(bytes, op.optimizer_name.size());
    bytes->append(op.optimizer_name);
  }
  if (op.optimizer_steps != 0) {
    internal::put_tag(bytes, kOpOptimizerSteps, WireType::kVarint);
    internal::put_varint(bytes, static_cast<uint64_t>(op.optimizer_steps));
  }
  for (const std::string& name : op.slot_names) {
    internal::put_tag(bytes, kOpSlotNames, WireType::kLengthDelimited);
    internal::put_varint(bytes, name.size());
    bytes->append(name);
  }
  for (size_t i = 0; i < op.slots.size(); ++i) {
    internal::put_tag(bytes, kOpSlots, WireType::kLengthDelimited);
    internal::put_varint(bytes, slot_sizes[i]);
    write_placed(op.slots[i], kAsIs, slot_at[i], arena, out);
  }
  if (op.step != 0) {
    internal::put_tag(bytes, kOpStep, WireType::kVarint);
    internal::put_varint(bytes, static_cast<uint64_t>(op.step));
  }
  if (!op.table.empty()) {
    internal::put_tag(bytes, kOpTable, WireType::kLengthDelimited);
    internal::put_varint(bytes, op.table.size());
    bytes->append(op.table);
  }
  if (const int32_t d = result_dtype_field(op); d != 0) {
    internal::put_tag(bytes, kOpResultDtype, WireType::kVarint);
    internal::put_varint(bytes, int32_varint(d));
  }
}

absl::Status check_size(size_t size, const CodecLimits& limits, std::string_view message) {
  if (size > limits.max_message_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(av(message), " is ", size,
                                                   " bytes, more than max_message_bytes ",
                                                   limits.max_message_bytes));
  }
  return absl::OkStatus();
}

absl::Status with_prefix(const absl::Status& s, std::string_view prefix) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(av(prefix), ": ", s.message()));
}

// Parses one VariableOp occurrence into `op`.
absl::Status read_op(WireStream& stream, const WireStream::Field& message,
                     const CodecLimits& limits, DecodeBudget& budget, SharedSource* shared,
                     VariableOpArgs* op) {
  TensorProtoReader value(limits, budget);
  TensorProtoReader ids(limits, budget);
  value.set_shared_source(shared);
  ids.set_shared_source(shared);
  auto read_field = [&](const WireStream::Field& field) -> absl::Status {
    switch (field.number) {
      case kOpKind:
        PSFLOW_RETURN_IF_ERROR(stream.expect(field, "VariableOp.kind", WireType::kVarint));
        op->kind = static_cast<v1::VariableOp::Kind>(static_cast<int32_t>(field.value));
        break;
      case kOpVariable:
        PSFLOW_RETURN_IF_ERROR(stream.read_string(field, "VariableOp.variable", &op->variable));
        break;
      case kOpValue:
      case kOpIds:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, field.number == kOpValue ? "VariableOp.value" : "VariableOp.ids",
                          WireType::kLengthDelimited));
        PSFLOW_RETURN_IF_ERROR((field.number == kOpValue ? value : ids).merge(stream, field));
        break;
      case kOpOptimizer:
        PSFLOW_RETURN_IF_ERROR(stream.expect(field, "VariableOp.optimizer", WireType::kVarint));
        op->optimizer = static_cast<int32_t>(field.value);
        break;
      case kOpLearningRate:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "VariableOp.learning_rate", WireType::kFixed64));
        op->learning_rate = std::bit_cast<double>(field.value);
        break;
      case kOpOptimizerName:
        PSFLOW_RETURN_IF_ERROR(
            stream.read_string(field, "VariableOp.optimizer_name", &op->optimizer_name));
        break;
      case kOpOptimizerSteps:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "VariableOp.optimizer_steps", WireType::kVarint));
        op->optimizer_steps = static_cast<int64_t>(field.value);
        break;
      case kOpSlotNames:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "VariableOp.slot_names", WireType::kLengthDelimited));
        if (op->slot_names.size() >= kMaxSlotsPerOp) {
          return absl::InvalidArgumentError(
              absl::StrCat("more than ", kMaxSlotsPerOp, " slot names in one op"));
        }
        PSFLOW_RETURN_IF_ERROR(stream.read_bytes(field, &op->slot_names.emplace_back()));
        break;
      case kOpSlots: {
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "VariableOp.slots", WireType::kLengthDelimited));
        if (op->slots.size() >= kMaxSlotsPerOp) {
          return absl::InvalidArgumentError(
              absl::StrCat("more than ", kMaxSlotsPerOp, " slot tensors in one op"));
        }
        // Each occurrence of a repeated message field is its own tensor.
        TensorProtoReader slot(limits, budget);
        slot.set_shared_source(shared);
        PSFLOW_RETURN_IF_ERROR(slot.merge(stream, field));
        absl::StatusOr<Tensor> t = slot.finish();
        if (!t.ok()) return with_prefix(t.status(), absl::StrCat("slot ", op->slots.size()));
        op->slots.push_back(*std::move(t));
        break;
      }
      case kOpStep:
        PSFLOW_RETURN_IF_ERROR(stream.expect(field, "VariableOp.step", WireType::kVarint));
        op->step = static_cast<int64_t>(field.value);
        break;
      case kOpTable:
        PSFLOW_RETURN_IF_ERROR(
            stream.expect(field, "VariableOp.table", WireType::kLengthDelimited));
        {
          // A message field seen twice merges, as protobuf parses it: the
          // two encodings concatenated.
          std::string part;
          PSFLOW_RETURN_IF_ERROR(stream.read_bytes(field, &part));
          op->table.append(part);
        }
        break;
      case kOpResultDtype: {
        PSFLOW_RETURN_IF_ERROR(stream.expect(field, "VariableOp.result_dtype", WireType::kVarint));
        PSFLOW_ASSIGN_OR_RETURN(op->wire_dtype,
                                result_wire_dtype(internal::int32_value(field.value)));
        break;
      }
      default: PSFLOW_RETURN_IF_ERROR(stream.skip_unknown(field)); break;
    }
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(stream.for_each_field(message, read_field));
  // proto3 `string` fields must be UTF-8; every protobuf parser rejects
  // names that are not, so this one does too.
  if (!internal::validate_key(op->variable).ok()) {
    return absl::InvalidArgumentError("variable name is not valid UTF-8");
  }
  if (!internal::validate_key(op->optimizer_name).ok()) {
    return absl::InvalidArgumentError("optimizer name is not valid UTF-8");
  }
  for (const std::string& name : op->slot_names) {
    if (!internal::validate_key(name).ok()) {
      return absl::InvalidArgumentError("a slot name is not valid UTF-8");
    }
  }
  // Kept as bytes for the table to read, but checked here so that this
  // decoder accepts exactly what the generated parser accepts (DE_CREATE
  // is rare: the parse costs nothing that matters).
  if (!op->table.empty() && !v1::DynamicTableConfig().ParseFromString(op->table)) {
    return absl::InvalidArgumentError(
        "VariableOp.table is not a valid DynamicTableConfig (the definition DE_CREATE carries)");
  }
  if (value.present()) {
    absl::StatusOr<Tensor> t = value.finish();
    if (!t.ok()) return with_prefix(t.status(), "value");
    op->value = *std::move(t);
  }
  if (ids.present()) {
    absl::StatusOr<Tensor> t = ids.finish();
    if (!t.ok()) return with_prefix(t.status(), "ids");
    op->ids = *std::move(t);
  }
  return absl::OkStatus();
}

// OptimizerProto's double fields by number (all but 1 kind and 3 nesterov).
void set_hyper_parameter(uint32_t number, double v, v1::OptimizerProto* out) {
  switch (number) {
    case 2: out->set_momentum(v); break;
    case 4: out->set_initial_accumulator_value(v); break;
    case 5: out->set_epsilon(v); break;
    case 6: out->set_beta_1(v); break;
    case 7: out->set_beta_2(v); break;
    case 8: out->set_learning_rate_power(v); break;
    case 9: out->set_l1_regularization_strength(v); break;
    case 10: out->set_l2_regularization_strength(v); break;
    case 11: out->set_beta(v); break;
    default: break;
  }
}

// Parses one OptimizerProto field by hand: the generated parser would log
// to stderr for every invalid UTF-8 `kind` a hostile client sends.
absl::Status read_optimizer(WireStream& stream, const WireStream::Field& message,
                            v1::OptimizerProto* out) {
  return stream.for_each_field(message, [&](const WireStream::Field& field) -> absl::Status {
    if (field.number == kOptimizerKind) {
      PSFLOW_RETURN_IF_ERROR(stream.read_string(field, "OptimizerProto.kind", out->mutable_kind()));
      if (!internal::validate_key(out->kind()).ok()) {
        return absl::InvalidArgumentError("optimizer kind is not valid UTF-8");
      }
    } else if (field.number == kOptimizerNesterov) {
      PSFLOW_RETURN_IF_ERROR(stream.expect(field, "OptimizerProto.nesterov", WireType::kVarint));
      out->set_nesterov(field.value != 0);
    } else if (field.number >= kOptimizerMomentum && field.number <= kOptimizerBeta) {
      PSFLOW_RETURN_IF_ERROR(
          stream.expect(field, "an OptimizerProto hyper-parameter", WireType::kFixed64));
      set_hyper_parameter(field.number, std::bit_cast<double>(field.value), out);
    } else {
      PSFLOW_RETURN_IF_ERROR(stream.skip_unknown(field));
    }
    return absl::OkStatus();
  });
}

// A ByteBuffer as a protobuf input stream (the buffer is copied by
// reference: its slices are shared, not their bytes).
class ByteBufferInput {
 public:
  explicit ByteBufferInput(const grpc::ByteBuffer& bytes)
      : buffer_(bytes), reader_(&buffer_), in_(&reader_) {}
  google::protobuf::io::CodedInputStream* stream() { return &in_; }

 private:
  grpc::ByteBuffer buffer_;
  grpc::ProtoBufferReader reader_;
  google::protobuf::io::CodedInputStream in_;
};

// Reads the top-level message `message` (ExecuteRequest, ExecuteResponse)
// from `bytes` after checking its size, calling visit(stream, field) for
// each of its fields; stops at the first error.
template <typename Visit>
absl::Status read_message(const grpc::ByteBuffer& bytes, const CodecLimits& limits,
                          std::string_view message, Visit&& visit) {
  const size_t size = bytes.Length();
  PSFLOW_RETURN_IF_ERROR(check_size(size, limits, message));
  if (size == 0) return absl::OkStatus();
  ByteBufferInput input(bytes);
  WireStream stream(input.stream(), size, message);
  WireStream::Field field;
  while (!stream.at_end()) {
    PSFLOW_RETURN_IF_ERROR(stream.next(&field));
    PSFLOW_RETURN_IF_ERROR(visit(stream, field));
  }
  return absl::OkStatus();
}

}  // namespace

grpc::ByteBuffer encode_execute_request(const ExecuteBatch& batch, SharedRequest* shared) {
  ByteBufferWriter out;
  SharedArena* arena = shared == nullptr ? nullptr : &shared->arena;
  for (const VariableOpArgs& op : batch.ops) write_op(op, arena, out);
  std::string* bytes = out.bytes();
  for (const OptimizerConfig& config : batch.optimizers) {
    v1::OptimizerProto proto;
    optimizer_to_proto(config, &proto);
    internal::put_tag(bytes, kRequestOptimizers, WireType::kLengthDelimited);
    internal::put_varint(bytes, proto.ByteSizeLong());
    proto.AppendToString(bytes);
  }
  if (batch.update_key.has_value()) {
    v1::UpdateKey key;
    key.set_session(batch.update_key->session);
    key.set_closure_id(batch.update_key->closure_id);
    key.set_sequence(batch.update_key->sequence);
    internal::put_tag(bytes, kRequestUpdateKey, WireType::kLengthDelimited);
    internal::put_varint(bytes, key.ByteSizeLong());
    key.AppendToString(bytes);
  }
  if (shared != nullptr) {
    v1::SharedMemoryCall call;
    call.set_session(shared->session);
    // What the request's tensors left of the arena, aligned, is the ps's
    // for results.
    const int64_t results = shared->arena.reserve(0);
    if (results >= 0) {
      call.set_result_offset(static_cast<uint64_t>(results));
      call.set_result_bytes(shared->arena.end() - static_cast<uint64_t>(results));
    }
    internal::put_tag(bytes, kRequestSharedMemory, WireType::kLengthDelimited);
    internal::put_varint(bytes, call.ByteSizeLong());
    call.AppendToString(bytes);
  }
  return out.finish();
}

absl::StatusOr<std::optional<SharedMemoryCallInfo>> read_shared_memory_call(
    const grpc::ByteBuffer& bytes, const CodecLimits& limits) {
  std::optional<SharedMemoryCallInfo> info;
  auto read_field = [&](WireStream& stream, const WireStream::Field& field) -> absl::Status {
    if (field.number != kRequestSharedMemory) return stream.skip_unknown(field);
    PSFLOW_RETURN_IF_ERROR(
        stream.expect(field, "ExecuteRequest.shared_memory", WireType::kLengthDelimited));
    if (field.length > kMaxSharedMemoryCallBytes) {
      return absl::InvalidArgumentError("ExecuteRequest.shared_memory is malformed (too long)");
    }
    std::string part;
    PSFLOW_RETURN_IF_ERROR(stream.read_bytes(field, &part));
    v1::SharedMemoryCall call;
    if (!call.ParseFromString(part)) {
      return absl::InvalidArgumentError("ExecuteRequest.shared_memory is malformed");
    }
    // A message field seen twice merges, as protobuf parses it.
    if (!info.has_value()) info.emplace();
    if (!call.session().empty()) info->session = call.session();
    if (call.result_offset() != 0) info->result_offset = call.result_offset();
    if (call.result_bytes() != 0) info->result_bytes = call.result_bytes();
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(read_message(bytes, limits, "ExecuteRequest", read_field));
  return info;
}

absl::StatusOr<ExecuteBatch> decode_execute_request(const grpc::ByteBuffer& bytes,
                                                    const CodecLimits& limits,
                                                    const SharedMemoryRegion* region) {
  ExecuteBatch batch;
  // Contents in the region count as input: at most its size in all.
  SharedSource shared{region, region == nullptr ? 0 : region->size()};
  DecodeBudget budget(bytes.Length() + shared.remaining, limits);
  auto read_field = [&](WireStream& stream, const WireStream::Field& field) -> absl::Status {
    if (field.number == kRequestOps) {
      PSFLOW_RETURN_IF_ERROR(
          stream.expect(field, "ExecuteRequest.ops", WireType::kLengthDelimited));
      const size_t index = batch.ops.size();
      if (index >= kMaxOpsPerRequest) {
        return absl::InvalidArgumentError(absl::StrCat("the ExecuteRequest holds more than ",
                                                       kMaxOpsPerRequest,
                                                       " ops; split it into several requests"));
      }
      PSFLOW_RETURN_IF_ERROR(
          with_prefix(read_op(stream, field, limits, budget, &shared, &batch.ops.emplace_back()),
                      absl::StrCat("op ", index)));
    } else if (field.number == kRequestOptimizers) {
      PSFLOW_RETURN_IF_ERROR(
          stream.expect(field, "ExecuteRequest.optimizers", WireType::kLengthDelimited));
      const size_t index = batch.optimizers.size();
      if (index >= kMaxOpsPerRequest) {
        return absl::InvalidArgumentError(
            absl::StrCat("the ExecuteRequest holds more than ", kMaxOpsPerRequest, " optimizers"));
      }
      v1::OptimizerProto proto;
      PSFLOW_RETURN_IF_ERROR(
          with_prefix(read_optimizer(stream, field, &proto), absl::StrCat("optimizer ", index)));
      absl::StatusOr<OptimizerConfig> config = optimizer_from_proto(proto);
      if (!config.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("optimizer ", index, ": ", config.status().message()));
      }
      batch.optimizers.push_back(*config);
    } else if (field.number == kRequestUpdateKey) {
      PSFLOW_RETURN_IF_ERROR(
          stream.expect(field, "ExecuteRequest.update_key", WireType::kLengthDelimited));
      std::string bytes;
      PSFLOW_RETURN_IF_ERROR(stream.read_bytes(field, &bytes));
      v1::UpdateKey key;
      if (bytes.size() > 64 || !key.ParseFromString(bytes)) {
        return absl::InvalidArgumentError("ExecuteRequest.update_key is malformed");
      }
      batch.update_key = UpdateKey{key.session(), key.closure_id(), key.sequence()};
    } else {
      PSFLOW_RETURN_IF_ERROR(stream.skip_unknown(field));
    }
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(read_message(bytes, limits, "ExecuteRequest", read_field));
  if (region != nullptr) {
    // The request's size is the same whichever way its contents came: a
    // ps's max_message_bytes bounds the message and its shared contents
    // together.
    const size_t in_region = region->size() - shared.remaining;
    if (bytes.Length() + in_region > limits.max_message_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat("the ExecuteRequest is ", bytes.Length() + in_region, " bytes (", in_region,
                       " of them in shared memory), more than max_message_bytes ",
                       limits.max_message_bytes, "; split the batch, or shard the variable"));
    }
  }
  return batch;
}

size_t execute_response_size(const std::vector<Tensor>& results,
                             const std::vector<WireDType>& wire) {
  size_t size = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    size += internal::length_delimited_size(kResponseResults,
                                            encoded_size(results[i], result_wire(wire, i)));
  }
  return size;
}

grpc::ByteBuffer encode_execute_response(const std::vector<Tensor>& results,
                                         const std::vector<WireDType>& wire, SharedArena* arena) {
  ByteBufferWriter out;
  for (size_t i = 0; i < results.size(); ++i) {
    const WireDType as = result_wire(wire, i);
    const int64_t at = place(results[i], as, arena);
    std::string* bytes = out.bytes();
    internal::put_tag(bytes, kResponseResults, WireType::kLengthDelimited);
    internal::put_varint(bytes, placed_size(results[i], as, at));
    write_placed(results[i], as, at, arena, out);
  }
  return out.finish();
}

absl::StatusOr<std::vector<Tensor>> decode_execute_response(
    const grpc::ByteBuffer& bytes, const CodecLimits& limits,
    const std::vector<std::shared_ptr<TensorBuffer>>& destinations,
    const SharedMemoryRegion* region) {
  std::vector<Tensor> results;
  SharedSource shared{region, region == nullptr ? 0 : region->size()};
  DecodeBudget budget(bytes.Length() + shared.remaining, limits);
  auto read_result = [&](WireStream& stream, const WireStream::Field& field) -> absl::Status {
    if (field.number != kResponseResults) return stream.skip_unknown(field);
    PSFLOW_RETURN_IF_ERROR(
        stream.expect(field, "ExecuteResponse.results", WireType::kLengthDelimited));
    TensorProtoReader reader(limits, budget);
    reader.set_shared_source(&shared);
    if (results.size() < destinations.size()) reader.set_destination(destinations[results.size()]);
    PSFLOW_RETURN_IF_ERROR(reader.merge(stream, field));
    absl::StatusOr<Tensor> t = reader.finish();
    if (!t.ok()) return with_prefix(t.status(), absl::StrCat("result ", results.size()));
    results.push_back(*std::move(t));
    return absl::OkStatus();
  };
  PSFLOW_RETURN_IF_ERROR(read_message(bytes, limits, "ExecuteResponse", read_result));
  return results;
}

}  // namespace psflow::internal
