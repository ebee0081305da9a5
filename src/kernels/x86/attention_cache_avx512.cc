// AVX-512 decode attention over f32 and f16 cache rows (kernels.h
// attention_query_group, attention_head, attention_head_f16) for head_dim a
// multiple of 16 up to 128: the AVX2 kernel's plan (attention_cache_avx2.cc)
// with vectors of 16 floats. After a long context decode attention is a large
// share of a token (a quarter of a 1B-shape token at depth 4096 with an f16
// cache) and the AVX2 kernel reads its rows slower than memory delivers them;
// with 16 lanes to each multiply-add this one takes 1.45-1.6x less time on a
// Zen 5 (docs/PERFORMANCE.md section 52). Scores of 16 key rows a pass (16
// dot products summed across lanes by one tree of shuffles); values with
// each row's strip of up to 64 columns loaded once for up to 4 queries. Each
// query's arithmetic does not depend on how many queries share the pass, so
// a group gives every query the bits it gets alone. q8_0 rows whose head is
// whole blocks are widened to their exact values, in place for one query and
// once per block of rows into an f32 tile for a group; other q8_0 heads and
// other head sizes stay on the AVX2 kernel.
// GCC 12 reports -Wuninitialized (beside the -Wmaybe-uninitialized that
// CMakeLists.txt turns off for every AVX-512 file) inside its own
// avx512fintrin.h where widen16_q8's converts are inlined into the q8_0
// tiles: the _mm512_undefined_* placeholders of _mm512_cvtepi8_epi32 and
// _mm512_cvtepi32_ps, not this file's values.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"

#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/exp512.h"

namespace llmpack::kernels::avx512 {
namespace {

constexpr int kRowLanes = 16;
// Masks that keep every lane (see unpacklo below).
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;

// Element loaders: chunk(row, c) is columns [16c, 16c + 16) of a row as
// floats, offset(col) the byte offset of column col (a multiple of 16, and
// of 32 for q8_0) from the row's first byte.
struct F32Rows {
  static __m512 chunk(const uint8_t* row, int64_t c) { return _mm512_loadu_ps(row + 64 * c); }
  static constexpr int64_t offset(int64_t col) { return 4 * col; }
};

struct F16Rows {
  static __m512 chunk(const uint8_t* row, int64_t c) {
    return _mm512_mask_cvtph_ps(_mm512_setzero_ps(), kAll16,
                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 32 * c)));
  }
  static constexpr int64_t offset(int64_t col) { return 2 * col; }
};

// A q8_0 row of whole blocks (BlockQ8_0: f16 scale d, 32 int8 q): d * q per
// lane, exact in f32 (11 bits by 8), so every query of a group gets these
// values whether they come from here or from a widened tile (below).
constexpr int64_t kQ8BlockBytes = sizeof(BlockQ8_0);  // 34
constexpr int64_t kQ8QsOffset = offsetof(BlockQ8_0, qs);
constexpr int64_t kQ8Elems = kQK;                      // 32

inline __m512 widen16_q8(const uint8_t* block, int64_t half) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + kQ8QsOffset + 16 * half));
  return _mm512_mul_ps(_mm512_set1_ps(_cvtsh_ss(h)), _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
}

struct Q8Rows {
  static __m512 chunk(const uint8_t* row, int64_t c) { return widen16_q8(row + (c / 2) * kQ8BlockBytes, c % 2); }
  static constexpr int64_t offset(int64_t col) { return col / kQ8Elems * kQ8BlockBytes; }
};

// The unpacks, the block shuffle and F16Rows' conversion in their masked forms with every lane
// kept (the same instructions): GCC 12's plain forms pass an undefined vector
// that its own headers then report as used uninitialized.
inline __m512 unpacklo(__m512 a, __m512 b) { return _mm512_mask_unpacklo_ps(a, kAll16, a, b); }
inline __m512 unpackhi(__m512 a, __m512 b) { return _mm512_mask_unpackhi_ps(a, kAll16, a, b); }
inline __m512d unpacklo(__m512d a, __m512d b) { return _mm512_mask_unpacklo_pd(a, kAll8, a, b); }
inline __m512d unpackhi(__m512d a, __m512d b) { return _mm512_mask_unpackhi_pd(a, kAll8, a, b); }
template <int kImm>
inline __m512 shuffle_blocks(__m512 a, __m512 b) {
  return _mm512_mask_shuffle_f32x4(a, kAll16, a, b, kImm);
}

// One vector whose lane r is the sum of a[r]'s 16 lanes. Per 128-bit block:
// pairs fold by unpack (elements of two rows interleaved), then by 64-bit
// unpack (four rows), then blocks across vectors by shuffle_f32x4, so rows
// 4b..4b+3 end in block b.
inline __m512 sum_lanes16(const __m512* a) {
  __m512 t[8];
  for (int i = 0; i < 8; ++i)  // block: [a2i a2i+1 a2i a2i+1] partials
    t[i] = _mm512_add_ps(unpacklo(a[2 * i], a[2 * i + 1]), unpackhi(a[2 * i], a[2 * i + 1]));
  __m512 w[4];
  for (int i = 0; i < 4; ++i) {  // block: [a4i .. a4i+3] partials
    const __m512d x = _mm512_castps_pd(t[2 * i]), y = _mm512_castps_pd(t[2 * i + 1]);
    w[i] = _mm512_add_ps(_mm512_castpd_ps(unpacklo(x, y)), _mm512_castpd_ps(unpackhi(x, y)));
  }
  // [w.B0 w.B2 v.B0 v.B2] + [w.B1 w.B3 v.B1 v.B3]: blocks 0+1 and 2+3 of each
  const auto fold = [](__m512 x, __m512 y) {
    return _mm512_add_ps(shuffle_blocks<0x88>(x, y), shuffle_blocks<0xDD>(x, y));
  };
  return fold(fold(w[0], w[1]), fold(w[2], w[3]));
}

// Max and sum of 16 lanes, folded through the halves (masked extract: see
// unpacklo above; _mm512_reduce_max_ps and _mm512_reduce_add_ps warn so).
inline __m256 low_half(__m512 v) { return _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, v, 0); }
inline __m256 high_half(__m512 v) { return _mm512_mask_extractf32x8_ps(_mm256_setzero_ps(), 0xFF, v, 1); }
inline float lanes_max(__m512 v) {
  __m256 h = _mm256_max_ps(low_half(v), high_half(v));
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}
inline float lanes_sum(__m512 v) {
  __m256 h = _mm256_add_ps(low_half(v), high_half(v));
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}

// scores[0..16) = scale * q . k_r for the 16 rows at k (rows `stride` apart),
// q held in NC = head_dim / 16 registers. Rows go one after another (one
// pointer, no 16 row addresses live at once) and each row's NC products sum
// in its own accumulator: written with 16 row pointers and the head's
// columns outside, GCC kept the accumulators on the stack and the loop ran
// slower than the AVX2 kernel's (docs/PERFORMANCE.md section 52).
template <class E, int NC>
void scores16(const float* q, const uint8_t* k, int64_t stride, float scale, float* scores) {
  __m512 qv[NC];
  for (int c = 0; c < NC; ++c) qv[c] = _mm512_loadu_ps(q + kRowLanes * c);
  __m512 acc[16];
#pragma GCC unroll 16
  for (int r = 0; r < 16; ++r, k += stride) {
    __m512 a = _mm512_mul_ps(qv[0], E::chunk(k, 0));
#pragma GCC unroll 8
    for (int c = 1; c < NC; ++c) a = _mm512_fmadd_ps(qv[c], E::chunk(k, c), a);
    acc[r] = a;
  }
  _mm512_storeu_ps(scores, _mm512_mul_ps(sum_lanes16(acc), _mm512_set1_ps(scale)));
}

template <class E>
float score1(const float* q, const uint8_t* k, int64_t head_dim, float scale) {
  __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(q), E::chunk(k, 0));
  for (int64_t i = kRowLanes; i < head_dim; i += kRowLanes)
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(q + i), E::chunk(k, i / kRowLanes), acc);
  return lanes_sum(acc) * scale;
}

// out[g][16c ..) += sum over `rows` rows of p[g][j] * v_j[16c ..] for NQ
// queries (probabilities p + g * n_ctx, outputs out + g * head_dim) and C
// vectors of columns; each row's strip is loaded once for all NQ queries.
template <class E, int NQ, int C>
void values_queries(const float* p, int64_t n_ctx, const uint8_t* v, int64_t stride, int64_t rows, int64_t head_dim,
                    float* out) {
  __m512 o[NQ][C];
  for (int g = 0; g < NQ; ++g)
    for (int c = 0; c < C; ++c) o[g][c] = _mm512_loadu_ps(out + g * head_dim + kRowLanes * c);
  for (int64_t j = 0; j < rows; ++j, v += stride) {
    __m512 x[C];
    for (int c = 0; c < C; ++c) x[c] = E::chunk(v, c);
    for (int g = 0; g < NQ; ++g) {
      const __m512 pg = _mm512_set1_ps(p[g * n_ctx + j]);
      for (int c = 0; c < C; ++c) o[g][c] = _mm512_fmadd_ps(pg, x[c], o[g][c]);
    }
  }
  for (int g = 0; g < NQ; ++g)
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(out + g * head_dim + kRowLanes * c, o[g][c]);
}

// values_queries over columns [d, d + 16 C) for queries [0, n_q), 4 at a time.
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

// The AVX2 kernel's softmax with 16 lanes (exp512, masked tail): at 1024
// positions the AVX2 softmax took 13% of this kernel's time.
void softmax16(float* x, int64_t n) {
  const int64_t whole = n / kRowLanes * kRowLanes;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n - whole)) - 1);
  __m512 mv = _mm512_set1_ps(x[0]);
  for (int64_t i = 0; i < whole; i += kRowLanes) mv = _mm512_max_ps(mv, _mm512_loadu_ps(x + i));
  mv = _mm512_mask_max_ps(mv, tail, mv, _mm512_maskz_loadu_ps(tail, x + whole));
  const __m512 mb = _mm512_set1_ps(lanes_max(mv));
  __m512 sv = _mm512_setzero_ps();
  for (int64_t i = 0; i < whole; i += kRowLanes) {
    const __m512 e = exp512(_mm512_sub_ps(_mm512_loadu_ps(x + i), mb));
    _mm512_storeu_ps(x + i, e);
    sv = _mm512_add_ps(sv, e);
  }
  const __m512 et = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + whole), mb));
  _mm512_mask_storeu_ps(x + whole, tail, et);
  sv = _mm512_mask_add_ps(sv, tail, sv, et);
  const __m512 inv = _mm512_set1_ps(1.0f / lanes_sum(sv));
  for (int64_t i = 0; i < whole; i += kRowLanes) _mm512_storeu_ps(x + i, _mm512_mul_ps(_mm512_loadu_ps(x + i), inv));
  _mm512_mask_storeu_ps(x + whole, tail, _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, x + whole), inv));
}

// Prefetch distances as the AVX2 kernel's (attention_cache_avx2.cc): key
// rows 32 ahead of the 16 being scored, the next block of value rows.
constexpr int64_t kKeyRowsAhead = 32;
constexpr int64_t kValueRowBlock = 64;

inline void prefetch_rows(const uint8_t* p, int64_t stride, int64_t rows, int64_t bytes) {
  for (int64_t r = 0; r < rows; ++r, p += stride)
    for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// Attention of n_q query heads (q: head g at q + g * head_dim) sharing one kv
// head over rows `stride` bytes apart; scores[n_q * n_ctx], out like q.
template <class E, int NC>
void attention_rows(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride, int64_t n_ctx,
                    float scale, float* scores, float* out) {
  constexpr int64_t head_dim = NC * kRowLanes;
  const int64_t row_bytes = E::offset(head_dim);
  int64_t j = 0;
  for (; j + 16 <= n_ctx; j += 16) {
    if (j + kKeyRowsAhead + 16 <= n_ctx) prefetch_rows(k + (j + kKeyRowsAhead) * stride, stride, 16, row_bytes);
    for (int64_t g = 0; g < n_q; ++g)
      scores16<E, NC>(q + g * head_dim, k + j * stride, stride, scale, scores + g * n_ctx + j);
  }
  for (; j < n_ctx; ++j)
    for (int64_t g = 0; g < n_q; ++g)
      scores[g * n_ctx + j] = score1<E>(q + g * head_dim, k + j * stride, head_dim, scale);
  for (int64_t g = 0; g < n_q; ++g) softmax16(scores + g * n_ctx, n_ctx);
  std::fill(out, out + n_q * head_dim, 0.0f);
  for (int64_t j0 = 0; j0 < n_ctx; j0 += kValueRowBlock) {
    const int64_t rows = std::min(kValueRowBlock, n_ctx - j0);
    const uint8_t* vb = v + j0 * stride;
    const int64_t next_rows = std::min(kValueRowBlock, n_ctx - j0 - rows);
    if (next_rows > 0) prefetch_rows(vb + rows * stride, stride, next_rows, row_bytes);
    int64_t d = 0;
    for (; d + 4 * kRowLanes <= head_dim; d += 4 * kRowLanes)
      values_strip<E, 4>(scores + j0, n_q, n_ctx, vb + E::offset(d), stride, rows, head_dim, out + d);
    switch ((head_dim - d) / kRowLanes) {
      case 3: values_strip<E, 3>(scores + j0, n_q, n_ctx, vb + E::offset(d), stride, rows, head_dim, out + d); break;
      case 2: values_strip<E, 2>(scores + j0, n_q, n_ctx, vb + E::offset(d), stride, rows, head_dim, out + d); break;
      case 1: values_strip<E, 1>(scores + j0, n_q, n_ctx, vb + E::offset(d), stride, rows, head_dim, out + d); break;
      default: break;
    }
  }
}

// Heads of 16 to 128 columns (q and the 16 rows' sums in registers).
constexpr int kMaxChunks = 8;

template <class E>
void attention_any(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride, int64_t n_ctx,
                   int64_t head_dim, float scale, float* scores, float* out) {
  switch (head_dim / kRowLanes) {
    case 1: return attention_rows<E, 1>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 2: return attention_rows<E, 2>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 3: return attention_rows<E, 3>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 4: return attention_rows<E, 4>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 5: return attention_rows<E, 5>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 6: return attention_rows<E, 6>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 7: return attention_rows<E, 7>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    default: return attention_rows<E, kMaxChunks>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
  }
}


// ---- q8_0 rows: a group widens them once ------------------------------------
//
// Widened in the score loop (Q8Rows), a row's int8 -> f32 conversion takes
// three instructions for 16 values against f16's one, and a group of queries
// would repeat it for each query: the AVX2 kernel, which did so, took twice
// the f16 kernel's time for half its bytes (docs/PERFORMANCE.md section 56).
// For three or more queries a block of rows is widened once into an f32 tile
// and every query reads the tile with the f32 code: the same values and the
// same order of operations as Q8Rows in place, so the same bits. One or two
// queries read the rows in place (the tile's stores and loads cost them more:
// section 56).

// dst[r * head_dim + i] = element i of row r as Q8Rows gives it, for `rows`
// rows of n_blocks whole blocks starting at src (rows `stride` bytes apart).
void widen_rows_q8(const uint8_t* src, int64_t stride, int64_t rows, int64_t n_blocks, float* dst) {
  for (int64_t r = 0; r < rows; ++r, src += stride) {
    const uint8_t* block = src;
    for (int64_t b = 0; b < n_blocks; ++b, block += kQ8BlockBytes, dst += kQ8Elems) {
      _mm512_storeu_ps(dst, widen16_q8(block, 0));
      _mm512_storeu_ps(dst + kRowLanes, widen16_q8(block, 1));
    }
  }
}

// attention_rows<Q8Rows, NC> for n_q >= 3 queries through tiles of widened
// rows: 16 key rows, then up to 64 value rows (k and v point at the head's
// first block in row 0).
template <int NC>
void attention_rows_q8_group(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride,
                             int64_t n_ctx, float scale, float* scores, float* out) {
  constexpr int64_t head_dim = NC * kRowLanes, n_blocks = head_dim / kQ8Elems;
  constexpr int64_t tile_stride = F32Rows::offset(head_dim);
  const int64_t row_bytes = Q8Rows::offset(head_dim);
  alignas(64) float tile[kValueRowBlock * head_dim];
  const auto* t = reinterpret_cast<const uint8_t*>(tile);
  for (int64_t j = 0; j < n_ctx; j += 16) {
    const int64_t rows = std::min<int64_t>(16, n_ctx - j);
    if (j + kKeyRowsAhead + 16 <= n_ctx) prefetch_rows(k + (j + kKeyRowsAhead) * stride, stride, 16, row_bytes);
    widen_rows_q8(k + j * stride, stride, rows, n_blocks, tile);
    for (int64_t g = 0; g < n_q; ++g) {
      if (rows == 16) {
        scores16<F32Rows, NC>(q + g * head_dim, t, tile_stride, scale, scores + g * n_ctx + j);
        continue;
      }
      for (int64_t r = 0; r < rows; ++r)
        scores[g * n_ctx + j + r] = score1<F32Rows>(q + g * head_dim, t + r * tile_stride, head_dim, scale);
    }
  }
  for (int64_t g = 0; g < n_q; ++g) softmax16(scores + g * n_ctx, n_ctx);
  std::fill(out, out + n_q * head_dim, 0.0f);
  for (int64_t j0 = 0; j0 < n_ctx; j0 += kValueRowBlock) {
    const int64_t rows = std::min(kValueRowBlock, n_ctx - j0);
    const int64_t next_rows = std::min(kValueRowBlock, n_ctx - j0 - rows);
    if (next_rows > 0) prefetch_rows(v + (j0 + rows) * stride, stride, next_rows, row_bytes);
    widen_rows_q8(v + j0 * stride, stride, rows, n_blocks, tile);
    int64_t d = 0;
    for (; d + 4 * kRowLanes <= head_dim; d += 4 * kRowLanes)
      values_strip<F32Rows, 4>(scores + j0, n_q, n_ctx, t + F32Rows::offset(d), tile_stride, rows, head_dim, out + d);
    if (head_dim - d == 2 * kRowLanes)
      values_strip<F32Rows, 2>(scores + j0, n_q, n_ctx, t + F32Rows::offset(d), tile_stride, rows, head_dim, out + d);
  }
}

template <int NC>
void attention_rows_q8(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride,
                       int64_t n_ctx, float scale, float* scores, float* out) {
  if (n_q <= 2) return attention_rows<Q8Rows, NC>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
  attention_rows_q8_group<NC>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
}

void attention_q8(const float* q, int64_t n_q, const uint8_t* k, const uint8_t* v, int64_t stride, int64_t n_ctx,
                  int64_t head_dim, float scale, float* scores, float* out) {
  switch (head_dim / kRowLanes) {
    case 2: return attention_rows_q8<2>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 4: return attention_rows_q8<4>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    case 6: return attention_rows_q8<6>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
    default: return attention_rows_q8<kMaxChunks>(q, n_q, k, v, stride, n_ctx, scale, scores, out);
  }
}

}  // namespace

bool attention_query_supports(CacheElem elem, int64_t first, int64_t head_dim) {
  if (elem == CacheElem::kQ8_0 && (first % kQ8Elems != 0 || head_dim % kQ8Elems != 0)) return false;
  return head_dim > 0 && head_dim % kRowLanes == 0 && head_dim <= kMaxChunks * kRowLanes;
}

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out) {
  attention_any<F32Rows>(q, 1, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                         F32Rows::offset(kv_stride), n_ctx, head_dim, scale, scores, out);
}

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride_bytes,
                        int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  attention_any<F16Rows>(q, 1, reinterpret_cast<const uint8_t*>(k), reinterpret_cast<const uint8_t*>(v),
                         row_stride_bytes, n_ctx, head_dim, scale, scores, out);
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  attention_q8(q, 1, static_cast<const uint8_t*>(k) + Q8Rows::offset(first),
               static_cast<const uint8_t*>(v) + Q8Rows::offset(first), row_stride_bytes, n_ctx, head_dim, scale,
               scores, out);
}

void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out) {
  const auto* k = static_cast<const uint8_t*>(kv.k);
  const auto* v = static_cast<const uint8_t*>(kv.v);
  const int64_t s = kv.row_stride_bytes;
  if (kv.elem == CacheElem::kQ8_0)
    return attention_q8(q, n_queries, k + Q8Rows::offset(kv.first), v + Q8Rows::offset(kv.first), s, n_ctx,
                        head_dim, scale, scores, out);
  if (kv.elem == CacheElem::kF16)
    return attention_any<F16Rows>(q, n_queries, k + F16Rows::offset(kv.first), v + F16Rows::offset(kv.first), s,
                                  n_ctx, head_dim, scale, scores, out);
  attention_any<F32Rows>(q, n_queries, k + F32Rows::offset(kv.first), v + F32Rows::offset(kv.first), s, n_ctx,
                         head_dim, scale, scores, out);
}

}  // namespace llmpack::kernels::avx512
