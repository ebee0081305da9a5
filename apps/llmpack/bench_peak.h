// Compute ceilings of this CPU, so prefill speeds measured on different
// machines can be compared as fractions of each machine's peak.
#pragma once

#include <string>

namespace llmpack::cli {

struct ComputePeak {
  std::string isa;      // "avx2", "avx512" or "" when the CPU has neither
  double fp32_flops = 0;  // 2 per fused multiply-add, per second, all threads
  double int8_macs = 0;   // int8 x int8 multiply-adds per second, all threads
};

// Register-blocked loops with independent accumulators (no memory traffic),
// run by `threads` threads at once for about `seconds`; best of `passes`.
// fp32: vfmadd231ps; int8: vpmaddubsw + vpmaddwd + vpaddd for AVX2 (how the
// AVX2 kernels multiply), vpdpbusd for AVX-512 VNNI.
ComputePeak measure_compute_peak(bool avx512, int threads, double seconds, int passes);

}  // namespace llmpack::cli
