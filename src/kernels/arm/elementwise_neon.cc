// rmsnorm, softmax, exp_weights, swiglu and f32-cache attention on NEON, 4
// floats a lane group with scalar tails; exp is a vector polynomial (about
// 2 ulp).
#include <algorithm>
#include <cmath>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"

namespace llmpack::kernels::neon {
namespace {

float exp1(float x) { return vgetq_lane_f32(exp4(vdupq_n_f32(x)), 0); }

}  // namespace

float dot_f32(const float* a, const float* b, int64_t n) {
  float32x4_t s0 = vdupq_n_f32(0.0f), s1 = vdupq_n_f32(0.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
  }
  float s = vaddvq_f32(vaddq_f32(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  const float sum_sq = dot_f32(x, x, n);
  const float mean = n > 0 ? sum_sq / static_cast<float>(n) : 0.0f;
  const float inv = 1.0f / std::sqrt(mean + eps);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    vst1q_f32(out + i, vmulq_f32(vmulq_n_f32(vld1q_f32(x + i), inv), vld1q_f32(weight + i)));
  for (; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max_v = x[0];
  int64_t i = 0;
  if (n >= 4) {
    float32x4_t m = vld1q_f32(x);
    for (i = 4; i + 4 <= n; i += 4) m = vmaxq_f32(m, vld1q_f32(x + i));
    max_v = vmaxvq_f32(m);
  }
  for (; i < n; ++i) max_v = std::fmax(max_v, x[i]);
  float32x4_t sum4 = vdupq_n_f32(0.0f);
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t e = exp4(vsubq_f32(vld1q_f32(x + i), vdupq_n_f32(max_v)));
    vst1q_f32(x + i, e);
    sum4 = vaddq_f32(sum4, e);
  }
  float sum = vaddvq_f32(sum4);
  for (; i < n; ++i) {
    x[i] = exp1(x[i] - max_v);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  for (i = 0; i + 4 <= n; i += 4) vst1q_f32(x + i, vmulq_n_f32(vld1q_f32(x + i), inv));
  for (; i < n; ++i) x[i] *= inv;
}

// Two passes, as on AVX2: the products (stored, each rounded to float) and
// their max, then the weights, summed in double two lanes at a time.
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n) {
  float32x4_t mv = vdupq_n_f32(-INFINITY);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t p = vmulq_n_f32(vld1q_f32(x + i), scale);
    vst1q_f32(out + i, p);
    mv = vmaxq_f32(mv, p);
  }
  ExpWeights w{vmaxvq_f32(mv), 0.0};
  for (; i < n; ++i) w.max = std::fmax(w.max, out[i] = x[i] * scale);
  if (!std::isfinite(w.max)) return w;
  const float32x4_t mb = vdupq_n_f32(w.max);
  const float32x4_t floor = vdupq_n_f32(kExpWeightFloor);
  float64x2_t s0 = vdupq_n_f64(0.0), s1 = vdupq_n_f64(0.0);
  for (i = 0; i + 4 <= n; i += 4) {
    const float32x4_t a = vsubq_f32(vld1q_f32(out + i), mb);
    const uint32x4_t kept = vcgeq_f32(a, floor);
    const float32x4_t e = vreinterpretq_f32_u32(vandq_u32(kept, vreinterpretq_u32_f32(exp4(a))));
    vst1q_f32(out + i, e);
    s0 = vaddq_f64(s0, vcvt_f64_f32(vget_low_f32(e)));
    s1 = vaddq_f64(s1, vcvt_high_f64_f32(e));
  }
  w.sum = vaddvq_f64(vaddq_f64(s0, s1));
  for (; i < n; ++i) {
    const float a = out[i] - w.max;
    out[i] = a < kExpWeightFloor ? 0.0f : std::exp(a);
    w.sum += out[i];
  }
  return w;
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
  const float32x4_t one = vdupq_n_f32(1.0f);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float32x4_t g = vld1q_f32(gate + i);
    const float32x4_t silu = vdivq_f32(g, vaddq_f32(one, exp4(vnegq_f32(g))));
    vst1q_f32(out + i, vmulq_f32(silu, vld1q_f32(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + exp1(-gate[i])) * up[i];
}

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  for (int64_t j = 0; j < n_ctx; ++j) scores[j] = dot_f32(q, k + j * kv_stride, head_dim) * scale;
  softmax(scores, n_ctx);
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* vj = v + j * kv_stride;
    const float p = scores[j];
    int64_t d = 0;
    for (; d + 4 <= head_dim; d += 4) vst1q_f32(out + d, vfmaq_n_f32(vld1q_f32(out + d), vld1q_f32(vj + d), p));
    for (; d < head_dim; ++d) out[d] += p * vj[d];
  }
}

}  // namespace llmpack::kernels::neon
