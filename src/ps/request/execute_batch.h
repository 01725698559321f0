// The request types of the VariableService in native form: one batch of
// variable ops with decoded tensors, its conversions to and from the wire
// form, and what each op kind carries. Shared by the ps clients and the ps
// server; nothing here touches stored state.
#ifndef PSFLOW_PS_REQUEST_EXECUTE_BATCH_H_
#define PSFLOW_PS_REQUEST_EXECUTE_BATCH_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "optimizer/optimizer.h"
#include "ps/request/update_key.h"
#include "psflow/dynamic_embedding_options.h"
#include "psflow/tensor.h"
#include "psflow/v1/variable.pb.h"
#include "psflow/wire_dtype.h"

namespace psflow::internal {

// One op of a batch with its tensors decoded: the native form of
// v1::VariableOp. An absent value or ids is an invalid (default) Tensor.
struct VariableOpArgs {
  v1::VariableOp::Kind kind = v1::VariableOp::READ;
  std::string variable;
  Tensor value;
  Tensor ids;
  // Index into ExecuteBatch::optimizers, for APPLY_*.
  int32_t optimizer = 0;
  double learning_rate = 0;
  // RESTORE: the optimizer state installed with `value`; slots[i] is the
  // slot named slot_names[i].
  std::string optimizer_name;
  int64_t optimizer_steps = 0;
  std::vector<std::string> slot_names;
  std::vector<Tensor> slots;
  // DE_LOOKUP / DE_APPLY: the caller's step (< 0: none).
  int64_t step = 0;
  // DE_CREATE: the table's definition, a serialized v1::DynamicTableConfig
  // (table_options_to_bytes).
  std::string table;
  // How float32 tensors of this op travel: `value` as sent (the ps gets it
  // back as float32), and for READ / GATHER / DE_LOOKUP the result the ps
  // answers with (VariableOp.result_dtype).
  WireDType wire_dtype = WireDType::kFloat32;
  // READ / GATHER on the client: where the result's payload should land,
  // when it is float32 of exactly this buffer's size (see
  // TensorProtoReader::set_destination); null: a fresh buffer.
  std::shared_ptr<TensorBuffer> result_buffer;
};

// The native form of v1::ExecuteRequest. Its tensors are shared, never
// copied, on the way to the ps: building one costs no payload copy, and the
// gRPC client sends the tensors' bytes straight from their buffers (so they
// must not be written to until the call completes).
struct ExecuteBatch {
  std::vector<VariableOpArgs> ops;
  std::vector<OptimizerConfig> optimizers;
  std::optional<UpdateKey> update_key;
};

// Whether `kind` changes stored state (everything but READ, GATHER and
// SNAPSHOT).
[[nodiscard]] bool is_mutating(v1::VariableOp::Kind kind);

// Whether an op of `kind` carries a value tensor, and whether it carries
// row ids.
[[nodiscard]] bool op_needs_value(v1::VariableOp::Kind kind);
[[nodiscard]] bool op_needs_ids(v1::VariableOp::Kind kind);

// `s` prefixed with the op it is about: "op 3 (ASSIGN 'w'): ...". OK stays OK.
[[nodiscard]] absl::Status with_op_context(const absl::Status& s, size_t index,
                                           v1::VariableOp::Kind kind, const std::string& variable);

// VariableOp.result_dtype (a v1::DataType value) as a WireDType: unset
// and DT_FLOAT are kFloat32, DT_BFLOAT16 kBFloat16; anything else is
// INVALID_ARGUMENT naming it.
[[nodiscard]] absl::StatusOr<WireDType> result_wire_dtype(int32_t result_dtype);
// The VariableOp.result_dtype value for `wire` (0, unset, for kFloat32).
[[nodiscard]] int32_t result_dtype_value(WireDType wire);

// v1::ExecuteRequest -> ExecuteBatch, moving payloads out of `request`.
// Decodes the tensors each op kind uses (others are ignored) and converts
// the optimizers; INVALID_ARGUMENT names the bad op or optimizer.
[[nodiscard]] absl::StatusOr<ExecuteBatch> batch_from_proto(v1::ExecuteRequest& request);
// ExecuteBatch -> v1::ExecuteRequest (copies the payloads once).
void batch_to_proto(const ExecuteBatch& batch, v1::ExecuteRequest* request);

// Conversions between DynamicEmbeddingOptions and the bytes of its wire
// form (v1::DynamicTableConfig). INVALID_ARGUMENT when the bytes do not
// parse or name an unknown optimizer; the values are checked by the table.
[[nodiscard]] std::string table_options_to_bytes(const DynamicEmbeddingOptions& options);
[[nodiscard]] absl::StatusOr<DynamicEmbeddingOptions> table_options_from_bytes(
    const std::string& bytes);

// Conversions between OptimizerConfig and its wire form.
[[nodiscard]] absl::StatusOr<OptimizerConfig> optimizer_from_proto(const v1::OptimizerProto& proto);
void optimizer_to_proto(const OptimizerConfig& config, v1::OptimizerProto* proto);

}  // namespace psflow::internal

#endif  // PSFLOW_PS_REQUEST_EXECUTE_BATCH_H_
