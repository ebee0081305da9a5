// AVX2 paths of rmsnorm, softmax, swiglu and attention_head. Tails (n not a
// multiple of 8) run the same math one element at a time.
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

// out[i] += a * x[i]
void axpy(float a, const float* x, float* out, int64_t n) {
  const __m256 av = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(out + i)));
  for (; i < n; ++i) out[i] += a * x[i];
}

// scores[j] = scale * q . k_j for 4 keys at once (head_dim % 8 == 0): q is
// loaded once per 4 keys and the 4 sums reduce together with two hadds.
void scores4(const float* q, const float* k, int64_t kv_stride, int64_t head_dim, float scale,
             float* scores) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t i = 0; i < head_dim; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + i), a0);
    a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + kv_stride + i), a1);
    a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 2 * kv_stride + i), a2);
    a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 3 * kv_stride + i), a3);
  }
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  _mm_storeu_ps(scores, _mm_mul_ps(s4, _mm_set1_ps(scale)));
}

// out[0..32) = sum_j p_j v_j[0..32) with the 32 outputs held in registers.
void weighted_sum32(const float* p, const float* v, int64_t kv_stride, int64_t n_ctx, float* out) {
  __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
  for (int64_t j = 0; j < n_ctx; ++j, v += kv_stride) {
    const __m256 pj = _mm256_broadcast_ss(p + j);
    o0 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v), o0);
    o1 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 8), o1);
    o2 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 16), o2);
    o3 = _mm256_fmadd_ps(pj, _mm256_loadu_ps(v + 24), o3);
  }
  _mm256_storeu_ps(out, o0);
  _mm256_storeu_ps(out + 8, o1);
  _mm256_storeu_ps(out + 16, o2);
  _mm256_storeu_ps(out + 24, o3);
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

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  int64_t j = 0;
  if (head_dim % 8 == 0)
    for (; j + 4 <= n_ctx; j += 4) scores4(q, k + j * kv_stride, kv_stride, head_dim, scale, scores + j);
  for (; j < n_ctx; ++j) scores[j] = dot(q, k + j * kv_stride, head_dim) * scale;
  softmax(scores, n_ctx);
  int64_t d = 0;
  for (; d + 32 <= head_dim; d += 32) weighted_sum32(scores, v + d, kv_stride, n_ctx, out + d);
  for (int64_t i = d; i < head_dim; ++i) out[i] = 0.0f;
  if (d < head_dim)
    for (j = 0; j < n_ctx; ++j) axpy(scores[j], v + j * kv_stride + d, out + d, head_dim - d);
}

}  // namespace llmpack::kernels::avx2
