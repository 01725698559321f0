// Throughput of the tensor wire codec against plain memcpy.
//
// Every codec benchmark names its baseline in its label
// ("baseline=BM_Memcpy/<bytes>"); bench/run_benchmarks.py reports the ratio.
// BM_Memcpy copies between two warm, preallocated buffers: the ceiling for
// any path that must move the payload once. BM_MemcpyNewBuffer adds the
// fresh tensor buffer every decode needs: the floor for decode_tensor
// (large buffers come from a cache of recycled mappings in steady state).
// The BM_Proto* pair measures the generated-message path for comparison.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "psflow/tensor.h"
#include "psflow/v1/tensor.pb.h"
#include "tensor/codec.h"
#include "tensor/tensor_internal.h"

namespace psflow::internal {
namespace {

Tensor make_tensor(int64_t bytes) {
  Tensor t(DType::kFloat32, {bytes / 4});
  absl::Span<float> values = t.mutable_flat<float>();
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  return t;
}

void set_baseline(benchmark::State& state) {
  state.SetLabel(absl::StrCat("baseline=BM_Memcpy/", state.range(0)));
}

void set_bytes(benchmark::State& state) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0));
}

void BM_Memcpy(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::shared_ptr<TensorBuffer> src = TensorBuffer::allocate(bytes);
  std::shared_ptr<TensorBuffer> dst = TensorBuffer::allocate(bytes);
  std::memset(src->data(), 1, bytes);
  for (auto _ : state) {
    std::memcpy(dst->data(), src->data(), bytes);
    benchmark::DoNotOptimize(dst->data());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
}

void BM_MemcpyNewBuffer(benchmark::State& state) {
  const auto bytes = static_cast<size_t>(state.range(0));
  std::shared_ptr<TensorBuffer> src = TensorBuffer::allocate(bytes);
  std::memset(src->data(), 1, bytes);
  for (auto _ : state) {
    std::shared_ptr<TensorBuffer> dst = internal::allocate_buffer(bytes, /*zero_fill=*/false);
    std::memcpy(dst->data(), src->data(), bytes);
    benchmark::DoNotOptimize(dst->data());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
  set_baseline(state);
}

// Steady state of an RPC layer that reuses its send buffer.
void BM_EncodeTensor(benchmark::State& state) {
  const Tensor t = make_tensor(state.range(0));
  std::string out;
  for (auto _ : state) {
    out.clear();
    encode_tensor(t, &out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
  set_baseline(state);
}

// A fresh output string per call (allocation included).
void BM_EncodeTensorNewString(benchmark::State& state) {
  const Tensor t = make_tensor(state.range(0));
  for (auto _ : state) {
    std::string out = encode_tensor(t);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state);
  set_baseline(state);
}

void BM_DecodeTensor(benchmark::State& state) {
  const std::string bytes = encode_tensor(make_tensor(state.range(0)));
  for (auto _ : state) {
    absl::StatusOr<Tensor> t = decode_tensor(bytes);
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(t->raw_data());
  }
  set_bytes(state);
  set_baseline(state);
}

// The gRPC path for comparison: generated parse, then tensor_from_proto,
// which adopts the parsed content without a second copy.
void BM_ProtoParseAndAdopt(benchmark::State& state) {
  const std::string bytes = encode_tensor(make_tensor(state.range(0)));
  for (auto _ : state) {
    v1::TensorProto proto;
    if (!proto.ParseFromString(bytes)) {
      state.SkipWithError("ParseFromString failed");
      break;
    }
    absl::StatusOr<Tensor> t = tensor_from_proto(&proto);
    if (!t.ok()) {
      state.SkipWithError(std::string(t.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(t->raw_data());
  }
  set_bytes(state);
  set_baseline(state);
}

// The generated path the other way: tensor_to_proto (one copy) then
// SerializeToString (a second one).
void BM_ProtoSerialize(benchmark::State& state) {
  const Tensor t = make_tensor(state.range(0));
  std::string out;
  for (auto _ : state) {
    v1::TensorProto proto;
    tensor_to_proto(t, &proto);
    out.clear();
    proto.SerializeToString(&out);
    benchmark::DoNotOptimize(out.data());
  }
  set_bytes(state);
  set_baseline(state);
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(4 << 10)->Arg(256 << 10)->Arg(4 << 20)->Arg(64 << 20);
}

BENCHMARK(BM_Memcpy)->Apply(sizes);
BENCHMARK(BM_MemcpyNewBuffer)->Apply(sizes);
BENCHMARK(BM_EncodeTensor)->Apply(sizes);
BENCHMARK(BM_EncodeTensorNewString)->Apply(sizes);
BENCHMARK(BM_DecodeTensor)->Apply(sizes);
BENCHMARK(BM_ProtoParseAndAdopt)->Apply(sizes);
BENCHMARK(BM_ProtoSerialize)->Apply(sizes);

}  // namespace
}  // namespace psflow::internal

BENCHMARK_MAIN();
