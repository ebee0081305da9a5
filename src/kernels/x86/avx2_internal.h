// Per-family AVX2 matmul entry points, combined by x86/matmul_avx2.cc.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace llmpack::kernels::avx2 {

// One 32-element block of activations quantized to int8: x[i] ~ q[i] * d,
// qsum = sum of q (for the min terms of Q4_0 / Q4_K / Q8_0 packs), qsum_lo =
// sum of q[0..15] (Q6_K's 16-element sub-blocks).
struct ActBlock {
  float d;
  int32_t qsum;
  int32_t qsum_lo;
  int32_t pad;  // keeps q 16-byte aligned in the scratch array
  int8_t q[32];
};
static_assert(sizeof(ActBlock) == 48);

// Per-token float arrays after the ActBlocks (every quantized matmul), for
// vector loads where decode needs several blocks' values at once; token t's
// start at act_floats(...) + t * kActFloatsPerBlock * n_sub:
//   [b]              d of block b
//   [n_sub + b]      d * qsum (the offset and min terms)
//   [2 n_sub + 2b]   d * qsum_lo, and at + 1 d * (qsum - qsum_lo): the sums of
//                    elements 0..15 and 16..31 (Q6_K's 16-element scales)
constexpr int64_t kActFloatsPerBlock = 4;
inline float* act_floats(ActBlock* act, int64_t n_tokens, int64_t n_sub) {
  return reinterpret_cast<float*>(act + n_tokens * n_sub);
}
inline const float* act_floats(const ActBlock* act, int64_t n_tokens, int64_t n_sub) {
  return reinterpret_cast<const float*>(act + n_tokens * n_sub);
}

// Quantizes one token's activations x[cols] (cols a multiple of 32) into
// out[cols / 32].
void quantize_activations(const float* x, int64_t cols, ActBlock* out);

// Q8_0, Q4_0, Q4_K and Q6_K weights against activations quantized by
// quantize_activations: act[t * (w.cols / 32) + b].
void matmul_rows_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

// Prefill path of matmul_rows_quant for Q4_0, Q8_0, Q4_K and Q6_K: rows packed 8 at a
// time into row-interleaved panels on the stack, tiles of 8 rows x 4 tokens.
bool packed_supports(DType dtype);
void matmul_rows_packed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                        int64_t row_begin, int64_t row_end);
// Fewest tokens for which packing pays off (below it rows stream, as in decode).
constexpr int64_t kPackedMinTokens = 4;

// F32, F16 and BF16 weights: register-blocked tiles of 4 rows x up to 3 tokens.
void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

}  // namespace llmpack::kernels::avx2
