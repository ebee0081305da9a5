// AVX2 attention of one head over the KV cache's f32, f16 and q8_0 rows,
// read in place (kernels.h). Scores of 4 keys per pass (q loaded once per 4
// keys), softmax, then the value sum with 32 outputs held in registers while
// every row streams past once. f32 and f16 rows share that code through an
// element loader (f16 through F16C, 8 halves per vcvtph2ps); q8_0 blocks are
// widened int8 -> f32 and scaled per block, so the result matches attention
// on the dequantized rows to float rounding (no requantization of q or p).
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

constexpr int64_t kBlockBytes = sizeof(BlockQ8_0);  // 34: f16 d, then 32 int8
constexpr int64_t kQsOffset = offsetof(BlockQ8_0, qs);

const uint8_t* row_at(const void* base, int64_t row_stride_bytes, int64_t j) {
  return static_cast<const uint8_t*>(base) + j * row_stride_bytes;
}

// ---- f32 and f16 rows: one kernel, two element loaders -----------------------

struct F32Rows {
  static constexpr int64_t kBytes = 4;
  static __m256 load8(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
  static float load1(const uint8_t* p) {
    float f;
    std::memcpy(&f, p, 4);
    return f;
  }
};

struct F16Rows {
  static constexpr int64_t kBytes = 2;
  static __m256 load8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float load1(const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
};

// sum_i q[i] * row[i] over i in [from, n), one element at a time (tails < 8).
template <class E>
float dot_tail(const float* q, const uint8_t* row, int64_t from, int64_t n) {
  float s = 0.0f;
  for (int64_t i = from; i < n; ++i) s += q[i] * E::load1(row + E::kBytes * i);
  return s;
}

// scores[0..4) = scale * q . k_r for 4 rows; the 8-wide part reduces with two
// hadds, the (head_dim % 8) tail is added one element at a time.
template <class E>
void scores4(const float* q, const uint8_t* k, int64_t stride, int64_t head_dim, float scale, float* scores) {
  const uint8_t *k0 = k, *k1 = k + stride, *k2 = k + 2 * stride, *k3 = k + 3 * stride;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  const int64_t n8 = head_dim & ~int64_t{7};
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    const int64_t at = E::kBytes * i;
    a0 = _mm256_fmadd_ps(qv, E::load8(k0 + at), a0);
    a1 = _mm256_fmadd_ps(qv, E::load8(k1 + at), a1);
    a2 = _mm256_fmadd_ps(qv, E::load8(k2 + at), a2);
    a3 = _mm256_fmadd_ps(qv, E::load8(k3 + at), a3);
  }
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  if (n8 < head_dim)
    s4 = _mm_add_ps(s4, _mm_setr_ps(dot_tail<E>(q, k0, n8, head_dim), dot_tail<E>(q, k1, n8, head_dim),
                                    dot_tail<E>(q, k2, n8, head_dim), dot_tail<E>(q, k3, n8, head_dim)));
  _mm_storeu_ps(scores, _mm_mul_ps(s4, _mm_set1_ps(scale)));
}

template <class E>
float score1(const float* q, const uint8_t* k, int64_t head_dim, float scale) {
  __m256 a = _mm256_setzero_ps();
  const int64_t n8 = head_dim & ~int64_t{7};
  for (int64_t i = 0; i < n8; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), E::load8(k + E::kBytes * i), a);
  return (hsum(a) + dot_tail<E>(q, k, n8, head_dim)) * scale;
}

// out[0..32) = sum_j p_j v_j[d..d+32) (v points at element d of row 0), the 32
// sums held in registers while every row streams past once.
template <class E>
void values32(const float* p, const uint8_t* v, int64_t stride, int64_t n_ctx, float* out) {
  __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
  for (int64_t j = 0; j < n_ctx; ++j, v += stride) {
    const __m256 pj = _mm256_broadcast_ss(p + j);
    o0 = _mm256_fmadd_ps(pj, E::load8(v), o0);
    o1 = _mm256_fmadd_ps(pj, E::load8(v + 8 * E::kBytes), o1);
    o2 = _mm256_fmadd_ps(pj, E::load8(v + 16 * E::kBytes), o2);
    o3 = _mm256_fmadd_ps(pj, E::load8(v + 24 * E::kBytes), o3);
  }
  _mm256_storeu_ps(out, o0);
  _mm256_storeu_ps(out + 8, o1);
  _mm256_storeu_ps(out + 16, o2);
  _mm256_storeu_ps(out + 24, o3);
}

template <class E>
void values8(const float* p, const uint8_t* v, int64_t stride, int64_t n_ctx, float* out) {
  __m256 o = _mm256_setzero_ps();
  for (int64_t j = 0; j < n_ctx; ++j, v += stride) o = _mm256_fmadd_ps(_mm256_broadcast_ss(p + j), E::load8(v), o);
  _mm256_storeu_ps(out, o);
}

// Attention of one head over rows `stride` bytes apart (k, v: the head's
// first element in row 0).
template <class E>
void attention_rows(const float* q, const uint8_t* k, const uint8_t* v, int64_t stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  int64_t j = 0;
  for (; j + 4 <= n_ctx; j += 4) scores4<E>(q, k + j * stride, stride, head_dim, scale, scores + j);
  for (; j < n_ctx; ++j) scores[j] = score1<E>(q, k + j * stride, head_dim, scale);
  softmax(scores, n_ctx);
  int64_t d = 0;
  for (; d + 32 <= head_dim; d += 32) values32<E>(scores, v + E::kBytes * d, stride, n_ctx, out + d);
  for (; d + 8 <= head_dim; d += 8) values8<E>(scores, v + E::kBytes * d, stride, n_ctx, out + d);
  for (; d < head_dim; ++d) {
    float acc = 0.0f;
    for (j = 0; j < n_ctx; ++j) acc += scores[j] * E::load1(v + j * stride + E::kBytes * d);
    out[d] = acc;
  }
}

// ---- q8_0 -----------------------------------------------------------------

float block_scale(const uint8_t* block) { return F16Rows::load1(block); }

// 8 int8 at p widened to f32 (reads exactly 8 bytes).
__m256 load8_i8(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// sum_i q[i] * qs[i] over one whole block (32 elements, q[32]).
__m256 block_dot(const __m256 q[4], const uint8_t* block) {
  const uint8_t* qs = block + kQsOffset;
  __m256 s = _mm256_mul_ps(q[0], load8_i8(qs));
  s = _mm256_fmadd_ps(q[1], load8_i8(qs + 8), s);
  s = _mm256_fmadd_ps(q[2], load8_i8(qs + 16), s);
  return _mm256_fmadd_ps(q[3], load8_i8(qs + 24), s);
}

// Whole-block heads: scores of 4 rows; k points at the head's first block of
// row 0, n_blocks blocks per head.
void scores4_q8(const float* q, const uint8_t* k, int64_t stride, int64_t n_blocks, float scale,
                float* scores) {
  const uint8_t *k0 = k, *k1 = k + stride, *k2 = k + 2 * stride, *k3 = k + 3 * stride;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256 qv[4] = {_mm256_loadu_ps(q + 32 * b), _mm256_loadu_ps(q + 32 * b + 8),
                          _mm256_loadu_ps(q + 32 * b + 16), _mm256_loadu_ps(q + 32 * b + 24)};
    const int64_t at = b * kBlockBytes;
    a0 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(k0 + at)), block_dot(qv, k0 + at), a0);
    a1 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(k1 + at)), block_dot(qv, k1 + at), a1);
    a2 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(k2 + at)), block_dot(qv, k2 + at), a2);
    a3 = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(k3 + at)), block_dot(qv, k3 + at), a3);
  }
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  _mm_storeu_ps(scores, _mm_mul_ps(s4, _mm_set1_ps(scale)));
}

float score1_q8(const float* q, const uint8_t* k, int64_t n_blocks, float scale) {
  __m256 a = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256 qv[4] = {_mm256_loadu_ps(q + 32 * b), _mm256_loadu_ps(q + 32 * b + 8),
                          _mm256_loadu_ps(q + 32 * b + 16), _mm256_loadu_ps(q + 32 * b + 24)};
    const uint8_t* blk = k + b * kBlockBytes;
    a = _mm256_fmadd_ps(_mm256_set1_ps(block_scale(blk)), block_dot(qv, blk), a);
  }
  return hsum(a) * scale;
}

// out[0..32) = sum_j p_j * d_j * qs_j of one block per row (v: that block of row 0).
void values_block_q8(const float* p, const uint8_t* v, int64_t stride, int64_t n_ctx, float* out) {
  __m256 o0 = _mm256_setzero_ps(), o1 = o0, o2 = o0, o3 = o0;
  for (int64_t j = 0; j < n_ctx; ++j, v += stride) {
    const __m256 w = _mm256_set1_ps(p[j] * block_scale(v));
    const uint8_t* qs = v + kQsOffset;
    o0 = _mm256_fmadd_ps(w, load8_i8(qs), o0);
    o1 = _mm256_fmadd_ps(w, load8_i8(qs + 8), o1);
    o2 = _mm256_fmadd_ps(w, load8_i8(qs + 16), o2);
    o3 = _mm256_fmadd_ps(w, load8_i8(qs + 24), o3);
  }
  _mm256_storeu_ps(out, o0);
  _mm256_storeu_ps(out + 8, o1);
  _mm256_storeu_ps(out + 16, o2);
  _mm256_storeu_ps(out + 24, o3);
}

// Heads that are not whole blocks: f(block, lo, len, d) for each run of the
// head inside one block, head elements [d, d + len) = qs[lo, lo + len).
template <typename F>
void for_each_run(const uint8_t* row, int64_t first, int64_t head_dim, F f) {
  for (int64_t d = 0; d < head_dim;) {
    const int64_t e = first + d, lo = e % kQK;
    const int64_t len = std::min<int64_t>(kQK - lo, head_dim - d);
    f(row + (e / kQK) * kBlockBytes, lo, len, d);
    d += len;
  }
}

float score_runs_q8(const float* q, const uint8_t* row, int64_t first, int64_t head_dim, float scale) {
  float total = 0.0f;
  for_each_run(row, first, head_dim, [&](const uint8_t* block, int64_t lo, int64_t len, int64_t d) {
    const uint8_t* qs = block + kQsOffset + lo;
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= len; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + d + i), load8_i8(qs + i), a);
    float s = hsum(a);
    for (; i < len; ++i) s += q[d + i] * static_cast<float>(static_cast<int8_t>(qs[i]));
    total += block_scale(block) * s;
  });
  return total * scale;
}

// out[head_dim] += p * row (runs of partial blocks).
void values_runs_q8(float p, const uint8_t* row, int64_t first, int64_t head_dim, float* out) {
  for_each_run(row, first, head_dim, [&](const uint8_t* block, int64_t lo, int64_t len, int64_t d) {
    const uint8_t* qs = block + kQsOffset + lo;
    const float w = p * block_scale(block);
    const __m256 wv = _mm256_set1_ps(w);
    int64_t i = 0;
    for (; i + 8 <= len; i += 8)
      _mm256_storeu_ps(out + d + i, _mm256_fmadd_ps(wv, load8_i8(qs + i), _mm256_loadu_ps(out + d + i)));
    for (; i < len; ++i) out[d + i] += w * static_cast<float>(static_cast<int8_t>(qs[i]));
  });
}

}  // namespace

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  attention_rows<F32Rows>(q, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                          kv_stride * F32Rows::kBytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out) {
  attention_rows<F16Rows>(q, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                          row_stride_bytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out) {
  const int64_t s = row_stride_bytes;
  if (first % kQK == 0 && head_dim % kQK == 0) {  // the head is whole blocks
    const int64_t n_blocks = head_dim / kQK, at = (first / kQK) * kBlockBytes;
    int64_t j = 0;
    for (; j + 4 <= n_ctx; j += 4) scores4_q8(q, row_at(k, s, j) + at, s, n_blocks, scale, scores + j);
    for (; j < n_ctx; ++j) scores[j] = score1_q8(q, row_at(k, s, j) + at, n_blocks, scale);
    softmax(scores, n_ctx);
    for (int64_t b = 0; b < n_blocks; ++b)
      values_block_q8(scores, row_at(v, 0, 0) + at + b * kBlockBytes, s, n_ctx, out + b * kQK);
    return;
  }
  for (int64_t j = 0; j < n_ctx; ++j) scores[j] = score_runs_q8(q, row_at(k, s, j), first, head_dim, scale);
  softmax(scores, n_ctx);
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = 0; j < n_ctx; ++j) values_runs_q8(scores[j], row_at(v, s, j), first, head_dim, out);
}

}  // namespace llmpack::kernels::avx2
