// AVX2 prefill attention (kernels.h attention_tokens): up to 32 queries that
// share one kv head go through the cache together, 32 keys at a time, with a
// running (online) softmax per query, so each key and value row is read once
// per tile of queries instead of once per query. The tile's scratch and walk
// are attention_tiles.h's; here, 8 queries per vector:
// scores: acc[key][lane group] += k[key][d] (broadcast) * qt[d][group];
// values: acc[query][dims] += st[key][query] (broadcast) * v[key][dims].
#include <algorithm>
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/attention_tiles.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

using attention_tile::kKeys;
using attention_tile::kMasked;
using attention_tile::kTile;
using attention_tile::Rows;
using attention_tile::Scratch;

float half_to_float(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

}  // namespace

void attention_decode_row(const KvHead& kv, const uint8_t* row, int64_t hd, float* buf) {
  if (kv.elem == CacheElem::kF16) {
    for (int64_t d = 0; d < hd; d += 8)
      _mm256_storeu_ps(buf + d, _mm256_cvtph_ps(_mm_loadu_si128(
                                    reinterpret_cast<const __m128i*>(row + 2 * (kv.first + d)))));
    return;
  }
  if (kv.elem == CacheElem::kF32) {
    std::memcpy(buf, row + 4 * kv.first, static_cast<size_t>(hd) * 4);
    return;
  }
  for (int64_t d = 0; d < hd;) {
    const int64_t e = kv.first + d, lo = e % kQK;
    const uint8_t* block = row + (e / kQK) * sizeof(BlockQ8_0);
    const float scale = half_to_float(block);
    const auto* qs = reinterpret_cast<const int8_t*>(block + offsetof(BlockQ8_0, qs));
    if (lo == 0 && d + kQK <= hd) {  // a whole block: its scale converted once (a third of the time)
      const __m256 sv = _mm256_set1_ps(scale);
      for (int c = 0; c < kQK; c += 8)
        _mm256_storeu_ps(buf + d + c, _mm256_mul_ps(sv, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(
                                                          _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + c))))));
      d += kQK;
    } else if (lo % 8 == 0 && d + 8 <= hd) {  // 8 elements inside one block and the head
      const __m256 q8 = _mm256_cvtepi32_ps(
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + lo))));
      _mm256_storeu_ps(buf + d, _mm256_mul_ps(_mm256_set1_ps(scale), q8));
      d += 8;
    } else {
      buf[d] = scale * static_cast<float>(qs[lo]);
      d += 1;
    }
  }
}

namespace {

// st[j][8g..8g+8) = sum_d k_j[d] * qt[d][8g..] for KR keys and NG lane
// groups; bmax[8g..] keeps each lane's highest score of the block.
template <int NG, int KR>
inline void score_keys(const Rows& k, int j0, int64_t hd, const float* qt, float* st, float* bmax) {
  __m256 acc[KR][NG];
  for (int r = 0; r < KR; ++r)
    for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_setzero_ps();
  for (int64_t d = 0; d < hd; ++d) {
    __m256 qv[NG];
    for (int g = 0; g < NG; ++g) qv[g] = _mm256_load_ps(qt + d * kTile + 8 * g);
    for (int r = 0; r < KR; ++r) {
      const __m256 kv = _mm256_broadcast_ss(k.row(j0 + r) + d);
      for (int g = 0; g < NG; ++g) acc[r][g] = _mm256_fmadd_ps(kv, qv[g], acc[r][g]);
    }
  }
  for (int g = 0; g < NG; ++g) {
    __m256 m = _mm256_load_ps(bmax + 8 * g);
    for (int r = 0; r < KR; ++r) {
      _mm256_store_ps(st + r * kTile + 8 * g, acc[r][g]);
      m = _mm256_max_ps(m, acc[r][g]);
    }
    _mm256_store_ps(bmax + 8 * g, m);
  }
}

template <int NG>
void score_block(const Rows& k, int n_keys, int64_t hd, const float* qt, float* st, float* bmax) {
  constexpr int kKr = 12 / NG;  // 12 accumulators
  for (int g = 0; g < NG; ++g) _mm256_store_ps(bmax + 8 * g, _mm256_set1_ps(kMasked));
  int j = 0;
  for (; j + kKr <= n_keys; j += kKr) score_keys<NG, kKr>(k, j, hd, qt, st + j * kTile, bmax);
  for (; j < n_keys; ++j) score_keys<NG, 1>(k, j, hd, qt, st + j * kTile, bmax);
}

// Updates each lane's running max and sum and turns st into probabilities
// relative to the new max (corr rescales o). kMask: the block holds keys
// some query must not see, so each score is masked by position and the
// block's max taken again; otherwise the score pass's bmax is the max.
template <bool kMask>
void softmax_group(const Scratch& s, int g, int64_t j0, int n_keys) {
  const __m256 masked = _mm256_set1_ps(kMasked);
  const __m256 nctx = _mm256_load_ps(s.nctx + 8 * g);
  const auto visible = [&](int j) {
    return _mm256_cmp_ps(_mm256_set1_ps(static_cast<float>(j0 + j)), nctx, _CMP_LT_OQ);
  };
  __m256 block_max = _mm256_load_ps(s.bmax + 8 * g);
  if constexpr (kMask) {
    block_max = masked;
    for (int j = 0; j < n_keys; ++j) {
      float* row = s.st + j * kTile + 8 * g;
      const __m256 score = _mm256_blendv_ps(masked, _mm256_load_ps(row), visible(j));
      _mm256_store_ps(row, score);
      block_max = _mm256_max_ps(block_max, score);
    }
  }
  const __m256 m_old = _mm256_load_ps(s.m + 8 * g);
  const __m256 m_new = _mm256_max_ps(m_old, block_max);
  __m256 sum = _mm256_setzero_ps();
  for (int j = 0; j < n_keys; ++j) {
    float* row = s.st + j * kTile + 8 * g;
    __m256 p = exp256(_mm256_sub_ps(_mm256_load_ps(row), m_new));
    if constexpr (kMask) p = _mm256_and_ps(p, visible(j));
    _mm256_store_ps(row, p);
    sum = _mm256_add_ps(sum, p);
  }
  const __m256 corr = exp256(_mm256_sub_ps(m_old, m_new));
  _mm256_store_ps(s.corr + 8 * g, corr);
  _mm256_store_ps(s.l + 8 * g, _mm256_fmadd_ps(_mm256_load_ps(s.l + 8 * g), corr, sum));
  _mm256_store_ps(s.m + 8 * g, m_new);
}

void softmax_block(const Scratch& s, int n_groups, int64_t j0, int n_keys, bool all_visible) {
  for (int g = 0; g < n_groups; ++g) {
    if (all_visible)
      softmax_group<false>(s, g, j0, n_keys);
    else
      softmax_group<true>(s, g, j0, n_keys);
  }
}

// o[i][d0..d0+8DV) = o * corr[i] + sum_j st[j][i] * v_j[d0..] for QR queries.
template <int QR, int DV>
inline void value_dims(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int i0, int64_t d0) {
  __m256 acc[QR][DV];
  for (int i = 0; i < QR; ++i) {
    const __m256 c = _mm256_broadcast_ss(s.corr + i0 + i);
    for (int u = 0; u < DV; ++u) acc[i][u] = _mm256_mul_ps(_mm256_loadu_ps(s.o + (i0 + i) * hd + d0 + 8 * u), c);
  }
  for (int j = 0; j < n_keys; ++j) {
    __m256 vv[DV];
    for (int u = 0; u < DV; ++u) vv[u] = _mm256_loadu_ps(v.row(j) + d0 + 8 * u);
    for (int i = 0; i < QR; ++i) {
      const __m256 p = _mm256_broadcast_ss(s.st + j * kTile + i0 + i);
      for (int u = 0; u < DV; ++u) acc[i][u] = _mm256_fmadd_ps(p, vv[u], acc[i][u]);
    }
  }
  for (int i = 0; i < QR; ++i)
    for (int u = 0; u < DV; ++u) _mm256_storeu_ps(s.o + (i0 + i) * hd + d0 + 8 * u, acc[i][u]);
}

template <int DV>
void value_queries(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries, int64_t d0) {
  constexpr int kQr = 12 / DV;
  int i = 0;
  for (; i + kQr <= n_queries; i += kQr) value_dims<kQr, DV>(s, v, n_keys, hd, i, d0);
  for (; i < n_queries; ++i) value_dims<1, DV>(s, v, n_keys, hd, i, d0);
}

void value_block(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries) {
  int64_t d0 = 0;
  for (; d0 + 32 <= hd; d0 += 32) value_queries<4>(s, v, n_keys, hd, n_queries, d0);
  for (; d0 < hd; d0 += 8) value_queries<1>(s, v, n_keys, hd, n_queries, d0);
}

}  // namespace

size_t attention_tokens_scratch_floats(int64_t head_dim) { return Scratch::floats(head_dim); }

bool attention_tokens_supports(int64_t head_dim) { return head_dim > 0 && head_dim % 8 == 0; }

void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride) {
  const Scratch s = attention_tile::aligned_scratch(scratch, head_dim, 32);  // for the aligned loads of qt and st
  const attention_tile::TileArgs args{q, q_stride, group, start_pos, head_dim, scale, out, out_stride,
                                      &attention_decode_row};
  constexpr bool kValuesInPlace = false;  // see attend_tiles
  attention_tile::attend_tiles(args, kv, n_tokens * group, s, kValuesInPlace,
                         [&](const Rows& k, const Rows& v, int64_t j0, int nk, int n, bool all_visible) {
    switch ((n + 7) / 8) {
      case 1: score_block<1>(k, nk, head_dim, s.qt, s.st, s.bmax); break;
      case 2: score_block<2>(k, nk, head_dim, s.qt, s.st, s.bmax); break;
      case 3: score_block<3>(k, nk, head_dim, s.qt, s.st, s.bmax); break;
      default: score_block<4>(k, nk, head_dim, s.qt, s.st, s.bmax); break;
    }
    softmax_block(s, (n + 7) / 8, j0, nk, all_visible);
    value_block(s, v, nk, head_dim, n);
  });
}

}  // namespace llmpack::kernels::avx2
