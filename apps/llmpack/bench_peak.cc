#include "bench_peak.h"

#include "kernels/kernels.h"

#if defined(__x86_64__) || defined(__i386__)
#define LLMPACK_PEAK_X86 1
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace llmpack::cli {
#if defined(LLMPACK_PEAK_X86)
namespace {

constexpr int kAcc = 12;           // independent accumulators: covers FMA latency x 2 pipes
constexpr int64_t kIters = 1 << 20;  // inner iterations between clock reads

// Each returns a value derived from every accumulator so nothing is dead code.
__attribute__((target("avx2,fma"))) float fma_loop_avx2(int64_t iters) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(0.001f * static_cast<float>(i));
  const __m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(acc[i], m, c);
  __m256 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_ps(s, acc[i]);
  return _mm256_cvtss_f32(s);
}

__attribute__((target("avx512f,avx512dq"))) float fma_loop_avx512(int64_t iters) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(0.001f * static_cast<float>(i));
  const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-6f);
  for (int64_t it = 0; it < iters; ++it)
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(acc[i], m, c);
  __m512 s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm512_add_ps(s, acc[i]);
  // halves added by hand: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized in its own header
  const __m256 h = _mm256_add_ps(_mm512_extractf32x8_ps(s, 0), _mm512_extractf32x8_ps(s, 1));
  __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  q = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
}

// 32 int8 multiply-adds per vpmaddubsw (+ vpmaddwd into int32, + vpaddd).
__attribute__((target("avx2"))) float int8_loop_avx2(int64_t iters) {
  __m256i acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i w = _mm256_set1_epi8(3), ones = _mm256_set1_epi16(1);
  __m256i a = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i)
      acc[i] = _mm256_add_epi32(acc[i], _mm256_madd_epi16(_mm256_maddubs_epi16(w, a), ones));
    a = _mm256_xor_si256(a, w);  // keeps the compiler from hoisting the products
  }
  __m256i s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_add_epi32(s, acc[i]);
  return static_cast<float>(_mm256_extract_epi32(s, 0));
}

// 32 int8 multiply-adds per vpdpbusd on 256-bit vectors (AVX-VNNI).
__attribute__((target("avx2,avxvnni"))) float int8_loop_avx_vnni(int64_t iters) {
  __m256i acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_epi32(i);
  const __m256i w = _mm256_set1_epi8(3);
  __m256i a = _mm256_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], w, a);
    a = _mm256_xor_si256(a, w);  // keeps the compiler from hoisting the products
  }
  __m256i s = acc[0];
  for (int i = 1; i < kAcc; ++i) s = _mm256_xor_si256(s, acc[i]);
  return static_cast<float>(_mm256_extract_epi32(s, 0));
}

// 64 int8 multiply-adds per vpdpbusd.
__attribute__((target("avx512f,avx512vnni"))) float int8_loop_avx512(int64_t iters) {
  __m512i acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_epi32(i);
  const __m512i w = _mm512_set1_epi8(3);
  __m512i a = _mm512_set1_epi8(-2);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], w, a);
    a = _mm512_xor_si512(a, w);
  }
  __m512i s = acc[0];  // the sums wrap: combine and read them without int arithmetic
  for (int i = 1; i < kAcc; ++i) s = _mm512_xor_si512(s, acc[i]);
  alignas(64) int32_t lanes[16];
  _mm512_store_si512(lanes, s);
  return static_cast<float>(lanes[0]);
}

// Runs `loop` on `threads` threads at once; returns operations per second,
// where one loop iteration performs `ops_per_iter` operations.
template <class Loop>
double run_parallel(Loop loop, double ops_per_iter, int threads, double seconds, int passes) {
  // Calibrate iterations to about `seconds` on one thread.
  int64_t iters = kIters / 16;
  for (;;) {
    const auto t0 = std::chrono::steady_clock::now();
    volatile float sink = loop(iters);
    (void)sink;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s >= seconds / 4 || iters >= (int64_t{1} << 40)) {
      iters = static_cast<int64_t>(static_cast<double>(iters) * seconds / std::max(s, 1e-9));
      break;
    }
    iters *= 4;
  }
  double best = 0;
  for (int pass = 0; pass < passes; ++pass) {
    std::vector<std::thread> workers;
    std::vector<float> sinks(static_cast<size_t>(threads));
    const auto t0 = std::chrono::steady_clock::now();
    for (int t = 0; t < threads; ++t) workers.emplace_back([&, t] { sinks[t] = loop(iters); });
    for (auto& w : workers) w.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    volatile float sink = 0;
    for (float v : sinks) sink = sink + v;
    best = std::max(best, ops_per_iter * static_cast<double>(iters) * threads / s);
  }
  return best;
}

}  // namespace

ComputePeak measure_compute_peak(const std::string& isa, int threads, double seconds, int passes) {
  ComputePeak peak;
  threads = std::max(1, threads);
  const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool has_avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni");
  if (isa == "avx512" && has_avx512) {
    peak.isa = "avx512";
    peak.fp32_flops = run_parallel(fma_loop_avx512, 2.0 * 16 * kAcc, threads, seconds, passes);
    peak.int8_macs = run_parallel(int8_loop_avx512, 64.0 * kAcc, threads, seconds, passes);
  } else if (isa == "avx_vnni" && has_avx2 && kernels::cpu_supports(kernels::KernelPath::kAvxVnni)) {
    peak.isa = "avx_vnni";
    peak.fp32_flops = run_parallel(fma_loop_avx2, 2.0 * 8 * kAcc, threads, seconds, passes);
    peak.int8_macs = run_parallel(int8_loop_avx_vnni, 32.0 * kAcc, threads, seconds, passes);
  } else if (has_avx2) {
    peak.isa = "avx2";
    peak.fp32_flops = run_parallel(fma_loop_avx2, 2.0 * 8 * kAcc, threads, seconds, passes);
    peak.int8_macs = run_parallel(int8_loop_avx2, 32.0 * kAcc, threads, seconds, passes);
  }
  return peak;
}

#else  // no x86 loops: the peak is not measured on this CPU (isa stays "")

ComputePeak measure_compute_peak(const std::string&, int, double, int) { return {}; }

#endif

}  // namespace llmpack::cli
