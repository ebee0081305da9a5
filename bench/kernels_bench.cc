// Kernel micro-benchmarks (not built by default). Build by hand against a
// Release build of the kernels layer:
//   cmake -S . -B build-rel -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLMPACK_BUILD_TESTS=OFF
//   ninja -C build-rel llmpack_kernels
//   g++ -std=c++20 -O2 -Isrc bench/kernels_bench.cc build-rel/libllmpack_kernels.a \
//       build-rel/libllmpack_core.a -lbenchmark -lpthread -o /tmp/kernels_bench
//   /tmp/kernels_bench --benchmark_filter=matmul
// Args: {dtype, n_tokens, threads}; a 2048 x 2048 matrix. Reports GFLOP/s (2*rows*cols*tokens).
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quantize.h"

namespace llmpack::kernels {
namespace {

constexpr int64_t kRows = 2048, kCols = 2048;

void bm_matmul(benchmark::State& state) {
  const auto dtype = static_cast<DType>(state.range(0));
  const int64_t n_tokens = state.range(1);
  const int threads = static_cast<int>(state.range(2));
  const bool scalar = state.range(3) != 0;
  std::mt19937 rng(1);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> wf(kRows * kCols), x(n_tokens * kCols), y(n_tokens * kRows);
  for (auto& v : wf) v = dist(rng);
  for (auto& v : x) v = dist(rng);
  const int64_t rb = row_bytes(*dtype_info(dtype), kCols);
  std::vector<uint8_t> w(rb * kRows);
  for (int64_t r = 0; r < kRows; ++r) quantize_row(dtype, wf.data() + r * kCols, kCols, w.data() + r * rb);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(dtype, kCols, n_tokens));
  ThreadPool pool(threads);
  const KernelPath saved = active_kernel_path();
  if (scalar) set_kernel_path(KernelPath::kScalar);
  const WeightMatrix m{dtype, kRows, kCols, w.data()};
  for (auto _ : state) {
    matmul(m, x.data(), n_tokens, y.data(), scratch.data(), pool);
    benchmark::DoNotOptimize(y.data());
  }
  set_kernel_path(saved);
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * kRows * kCols * n_tokens,
                                                benchmark::Counter::kIsIterationInvariantRate,
                                                benchmark::Counter::kIs1000);
  state.SetLabel(std::string(dtype_name(dtype)) + (scalar ? " scalar" : ""));
}

void matmul_args(benchmark::internal::Benchmark* b) {
  for (DType t : {DType::kF32, DType::kF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K})
    for (int64_t tokens : {1, 64})
      for (int threads : {1, 2}) b->Args({static_cast<int64_t>(t), tokens, threads, 0});
  b->Args({static_cast<int64_t>(DType::kQ4_0), 1, 1, 1});
}
BENCHMARK(bm_matmul)->Apply(matmul_args)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace llmpack::kernels

BENCHMARK_MAIN();
