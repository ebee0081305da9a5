// Block-quantized weights on AArch64 CPUs with the int8 matrix multiply
// (FEAT_I8MM: Cortex-A510/A710/X2 and later, Neoverse V1/N2 and later) and the
// dot product: decode and 1-3 token products as matmul_quant_dotprod_neon.cc
// (sdot), prefill on the 4-row panels of arm/quant_panels_neon.h laid out in
// row pairs, where one smmla (vmmlaq_s32) multiplies 2 rows by 2 tokens over 8
// elements: 32 products an instruction where an indexed sdot gives 16. This
// file is compiled with -march=armv8.2-a+dotprod+i8mm (CMakeLists.txt);
// dispatch calls it only where the CPU reports both extensions and the
// neon_i8mm path was asked for (it is not the default: unmeasured on hardware).
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/arm/sdot_neon.h"

#if !defined(__ARM_FEATURE_MATMUL_INT8)
#error "matmul_quant_i8mm_neon.cc needs -march=armv8.2-a+dotprod+i8mm (CMakeLists.txt sets it)"
#endif

#include "kernels/arm/quant_panels_neon.h"
#include "kernels/arm/quant_rows_neon.h"

namespace llmpack::kernels::neon {
namespace {

// Rows 0..3 x tokens 0..NT-1 of a panel in smmla's order: acc[R][P] holds
// [row 2R token 2P, row 2R token 2P + 1, row 2R + 1 token 2P, row 2R + 1
// token 2P + 1]. A unit's 8 element groups: q[4R + g] against the two
// tokens' bytes 8g..8g+7 side by side (a 64-bit zip of their activation
// vectors). Scales: the rows' [s_2R s_2R s_2R+1 s_2R+1] (a zip of the panel's
// vector with itself) times the tokens' [d_2P d_2P+1 d_2P d_2P+1]. An odd
// last token pairs with itself and its copy's sums are dropped.
struct SmmlaPanels {
  static constexpr bool kPairs = true;

  template <class Src, int NT>
  static void tile(const PanelUnit* panel, int64_t n_units, const ActBlock* const* act, float32x4_t* acc_io) {
    constexpr int NP = (NT + 1) / 2;
    const ActBlock* tokens[2 * NP];
    for (int t = 0; t < 2 * NP; ++t) tokens[t] = act[t < NT ? t : NT - 1];
    float32x4_t acc[2][NP];
#pragma GCC unroll 2
    for (int pr = 0; pr < NP; ++pr) {
      const float32x4_t t0 = acc_io[2 * pr], t1 = 2 * pr + 1 < NT ? acc_io[2 * pr + 1] : vdupq_n_f32(0.0f);
      acc[0][pr] = vzip1q_f32(t0, t1), acc[1][pr] = vzip2q_f32(t0, t1);
    }
    for (int64_t k = 0; k < n_units; ++k) {
      const PanelUnit& p = panel[k];
      int8x16_t q[8];
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) q[g] = p.q[g];
      const float32x4_t s0[2] = {vzip1q_f32(p.s0, p.s0), vzip2q_f32(p.s0, p.s0)};
#pragma GCC unroll 2
      for (int pr = 0; pr < NP; ++pr) {
        const ActBlock &a = tokens[2 * pr][k], &b = tokens[2 * pr + 1][k];
        const int64x2_t a0 = vreinterpretq_s64_s8(vld1q_s8(a.q)), a1 = vreinterpretq_s64_s8(vld1q_s8(a.q + 16));
        const int64x2_t b0 = vreinterpretq_s64_s8(vld1q_s8(b.q)), b1 = vreinterpretq_s64_s8(vld1q_s8(b.q + 16));
        const int8x16_t x[4] = {vreinterpretq_s8_s64(vzip1q_s64(a0, b0)), vreinterpretq_s8_s64(vzip2q_s64(a0, b0)),
                                vreinterpretq_s8_s64(vzip1q_s64(a1, b1)), vreinterpretq_s8_s64(vzip2q_s64(a1, b1))};
        const float32x2_t d2 = vld1_lane_f32(&b.d, vld1_dup_f32(&a.d), 1);
        const float32x4_t d = vcombine_f32(d2, d2);
#pragma GCC unroll 2
        for (int r = 0; r < 2; ++r) {
          const int32x4_t lo = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), q[4 * r], x[0]), q[4 * r + 1], x[1]);
          const int32x4_t hi = vmmlaq_s32(vmmlaq_s32(vdupq_n_s32(0), q[4 * r + 2], x[2]), q[4 * r + 3], x[3]);
          if constexpr (Src::kHalfScales) {
            const float32x4_t s1 = r == 0 ? vzip1q_f32(p.s1, p.s1) : vzip2q_f32(p.s1, p.s1);
            acc[r][pr] = vfmaq_f32(acc[r][pr], vcvtq_f32_s32(lo), vmulq_f32(s0[r], d));
            acc[r][pr] = vfmaq_f32(acc[r][pr], vcvtq_f32_s32(hi), vmulq_f32(s1, d));
          } else {
            acc[r][pr] = vfmaq_f32(acc[r][pr], vcvtq_f32_s32(vaddq_s32(lo, hi)), vmulq_f32(s0[r], d));
          }
          if constexpr (Src::kMins > 0) {
            const float32x4_t m0 = r == 0 ? vzip1q_f32(p.m0, p.m0) : vzip2q_f32(p.m0, p.m0);
            const float sa = static_cast<float>(Src::kMins == 1 ? a.qsum : a.qsum_lo);
            const float sb = static_cast<float>(Src::kMins == 1 ? b.qsum : b.qsum_lo);
            const float32x2_t q2 = vmul_f32(d2, float32x2_t{sa, sb});
            acc[r][pr] = vfmaq_f32(acc[r][pr], m0, vcombine_f32(q2, q2));
            if constexpr (Src::kMins == 2) {  // the second half's min against the second half's sums
              const float32x4_t m1 = r == 0 ? vzip1q_f32(p.m1, p.m1) : vzip2q_f32(p.m1, p.m1);
              const float32x2_t h2 = vmul_f32(d2, float32x2_t{static_cast<float>(a.qsum - a.qsum_lo),
                                                              static_cast<float>(b.qsum - b.qsum_lo)});
              acc[r][pr] = vfmaq_f32(acc[r][pr], m1, vcombine_f32(h2, h2));
            }
          }
        }
      }
    }
#pragma GCC unroll 2
    for (int pr = 0; pr < NP; ++pr) {
      acc_io[2 * pr] = vuzp1q_f32(acc[0][pr], acc[1][pr]);
      if (2 * pr + 1 < NT) acc_io[2 * pr + 1] = vuzp2q_f32(acc[0][pr], acc[1][pr]);
    }
  }
};

}  // namespace

void quant_rows_i8mm(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                     int64_t row_end) {
  if (n_tokens >= kTokenTile) return panel_rows_of_quant<SmmlaPanels>(w, act, n_tokens, y, row_begin, row_end);
  rows_of_quant(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
