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

// scores4 for 8 rows: 8 independent sums, so the FMAs of one row do not wait
// on each other's latency as 4 sums of a 64-wide head did.
template <class E>
void scores8(const float* q, const uint8_t* k, int64_t stride, int64_t head_dim, float scale, float* scores) {
  if (head_dim % 8 != 0) {
    scores4<E>(q, k, stride, head_dim, scale, scores);
    return scores4<E>(q, k + 4 * stride, stride, head_dim, scale, scores + 4);
  }
  __m256 a[8];
  for (auto& x : a) x = _mm256_setzero_ps();
  for (int64_t i = 0; i < head_dim; i += 8) {
    const __m256 qv = _mm256_loadu_ps(q + i);
    const int64_t at = E::kBytes * i;
    for (int r = 0; r < 8; ++r) a[r] = _mm256_fmadd_ps(qv, E::load8(k + r * stride + at), a[r]);
  }
  // lane r of the 8-wide result: row r's sum (hadd pairs neighbours; the two
  // 128-bit halves then hold rows 0-3 + 4-7 crossed, put straight by a permute)
  const __m256 h0 = _mm256_hadd_ps(_mm256_hadd_ps(a[0], a[1]), _mm256_hadd_ps(a[2], a[3]));
  const __m256 h1 = _mm256_hadd_ps(_mm256_hadd_ps(a[4], a[5]), _mm256_hadd_ps(a[6], a[7]));
  const __m256 lo = _mm256_permute2f128_ps(h0, h1, 0x20), hi = _mm256_permute2f128_ps(h0, h1, 0x31);
  _mm256_storeu_ps(scores, _mm256_mul_ps(_mm256_add_ps(lo, hi), _mm256_set1_ps(scale)));
}

template <class E>
float score1(const float* q, const uint8_t* k, int64_t head_dim, float scale) {
  __m256 a = _mm256_setzero_ps();
  const int64_t n8 = head_dim & ~int64_t{7};
  for (int64_t i = 0; i < n8; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), E::load8(k + E::kBytes * i), a);
  return (hsum(a) + dot_tail<E>(q, k, n8, head_dim)) * scale;
}

// Adds the value sums of NQ queries (probabilities p + g * n_ctx, outputs out + g *
// head_dim) over one strip of 8 * C columns (v: the strip's first element in
// row 0): each row's strip is loaded once for all the queries. Taking the
// queries one after another over a whole strip instead read the strip from
// memory once per query: the rows lie a power of two apart (the cache row of
// all kv heads), so a strip of 4096 rows maps to a few dozen of the L2's sets
// and is gone before the next query comes (docs/PERFORMANCE.md section 22).
template <class E, int NQ, int C>
void values_queries(const float* p, int64_t n_ctx, const uint8_t* v, int64_t stride, int64_t rows, int64_t head_dim,
                    float* out) {
  __m256 o[NQ][C];
  for (int g = 0; g < NQ; ++g)
    for (int c = 0; c < C; ++c) o[g][c] = _mm256_loadu_ps(out + g * head_dim + 8 * c);
  for (int64_t j = 0; j < rows; ++j, v += stride) {
    __m256 x[C];
    for (int c = 0; c < C; ++c) x[c] = E::load8(v + 8 * c * E::kBytes);
    for (int g = 0; g < NQ; ++g) {
      const __m256 pg = _mm256_broadcast_ss(p + g * n_ctx + j);
      for (int c = 0; c < C; ++c) o[g][c] = _mm256_fmadd_ps(pg, x[c], o[g][c]);
    }
  }
  for (int g = 0; g < NQ; ++g)
    for (int c = 0; c < C; ++c) _mm256_storeu_ps(out + g * head_dim + 8 * c, o[g][c]);
}

// values_queries over columns [d, d + 8 * C) of `rows` rows for queries [0,
// n_q), 4 at a time (8 to 16 sums in registers); query g's probabilities at
// p + g * n_ctx.
template <class E, int C>
void values_strip(const float* p, int64_t n_q, int64_t n_ctx, const uint8_t* v, int64_t stride, int64_t rows,
                  int64_t head_dim, float* out) {
  int64_t g = 0;
  for (; g + 4 <= n_q; g += 4)
    values_queries<E, 4, C>(p + g * n_ctx, n_ctx, v, stride, rows, head_dim, out + g * head_dim);
  switch (n_q - g) {
    case 3: return values_queries<E, 3, C>(p + g * n_ctx, n_ctx, v, stride, rows, head_dim, out + g * head_dim);
    case 2: return values_queries<E, 2, C>(p + g * n_ctx, n_ctx, v, stride, rows, head_dim, out + g * head_dim);
    case 1: return values_queries<E, 1, C>(p + g * n_ctx, n_ctx, v, stride, rows, head_dim, out + g * head_dim);
    default: return;
  }
}

// Value rows per block (see attention_rows).
constexpr int64_t kValueRowBlock = 64;

// Software prefetch distances of the decode passes over f32 and f16 rows: the
// key rows 32 ahead of the 8 being scored, and the next block of value rows.
// The hardware prefetchers alone left a 1B-shape token at d4096 (attention
// driver, f32 rows per kv head) at 12.8-16.4 ms against 8.4-10.3 with both,
// and 1B Q4_0 tg32 at d4096 went from 33-34 to 42 t/s (f16 rows level;
// docs/PERFORMANCE.md section 23). The q8_0 passes gained nothing from it.
constexpr int64_t kKeyRowsAhead = 32;

// Asks for `rows` rows' first `bytes` bytes (rows `stride` apart) into L1.
inline void prefetch_rows(const uint8_t* p, int64_t stride, int64_t rows, int64_t bytes) {
  for (int64_t r = 0; r < rows; ++r, p += stride)
    for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// Attention of n_q query heads (q: head g at q + g * head_dim) that share one
// kv head, over rows `stride` bytes apart (k, v: the head's first element in
// row 0); scores[n_q * n_ctx] (query g's at g * n_ctx), out like q. Each
// query's arithmetic is that of one head alone; the queries take turns on
// each 4 key rows (then in L1) and share each row's load of the values, so a
// kv head's rows come from memory once for its whole group instead of once
// per query head (docs/PERFORMANCE.md section 22).
template <class E>
void attention_rows(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  int64_t j = 0;
  const int64_t row_bytes = head_dim * E::kBytes;
  for (; j + 8 <= n_ctx; j += 8) {
    if (j + kKeyRowsAhead + 8 <= n_ctx) prefetch_rows(k + (j + kKeyRowsAhead) * stride, stride, 8, row_bytes);
    for (int64_t g = 0; g < n_q; ++g)
      scores8<E>(q + g * head_dim, k + j * stride, stride, head_dim, scale, scores + g * n_ctx + j);
  }
  for (; j + 4 <= n_ctx; j += 4)
    for (int64_t g = 0; g < n_q; ++g)
      scores4<E>(q + g * head_dim, k + j * stride, stride, head_dim, scale, scores + g * n_ctx + j);
  for (; j < n_ctx; ++j)
    for (int64_t g = 0; g < n_q; ++g)
      scores[g * n_ctx + j] = score1<E>(q + g * head_dim, k + j * stride, head_dim, scale);
  for (int64_t g = 0; g < n_q; ++g) softmax(scores + g * n_ctx, n_ctx);
  std::fill(out, out + n_q * head_dim, 0.0f);
  const int64_t vec_dims = head_dim & ~int64_t{7};
  // Rows in blocks, every strip of a block before the next block: the strips
  // of a row are neighbouring cache lines, and one strip at a time over all
  // rows read the value rows line by line at a stride of a whole cache row.
  for (int64_t j0 = 0; j0 < n_ctx; j0 += kValueRowBlock) {
    const int64_t rows = std::min(kValueRowBlock, n_ctx - j0);
    const uint8_t* vb = v + j0 * stride;
    const int64_t next_rows = std::min(kValueRowBlock, n_ctx - j0 - rows);  // the next block's
    if (next_rows > 0) prefetch_rows(vb + rows * stride, stride, next_rows, row_bytes);
    int64_t d = 0;
    if (n_q == 1) {  // one query: 32 columns a pass, 4 sums
      for (; d + 32 <= vec_dims; d += 32)
        values_strip<E, 4>(scores + j0, 1, n_ctx, vb + E::kBytes * d, stride, rows, head_dim, out + d);
    } else {
      for (; d + 16 <= vec_dims; d += 16)
        values_strip<E, 2>(scores + j0, n_q, n_ctx, vb + E::kBytes * d, stride, rows, head_dim, out + d);
    }
    for (; d < vec_dims; d += 8)
      values_strip<E, 1>(scores + j0, n_q, n_ctx, vb + E::kBytes * d, stride, rows, head_dim, out + d);
  }
  for (int64_t d = vec_dims; d < head_dim; ++d)
    for (int64_t g = 0; g < n_q; ++g) {
      float acc = 0.0f;
      for (j = 0; j < n_ctx; ++j) acc += scores[g * n_ctx + j] * E::load1(v + j * stride + E::kBytes * d);
      out[g * head_dim + d] = acc;
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

// A block's 32 int8 widened to f32 (exact), once for every query that reads it.
inline void widen_block(const uint8_t* block, __m256 w[4]) {
  const uint8_t* qs = block + kQsOffset;
  for (int c = 0; c < 4; ++c) w[c] = load8_i8(qs + 8 * c);
}

// block_dot on a widened block: the same products and sums, in the same order.
inline __m256 wide_dot(const float* q, const __m256 w[4]) {
  __m256 s = _mm256_mul_ps(_mm256_loadu_ps(q), w[0]);
  s = _mm256_fmadd_ps(_mm256_loadu_ps(q + 8), w[1], s);
  s = _mm256_fmadd_ps(_mm256_loadu_ps(q + 16), w[2], s);
  return _mm256_fmadd_ps(_mm256_loadu_ps(q + 24), w[3], s);
}

// Whole-block heads: scores of 4 rows for NQ queries (query g at q + g *
// head_dim, its scores at scores + g * n_ctx); k points at the head's first
// block of row 0, n_blocks blocks per head. Each row's block is widened once
// for the NQ queries (a query group's rows were widened once per query:
// docs/PERFORMANCE.md section 53); each query's sums are those of one query
// alone.
template <int NQ>
void scores4_q8(const float* q, int64_t head_dim, const uint8_t* k, int64_t stride, int64_t n_blocks, float scale,
                float* scores, int64_t n_ctx) {
  __m256 a[NQ][4];
  for (auto& row : a)
    for (auto& x : row) x = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int64_t at = b * kBlockBytes;
#pragma GCC unroll 4
    for (int r = 0; r < 4; ++r) {
      const uint8_t* blk = k + r * stride + at;
      __m256 w[4];
      widen_block(blk, w);
      const __m256 d = _mm256_set1_ps(block_scale(blk));
      for (int g = 0; g < NQ; ++g) a[g][r] = _mm256_fmadd_ps(d, wide_dot(q + g * head_dim + 32 * b, w), a[g][r]);
    }
  }
  for (int g = 0; g < NQ; ++g) {
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(a[g][0], a[g][1]), _mm256_hadd_ps(a[g][2], a[g][3]));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    _mm_storeu_ps(scores + g * n_ctx, _mm_mul_ps(s4, _mm_set1_ps(scale)));
  }
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

// out[g][0..32) = sum_j p_g,j * d_j * qs_j of one block per row (v: that
// block of row 0) for NQ queries (probabilities p + g * n_ctx, outputs out +
// g * head_dim): each row's block widened once for the NQ queries.
template <int NQ>
void values_block_q8(const float* p, const uint8_t* v, int64_t stride, int64_t n_ctx, float* out, int64_t head_dim) {
  __m256 o[NQ][4];
  for (auto& row : o)
    for (auto& x : row) x = _mm256_setzero_ps();
  for (int64_t j = 0; j < n_ctx; ++j, v += stride) {
    __m256 w[4];
    widen_block(v, w);
    const float d = block_scale(v);
    for (int g = 0; g < NQ; ++g) {
      const __m256 pg = _mm256_set1_ps(p[g * n_ctx + j] * d);
      for (int c = 0; c < 4; ++c) o[g][c] = _mm256_fmadd_ps(pg, w[c], o[g][c]);
    }
  }
  for (int g = 0; g < NQ; ++g)
    for (int c = 0; c < 4; ++c) _mm256_storeu_ps(out + g * head_dim + 8 * c, o[g][c]);
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

// The whole-block q8_0 heads, n_q queries as attention_rows takes them.
void attention_blocks_q8(const float* q, int64_t n_q, const void* k, const void* v, int64_t s, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  const int64_t n_blocks = head_dim / kQK, at = (first / kQK) * kBlockBytes;
  int64_t j = 0;
  // queries two at a time: 8 sums and a widened block fit the 16 registers
  for (; j + 4 <= n_ctx; j += 4) {
    const uint8_t* rows = row_at(k, s, j) + at;
    int64_t g = 0;
    for (; g + 2 <= n_q; g += 2)
      scores4_q8<2>(q + g * head_dim, head_dim, rows, s, n_blocks, scale, scores + g * n_ctx + j, n_ctx);
    if (g < n_q) scores4_q8<1>(q + g * head_dim, head_dim, rows, s, n_blocks, scale, scores + g * n_ctx + j, n_ctx);
  }
  for (; j < n_ctx; ++j)
    for (int64_t g = 0; g < n_q; ++g)
      scores[g * n_ctx + j] = score1_q8(q + g * head_dim, row_at(k, s, j) + at, n_blocks, scale);
  for (int64_t g = 0; g < n_q; ++g) softmax(scores + g * n_ctx, n_ctx);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = row_at(v, 0, 0) + at + b * kBlockBytes;
    int64_t g = 0;
    for (; g + 2 <= n_q; g += 2)
      values_block_q8<2>(scores + g * n_ctx, block, s, n_ctx, out + g * head_dim + b * kQK, head_dim);
    if (g < n_q) values_block_q8<1>(scores + g * n_ctx, block, s, n_ctx, out + g * head_dim + b * kQK, head_dim);
  }
}

void attention_runs_q8(const float* q, const void* k, const void* v, int64_t s, int64_t first, int64_t n_ctx,
                       int64_t head_dim, float scale, float* scores, float* out) {
  for (int64_t j = 0; j < n_ctx; ++j) scores[j] = score_runs_q8(q, row_at(k, s, j), first, head_dim, scale);
  softmax(scores, n_ctx);
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = 0; j < n_ctx; ++j) values_runs_q8(scores[j], row_at(v, s, j), first, head_dim, out);
}

}  // namespace

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  attention_rows<F32Rows>(q, 1, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                          kv_stride * F32Rows::kBytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out) {
  attention_rows<F16Rows>(q, 1, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                          row_stride_bytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out) {
  if (first % kQK == 0 && head_dim % kQK == 0)  // the head is whole blocks
    return attention_blocks_q8(q, 1, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
  attention_runs_q8(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
}

void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out) {
  const auto* k = static_cast<const uint8_t*>(kv.k);
  const auto* v = static_cast<const uint8_t*>(kv.v);
  const int64_t s = kv.row_stride_bytes;
  switch (kv.elem) {
    case CacheElem::kF32:
      return attention_rows<F32Rows>(q, n_queries, k + kv.first * F32Rows::kBytes, v + kv.first * F32Rows::kBytes,
                                     s, n_ctx, head_dim, scale, scores, out);
    case CacheElem::kF16:
      return attention_rows<F16Rows>(q, n_queries, k + kv.first * F16Rows::kBytes, v + kv.first * F16Rows::kBytes,
                                     s, n_ctx, head_dim, scale, scores, out);
    case CacheElem::kQ8_0:
      if (kv.first % kQK == 0 && head_dim % kQK == 0)
        return attention_blocks_q8(q, n_queries, k, v, s, kv.first, n_ctx, head_dim, scale, scores, out);
      for (int64_t g = 0; g < n_queries; ++g)
        attention_runs_q8(q + g * head_dim, k, v, s, kv.first, n_ctx, head_dim, scale, scores + g * n_ctx,
                          out + g * head_dim);
      return;
  }
}

}  // namespace llmpack::kernels::avx2
