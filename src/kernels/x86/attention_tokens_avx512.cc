// AVX-512 prefill attention (kernels.h attention_tokens) for head_dim % 16
// == 0: the AVX2 kernel's plan (attention_tokens_avx2.cc; the tile's scratch
// and walk are attention_tiles.h's) with 16 queries to a vector and
// twice the registers, so each broadcast key element or probability feeds
// twice the FMAs. At d2048 the AVX2 kernel took 44% of a 1B-shape pp512
// (docs/PERFORMANCE.md section 23).
// Scores: acc[key][lane group] += k[key][d] (broadcast) * qt[d][group];
// values: acc[query][dims] += st[key][query] (broadcast) * v[key][dims].
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "kernels/attention_tiles.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/exp512.h"

namespace llmpack::kernels::avx512 {
namespace {

using attention_tile::kKeys;
using attention_tile::kMasked;
using attention_tile::kTile;
using attention_tile::Rows;
using attention_tile::Scratch;

constexpr int kLanes = 16;

// st[j][16g..16g+16) = sum_d k_j[d] * qt[d][16g..] for KR keys and NG lane
// groups; bmax[16g..] keeps each lane's highest score of the block.
template <int NG, int KR>
inline void score_keys(const Rows& k, int j0, int64_t hd, const float* qt, float* st, float* bmax) {
  __m512 acc[KR][NG];
  for (int r = 0; r < KR; ++r)
    for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_setzero_ps();
  for (int64_t d = 0; d < hd; ++d) {
    __m512 qv[NG];
    for (int g = 0; g < NG; ++g) qv[g] = _mm512_load_ps(qt + d * kTile + kLanes * g);
    for (int r = 0; r < KR; ++r) {
      const __m512 kv = _mm512_set1_ps(k.row(j0 + r)[d]);
      for (int g = 0; g < NG; ++g) acc[r][g] = _mm512_fmadd_ps(kv, qv[g], acc[r][g]);
    }
  }
  for (int g = 0; g < NG; ++g) {
    __m512 m = _mm512_load_ps(bmax + kLanes * g);
    for (int r = 0; r < KR; ++r) {
      _mm512_store_ps(st + r * kTile + kLanes * g, acc[r][g]);
      m = _mm512_max_ps(m, acc[r][g]);
    }
    _mm512_store_ps(bmax + kLanes * g, m);
  }
}

// 8 keys a pass (16 or 8 accumulators), then 4, then one at a time.
template <int NG>
void score_block(const Rows& k, int n_keys, int64_t hd, const float* qt, float* st, float* bmax) {
  for (int g = 0; g < NG; ++g) _mm512_store_ps(bmax + kLanes * g, _mm512_set1_ps(kMasked));
  int j = 0;
  for (; j + 8 <= n_keys; j += 8) score_keys<NG, 8>(k, j, hd, qt, st + j * kTile, bmax);
  for (; j + 4 <= n_keys; j += 4) score_keys<NG, 4>(k, j, hd, qt, st + j * kTile, bmax);
  for (; j < n_keys; ++j) score_keys<NG, 1>(k, j, hd, qt, st + j * kTile, bmax);
}

// Updates each lane's running max and sum and turns st into probabilities
// relative to the new max (corr rescales o). kMask: the block holds keys
// some query must not see, so each score is masked by position and the
// block's max taken again; otherwise the score pass's bmax is the max.
template <bool kMask>
void softmax_group(const Scratch& s, int g, int64_t j0, int n_keys) {
  const __m512 masked = _mm512_set1_ps(kMasked);
  const __m512 nctx = _mm512_load_ps(s.nctx + kLanes * g);
  const auto visible = [&](int j) {
    return _mm512_cmp_ps_mask(_mm512_set1_ps(static_cast<float>(j0 + j)), nctx, _CMP_LT_OQ);
  };
  __m512 block_max = _mm512_load_ps(s.bmax + kLanes * g);
  if constexpr (kMask) {
    block_max = masked;
    for (int j = 0; j < n_keys; ++j) {
      float* row = s.st + j * kTile + kLanes * g;
      const __m512 score = _mm512_mask_blend_ps(visible(j), masked, _mm512_load_ps(row));
      _mm512_store_ps(row, score);
      block_max = _mm512_max_ps(block_max, score);
    }
  }
  const __m512 m_old = _mm512_load_ps(s.m + kLanes * g);
  const __m512 m_new = _mm512_max_ps(m_old, block_max);
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < n_keys; ++j) {
    float* row = s.st + j * kTile + kLanes * g;
    __m512 p = exp512(_mm512_sub_ps(_mm512_load_ps(row), m_new));
    if constexpr (kMask) p = _mm512_maskz_mov_ps(visible(j), p);
    _mm512_store_ps(row, p);
    sum = _mm512_add_ps(sum, p);
  }
  const __m512 corr = exp512(_mm512_sub_ps(m_old, m_new));
  _mm512_store_ps(s.corr + kLanes * g, corr);
  _mm512_store_ps(s.l + kLanes * g, _mm512_fmadd_ps(_mm512_load_ps(s.l + kLanes * g), corr, sum));
  _mm512_store_ps(s.m + kLanes * g, m_new);
}

void softmax_block(const Scratch& s, int n_groups, int64_t j0, int n_keys, bool all_visible) {
  for (int g = 0; g < n_groups; ++g) {
    if (all_visible)
      softmax_group<false>(s, g, j0, n_keys);
    else
      softmax_group<true>(s, g, j0, n_keys);
  }
}

// o[i][d0..d0+16DV) = o * corr[i] + sum_j st[j][i] * v_j[d0..] for QR queries.
template <int QR, int DV>
inline void value_dims(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int i0, int64_t d0) {
  __m512 acc[QR][DV];
  for (int i = 0; i < QR; ++i) {
    const __m512 c = _mm512_set1_ps(s.corr[i0 + i]);
    for (int u = 0; u < DV; ++u)
      acc[i][u] = _mm512_mul_ps(_mm512_loadu_ps(s.o + (i0 + i) * hd + d0 + kLanes * u), c);
  }
  for (int j = 0; j < n_keys; ++j) {
    __m512 vv[DV];
    for (int u = 0; u < DV; ++u) vv[u] = _mm512_loadu_ps(v.row(j) + d0 + kLanes * u);
    for (int i = 0; i < QR; ++i) {
      const __m512 p = _mm512_set1_ps(s.st[j * kTile + i0 + i]);
      for (int u = 0; u < DV; ++u) acc[i][u] = _mm512_fmadd_ps(p, vv[u], acc[i][u]);
    }
  }
  for (int i = 0; i < QR; ++i)
    for (int u = 0; u < DV; ++u) _mm512_storeu_ps(s.o + (i0 + i) * hd + d0 + kLanes * u, acc[i][u]);
}

// QR queries a pass over 16 * DV dims: 24 accumulators (8 for single queries).
template <int DV>
void value_queries(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries, int64_t d0) {
  constexpr int kQr = 24 / DV;
  int i = 0;
  for (; i + kQr <= n_queries; i += kQr) value_dims<kQr, DV>(s, v, n_keys, hd, i, d0);
  for (; i < n_queries; ++i) value_dims<1, DV>(s, v, n_keys, hd, i, d0);
}

void value_block(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries) {
  int64_t d0 = 0;
  for (; d0 + 64 <= hd; d0 += 64) value_queries<4>(s, v, n_keys, hd, n_queries, d0);
  for (; d0 + 32 <= hd; d0 += 32) value_queries<2>(s, v, n_keys, hd, n_queries, d0);
  for (; d0 < hd; d0 += 16) value_queries<1>(s, v, n_keys, hd, n_queries, d0);
}

}  // namespace

size_t attention_tokens_scratch_floats(int64_t head_dim) { return Scratch::floats(head_dim); }

bool attention_tokens_supports(int64_t head_dim) { return head_dim > 0 && head_dim % 16 == 0; }

void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride) {
  // 64-byte aligned for the aligned loads of qt, st and the per-query arrays
  const Scratch s = attention_tile::aligned_scratch(scratch, head_dim, 64);
  const attention_tile::TileArgs args{q, q_stride, group, start_pos, head_dim, scale, out, out_stride,
                                      &avx2::attention_decode_row};
  constexpr bool kValuesInPlace = true;  // see attend_tiles
  attention_tile::attend_tiles(args, kv, n_tokens * group, s, kValuesInPlace,
                         [&](const Rows& k, const Rows& v, int64_t j0, int nk, int n, bool all_visible) {
    const int n_groups = (n + kLanes - 1) / kLanes;
    if (n_groups == 1)
      score_block<1>(k, nk, head_dim, s.qt, s.st, s.bmax);
    else
      score_block<2>(k, nk, head_dim, s.qt, s.st, s.bmax);
    softmax_block(s, n_groups, j0, nk, all_visible);
    value_block(s, v, nk, head_dim, n);
  });
}

}  // namespace llmpack::kernels::avx512
