// The rotation of kernels::rope on NEON, 4 pairs at a time: (x0, x1) ->
// (x0 c - x1 s, x0 s + x1 c) with the multiplies and the add or subtract as
// separate instructions (no fused multiply-add: aarch64 builds compile with
// -ffp-contract=off), so each result is the reference's to the bit.
// Adjacent pairs (x[2i], x[2i+1]) are split and rejoined by vld2q / vst2q.
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"

namespace llmpack::kernels::neon {
namespace {

inline void rotate4(float32x4_t x0, float32x4_t x1, float32x4_t c, float32x4_t s, float32x4_t* r0,
                    float32x4_t* r1) {
  *r0 = vsubq_f32(vmulq_f32(x0, c), vmulq_f32(x1, s));
  *r1 = vaddq_f32(vmulq_f32(x0, s), vmulq_f32(x1, c));
}

}  // namespace

void rope_rotate(float* x, const float* cos, const float* sin, int64_t half, bool adjacent) {
  int64_t i = 0;
  for (; i + 4 <= half; i += 4) {
    const float32x4_t c = vld1q_f32(cos + i), s = vld1q_f32(sin + i);
    if (adjacent) {
      float32x4x2_t pair = vld2q_f32(x + 2 * i);
      rotate4(pair.val[0], pair.val[1], c, s, &pair.val[0], &pair.val[1]);
      vst2q_f32(x + 2 * i, pair);
    } else {
      float32x4_t r0, r1;
      rotate4(vld1q_f32(x + i), vld1q_f32(x + i + half), c, s, &r0, &r1);
      vst1q_f32(x + i, r0);
      vst1q_f32(x + i + half, r1);
    }
  }
  for (; i < half; ++i) {
    const int64_t a = adjacent ? 2 * i : i;
    const int64_t b = adjacent ? 2 * i + 1 : i + half;
    const float x0 = x[a], x1 = x[b];
    x[a] = x0 * cos[i] - x1 * sin[i];
    x[b] = x0 * sin[i] + x1 * cos[i];
  }
}

}  // namespace llmpack::kernels::neon
