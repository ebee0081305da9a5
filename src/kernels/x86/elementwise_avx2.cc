// AVX2 paths of rmsnorm, softmax, exp_weights and swiglu (attention: attention_cache_avx2.cc).
// Tails (n not a multiple of 8) run the same math one element at a time.
#include <math.h>

#include "kernels/x86/avx2.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

float dot(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8)
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  const float sum_sq = dot(x, x, n);
  const float inv = 1.0f / sqrtf(sum_sq / static_cast<float>(n > 0 ? n : 1) + eps);
  const __m256 iv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), iv);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
  }
  for (; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  __m256 mv = _mm256_set1_ps(x[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
  float max_v = hmax(mv);
  for (; i < n; ++i) max_v = fmaxf(max_v, x[i]);
  const __m256 mb = _mm256_set1_ps(max_v);
  __m256 sv = _mm256_setzero_ps();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), mb));
    _mm256_storeu_ps(x + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = hsum(sv);
  for (; i < n; ++i) {
    x[i] = expf(x[i] - max_v);
    sum += x[i];
  }
  const float inv = 1.0f / sum;
  const __m256 iv = _mm256_set1_ps(inv);
  for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), iv));
  for (; i < n; ++i) x[i] *= inv;
}

// Two passes (a vocabulary's 600 KB stays in L2): the products, stored so
// that each is rounded to float (the compiler may not fuse it into the
// subtraction), and their max; then the weights, summed in double four
// lanes at a time.
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n) {
  const __m256 sv = _mm256_set1_ps(scale);
  __m256 mv = _mm256_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + i), sv);
    _mm256_storeu_ps(out + i, p);
    mv = _mm256_max_ps(mv, p);
  }
  ExpWeights w{hmax(mv), 0.0};
  for (; i < n; ++i) w.max = fmaxf(w.max, out[i] = x[i] * scale);
  if (!isfinite(w.max)) return w;
  const __m256 mb = _mm256_set1_ps(w.max);
  const __m256 floor = _mm256_set1_ps(kExpWeightFloor);
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
  for (i = 0; i + 8 <= n; i += 8) {
    const __m256 a = _mm256_sub_ps(_mm256_loadu_ps(out + i), mb);
    const __m256 e = _mm256_andnot_ps(_mm256_cmp_ps(a, floor, _CMP_LT_OQ), exp256(a));
    _mm256_storeu_ps(out + i, e);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
  w.sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) {
    const float a = out[i] - w.max;
    out[i] = a < kExpWeightFloor ? 0.0f : expf(a);
    w.sum += out[i];
  }
  return w;
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 den = _mm256_add_ps(one, exp256(_mm256_sub_ps(zero, g)));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, den), _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

}  // namespace llmpack::kernels::avx2
