// Shared pieces of the NEON kernel files (arm/*_neon.cc).
#pragma once

#include <arm_neon.h>

#include <cstdint>

#include "kernels/kernels.h"

namespace llmpack::kernels::neon {

// One 32-element block of activations quantized to int8: x[i] ~ q[i] * d
// (d = max|x| / 127, round to nearest), qsum = sum of q (the offset and min
// terms of Q4_1, Q5_1, Q4_K, Q5_K), qsum_lo = sum of q[0..15] (Q2_K's
// 16-element mins).
struct ActBlock {
  float d;
  int32_t qsum;
  int32_t qsum_lo;
  int8_t q[32];
};
static_assert(sizeof(ActBlock) == 44);

// Tokens whose products share one unpacking of a weight block (prefill reuses
// each block across this many tokens; decode has 1 to 3).
constexpr int kTokenTile = 4;

// Products of rows [row_begin, row_end) with block-quantized weights
// (matmul_quant_neon.cc) and with float weights (matmul_float_neon.cc).
void quant_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end);
void float_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end);

// The products of int8 vectors w and x, lanes i and i + 8 summed: 8 int16
// sums of two products each (|w| <= 128, |x| <= 127 keeps them in range).
inline int16x8_t mul_pairs(int8x16_t w, int8x16_t x) {
  return vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x);
}

// sum_i w[i] * x[i] over 32 int8 pairs (w = w0 then w1), as 4 int32 lanes.
inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  return vpadalq_s16(vpaddlq_s16(mul_pairs(w0, vld1q_s8(x))), mul_pairs(w1, vld1q_s8(x + 16)));
}

}  // namespace llmpack::kernels::neon
