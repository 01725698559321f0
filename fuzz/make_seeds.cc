// Writes the binary seeds of the harnesses' corpora from psflow's own
// encoders, so that they stay valid inputs as the formats evolve:
//   fuzz_make_seeds CORPUS_DIR     (fuzz/make_seeds.sh runs it)
// Each corpus gets a few valid inputs and edge cases; the text formats'
// seeds are files in corpus/ written by hand.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/index.h"
#include "checkpoint/safetensors.h"
#include "ps/request/grpc_execute_codec.h"
#include "psflow/v1/task.pb.h"
#include "tensor/codec.h"
#include "train/event_writer.h"

namespace psflow::fuzz {
namespace {

using internal::ExecuteBatch;
using internal::VariableOpArgs;

std::string dir;

void write(const std::string& corpus, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + corpus + "/" + name, std::ios::binary);
  out << bytes;
  if (!out) {
    std::fprintf(stderr, "cannot write %s/%s/%s\n", dir.c_str(), corpus.c_str(), name.c_str());
    std::exit(1);
  }
}

std::string flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  (void)buffer.Dump(&slices);
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

Structure nested(int depth) {
  Structure s(int64_t{1});
  for (int i = 0; i < depth; ++i) s = Structure::tuple({s});
  return s;
}

void tensor_codec() {
  const Tensor matrix = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
  write("tensor_codec", "tensor_f32", std::string(1, '\0') + internal::encode_tensor(matrix));
  write("tensor_codec", "tensor_strings",
        std::string(1, '\0') + internal::encode_tensor(Tensor::from_strings({"a", "", "bc"}, {3})));
  write("tensor_codec", "tensor_empty",
        std::string(1, '\0') + internal::encode_tensor(*Tensor::create(DType::kInt64, {0, 3})));
  const Structure dict = Structure::dict(
      {{"w", Structure(matrix)},
       {"rest", Structure::list({Structure(2.5), Structure(true), Structure("s"), Structure()})}});
  write("tensor_codec", "structure_dict", std::string(1, '\1') + internal::encode_structure(dict));
  v1::TensorProto tensor_proto;
  internal::tensor_to_proto(Tensor::scalar<int32_t>(-7), &tensor_proto);
  write("tensor_codec", "proto_tensor", std::string(1, '\2') + tensor_proto.SerializeAsString());
  v1::StructureProto structure_proto;
  internal::structure_to_proto(dict, &structure_proto);
  write("tensor_codec", "proto_structure",
        std::string(1, '\3') + structure_proto.SerializeAsString());
  // Deeper than the small limits allow (selector bit 2).
  write("tensor_codec", "structure_too_deep",
        std::string(1, '\5') + internal::encode_structure(nested(6)));
}

VariableOpArgs op(v1::VariableOp::Kind kind, std::string variable, Tensor value = {},
                  Tensor ids = {}) {
  VariableOpArgs args;
  args.kind = kind;
  args.variable = std::move(variable);
  args.value = std::move(value);
  args.ids = std::move(ids);
  return args;
}

void ps_execute() {
  ExecuteBatch reads;
  reads.ops.push_back(op(v1::VariableOp::READ, "w"));
  reads.ops.push_back(
      op(v1::VariableOp::GATHER, "w", Tensor(), Tensor::from_vector<int64_t>({3, 0}, {2})));
  reads.ops.push_back(op(v1::VariableOp::SNAPSHOT, "n"));
  write("ps_execute", "reads", std::string(1, '\0') + flatten(encode_execute_request(reads)));

  ExecuteBatch updates;
  updates.ops.push_back(
      op(v1::VariableOp::ASSIGN_ADD, "n", Tensor::from_vector<int64_t>({1, 1, 1}, {3})));
  updates.ops.push_back(op(v1::VariableOp::SCATTER_ADD, "w",
                           Tensor::from_vector<float>({1, 1}, {1, 2}),
                           Tensor::from_vector<int64_t>({2}, {1})));
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  updates.optimizers.push_back(adam);
  VariableOpArgs apply = op(v1::VariableOp::APPLY_DENSE, "w",
                            Tensor::from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  apply.learning_rate = 0.1;
  updates.ops.push_back(apply);
  VariableOpArgs sparse =
      op(v1::VariableOp::APPLY_SPARSE, "w", Tensor::from_vector<float>({1, 2}, {1, 2}),
         Tensor::from_vector<int64_t>({0}, {1}));
  sparse.learning_rate = 0.1;
  updates.ops.push_back(sparse);
  updates.update_key = internal::UpdateKey{1, 2, 3};
  write("ps_execute", "updates", std::string(1, '\1') + flatten(encode_execute_request(updates)));

  ExecuteBatch lifecycle;
  lifecycle.ops.push_back(op(v1::VariableOp::CREATE, "x", Tensor::scalar(1.5f)));
  lifecycle.ops.push_back(op(v1::VariableOp::CREATE_IF_ABSENT, "w",
                             Tensor::from_vector<float>({0, 0, 0, 0, 0, 0, 0, 0}, {4, 2})));
  VariableOpArgs restore =
      op(v1::VariableOp::RESTORE, "n", Tensor::from_vector<int64_t>({9, 9, 9}, {3}));
  restore.optimizer_name = "sgd";
  lifecycle.ops.push_back(restore);
  lifecycle.ops.push_back(op(v1::VariableOp::DELETE, "x"));
  write("ps_execute", "lifecycle",
        std::string(1, '\3') + flatten(encode_execute_request(lifecycle)));

  // A dynamic table defined, its rows replaced, then exported.
  ExecuteBatch tables;
  DynamicEmbeddingOptions table;
  table.dim = 2;
  table.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
  VariableOpArgs import =
      op(v1::VariableOp::DE_IMPORT, "t", Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2}),
         Tensor::from_vector<int64_t>({5, -9}, {2}));
  import.table = internal::table_options_to_bytes(table);
  import.slot_names = {"accumulator", "last_seen"};
  import.slots = {Tensor::from_vector<float>({0.1f, 0.1f, 0.1f, 0.1f}, {2, 2}),
                  Tensor::from_vector<int64_t>({3, 4}, {2})};
  import.step = 4;
  import.optimizer_steps = 2;
  tables.ops.push_back(import);
  tables.ops.push_back(op(v1::VariableOp::DE_EXPORT, "t"));
  write("ps_execute", "tables", std::string(1, '\3') + flatten(encode_execute_request(tables)));

  write("ps_execute", "response",
        std::string(1, '\x80') + flatten(internal::encode_execute_response(
                                     {Tensor::scalar(1.0f), Tensor::from_strings({"x"}, {1})})));
}

// One request of a worker_requests session.
std::string request(uint8_t method, const std::string& bytes) {
  std::string out(1, static_cast<char>(method));
  out.push_back(static_cast<char>(bytes.size() & 0xff));
  out.push_back(static_cast<char>((bytes.size() >> 8) & 0xff));
  return out + bytes;
}

void worker_requests() {
  v1::CreateValueRequest value;
  internal::structure_to_proto(
      Structure::tuple({Structure(Tensor::from_vector<float>({1, 2}, {2})), Structure("x")}),
      value.mutable_structure());
  v1::CreateValueRequest function;
  function.set_function_name("fuzz/identity");
  v1::CreateValueRequest failing;
  failing.set_function_name("fuzz/fail");
  v1::CreateCallRequest call;
  call.mutable_function_ref()->set_id("#1");
  call.mutable_argument_ref()->set_id("#0");
  v1::ComputeRequest compute_call;
  compute_call.mutable_value_ref()->set_id("#2");
  write("worker_requests", "call",
        request(0, value.SerializeAsString()) + request(0, function.SerializeAsString()) +
            request(1, call.SerializeAsString()) + request(4, compute_call.SerializeAsString()));

  v1::CreateStructRequest structure;
  auto* a = structure.add_elements();
  a->set_name("a");
  a->mutable_value_ref()->set_id("#0");
  auto* b = structure.add_elements();
  b->set_name("b");
  b->mutable_value_ref()->set_id("#0");
  v1::CreateSelectionRequest selection;
  selection.mutable_source_ref()->set_id("#0");
  selection.set_index(1);
  v1::ComputeRequest compute_struct;
  compute_struct.mutable_value_ref()->set_id("#1");
  compute_struct.set_outline_structs(true);
  v1::ComputeRequest compute_selection;
  compute_selection.mutable_value_ref()->set_id("#2");
  v1::DisposeRequest dispose;
  dispose.add_value_refs()->set_id("#0");
  dispose.add_value_refs()->set_id("#0");
  write("worker_requests", "struct_selection",
        request(0, value.SerializeAsString()) + request(2, structure.SerializeAsString()) +
            request(3, selection.SerializeAsString()) +
            request(4, compute_struct.SerializeAsString()) +
            request(4, compute_selection.SerializeAsString()) +
            request(5, dispose.SerializeAsString()));

  v1::CreateCallRequest fail_call;
  fail_call.mutable_function_ref()->set_id("#0");
  v1::ComputeRequest compute_fail;
  compute_fail.mutable_value_ref()->set_id("#1");
  write("worker_requests", "failing_call",
        request(0, failing.SerializeAsString()) + request(1, fail_call.SerializeAsString()) +
            request(4, compute_fail.SerializeAsString()) + request(7, ""));

  v1::RunFunctionRequest run;
  run.set_closure_id(7);
  run.set_function_name("fuzz/identity");
  internal::structure_to_proto(Structure::list({Structure(int64_t{3})}), run.mutable_args());
  write("worker_requests", "run_function", request(6, run.SerializeAsString()));
  write("worker_requests", "garbage", request(0, "\xff\xff\xff") + request(4, "\x0a\x05"));
}

void safetensors() {
  namespace ckpt = internal::checkpoint;
  absl::StatusOr<std::string> two =
      ckpt::encode_safetensors({{"w", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2})},
                                {"step", Tensor::scalar<int64_t>(5)},
                                {"flags", Tensor::from_vector<uint8_t>({1, 0, 1}, {3})}},
                               {{"format", "pt"}});
  absl::StatusOr<std::string> empty = ckpt::encode_safetensors({});
  if (!two.ok() || !empty.ok()) std::exit(1);
  write("safetensors", "three_tensors", *two);
  write("safetensors", "empty", *empty);
}

void checkpoint_index() {
  namespace ckpt = internal::checkpoint;
  ckpt::CheckpointIndex index;
  index.iterations = 42;
  OptimizerConfig adam;
  adam.kind = OptimizerConfig::Kind::kAdam;
  index.optimizer = adam;
  index.files = {{"ps-0.safetensors", "ps", 0, {1234, 0xdeadbeef}},
                 {"ps-1.safetensors", "ps", 1, {99, 7}}};
  ckpt::VariableEntry w{"model/w", DType::kFloat32, {5, 2}, {}};
  w.parts.push_back({"ps",
                     0,
                     "w/part_0",
                     0,
                     {3, 2},
                     "ps-0.safetensors",
                     "model/w/part_0",
                     "adam",
                     4,
                     {{"m", "model/w/part_0/m"}, {"v", "model/w/part_0/v"}}});
  w.parts.push_back(
      {"ps", 1, "w/part_1", 3, {2, 2}, "ps-1.safetensors", "model/w/part_1", "", 0, {}});
  ckpt::VariableEntry s{"step", DType::kInt64, {}, {}};
  s.parts.push_back({"ps", 1, "step", 0, {}, "ps-1.safetensors", "step/part_0", "", 0, {}});
  index.variables = {w, s};
  write("checkpoint_index", "two_variables.json", ckpt::index_to_json(index));
  write("checkpoint_index", "empty.json", ckpt::index_to_json(ckpt::CheckpointIndex{}));
  // A dynamic embedding table over both files.
  ckpt::TableEntry table;
  table.name = "user_ids";
  table.options.dim = 2;
  table.options.seed = 7;
  table.options.optimizer.kind = OptimizerConfig::Kind::kAdagrad;
  table.options.ttl_steps = 100;
  for (int t = 0; t < 2; ++t) {
    const std::string prefix = "table/user_ids/shard_" + std::to_string(t);
    ckpt::TableShardEntry e;
    e.task = t;
    e.file = "ps-" + std::to_string(t) + ".safetensors";
    e.rows = 3 - t;
    e.clock = 12;
    e.applies = 4;
    e.keys = prefix + "/keys";
    e.values = prefix + "/values";
    e.last_seen = prefix + "/last_seen";
    e.slots = {{"accumulator", prefix + "/accumulator"}};
    table.shards.push_back(e);
  }
  index.tables = {table};
  write("checkpoint_index", "table.json", ckpt::index_to_json(index));
}

void tfrecord() {
  std::string records;
  internal::append_tfrecord("hello", &records);
  internal::append_tfrecord("", &records);
  write(
      "tfrecord", "three_records", records + [] {
        std::string one;
        internal::append_tfrecord(std::string(300, 'x'), &one);
        return one;
      }());
  std::string truncated;
  internal::append_tfrecord("truncated", &truncated);
  truncated.resize(truncated.size() - 3);
  write("tfrecord", "truncated", truncated);
}

}  // namespace
}  // namespace psflow::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR\n");
    return 2;
  }
  psflow::fuzz::dir = argv[1];
  psflow::fuzz::tensor_codec();
  psflow::fuzz::ps_execute();
  psflow::fuzz::worker_requests();
  psflow::fuzz::safetensors();
  psflow::fuzz::checkpoint_index();
  psflow::fuzz::tfrecord();
  return 0;
}
