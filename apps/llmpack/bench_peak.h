// Compute ceilings of this CPU, so prefill speeds measured on different
// machines can be compared as fractions of each machine's peak.
#pragma once

#include <string>

namespace llmpack::cli {

struct ComputePeak {
  std::string isa;      // "avx2", "avx_vnni", "avx512" or "" when the CPU has neither AVX2 nor AVX-512
  double fp32_flops = 0;  // 2 per fused multiply-add, per second, all threads
  double int8_macs = 0;   // int8 x int8 multiply-adds per second, all threads
};

// Register-blocked loops with independent accumulators (no memory traffic),
// run by `threads` threads at once for about `seconds`; best of `passes`.
// fp32: vfmadd231ps; int8: vpmaddubsw + vpmaddwd + vpaddd for AVX2 (how the
// AVX2 kernels multiply), vpdpbusd on 256-bit vectors for AVX-VNNI and on
// 512-bit ones for AVX-512 VNNI. `isa`: the kernel path's registers ("avx512",
// "avx_vnni"; anything else: AVX2), where the CPU has them.
ComputePeak measure_compute_peak(const std::string& isa, int threads, double seconds, int passes);

}  // namespace llmpack::cli
