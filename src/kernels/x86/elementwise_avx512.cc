// AVX-512 exp_weights: the sampler's weights of a vocabulary, 16 a step (the
// AVX2 path's two passes, on zmm; its exp polynomial is exp512's).
#include <math.h>

#include "kernels/x86/avx512.h"
#include "kernels/x86/exp512.h"

namespace llmpack::kernels::avx512 {

// Pass 1 stores the products x * scale (rounded to float, so that no FMA
// fuses them into pass 2's subtraction: the largest weight is then exactly
// 1, as on every path) and takes their max; pass 2 writes the weights, those
// of exponents below kExpWeightFloor as 0, and sums them in double, eight
// lanes in each of two accumulators.
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n) {
  const __m512 sv = _mm512_set1_ps(scale);
  __m512 mv = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 p = _mm512_mul_ps(_mm512_loadu_ps(x + i), sv);
    _mm512_storeu_ps(out + i, p);
    mv = _mm512_max_ps(mv, p);
  }
  // lanes through memory: GCC 12's reduce intrinsics pass an undefined vector
  // that its own headers then report as used uninitialized
  alignas(64) float max_lanes[16];
  _mm512_store_ps(max_lanes, mv);
  ExpWeights w{-INFINITY, 0.0};
  for (float m : max_lanes) w.max = fmaxf(w.max, m);
  for (; i < n; ++i) w.max = fmaxf(w.max, out[i] = x[i] * scale);
  if (!isfinite(w.max)) return w;
  const __m512 mb = _mm512_set1_ps(w.max);
  const __m512 floor = _mm512_set1_ps(kExpWeightFloor);
  __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
  for (i = 0; i + 16 <= n; i += 16) {
    const __m512 a = _mm512_sub_ps(_mm512_loadu_ps(out + i), mb);
    const __mmask16 kept = _mm512_cmp_ps_mask(a, floor, _CMP_GE_OQ);
    const __m512 e = _mm512_maskz_mov_ps(kept, exp512(a));
    _mm512_storeu_ps(out + i, e);
    s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  alignas(64) double sum_lanes[8];
  _mm512_store_pd(sum_lanes, _mm512_add_pd(s0, s1));
  w.sum = ((sum_lanes[0] + sum_lanes[1]) + (sum_lanes[2] + sum_lanes[3])) +
          ((sum_lanes[4] + sum_lanes[5]) + (sum_lanes[6] + sum_lanes[7]));
  for (; i < n; ++i) {
    const float a = out[i] - w.max;
    out[i] = a < kExpWeightFloor ? 0.0f : expf(a);
    w.sum += out[i];
  }
  return w;
}

}  // namespace llmpack::kernels::avx512
