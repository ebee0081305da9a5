// NEON prefill attention (kernels.h attention_tokens) for head_dim % 4 == 0:
// up to 32 queries that share one kv head go through the cache together, 32
// keys at a time, with a running (online) softmax per query, so each key and
// value row is read once per tile of queries instead of once per query (the
// one-query kernel read a 1B-shape kv head's rows 4 times over, once per query
// head of the group). The tile's scratch and walk are attention_tiles.h's, as
// on x86; here 4 queries share a vector and broadcasts come from lanes:
// scores: acc[key][lane group] += qt[d][group] * k[key][d] (lane d % 4 of a
//         4-element load of the key row);
// values: acc[query][dims] += v[key][dims] * st[key][query] (lane of a
//         4-query load of the block's probabilities).
#include <algorithm>
#include <cstring>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/attention_tiles.h"

namespace llmpack::kernels::neon {
namespace {

using attention_tile::kKeys;
using attention_tile::kMasked;
using attention_tile::kTile;
using attention_tile::Rows;
using attention_tile::Scratch;

constexpr int kLanes = 4;

// st[j][4g..4g+4) = sum_d k_j[d] * qt[d][4g..] for KR keys and NG lane
// groups (KR * NG accumulators, NG query and KR key vectors: at most 26 of
// the 32 registers); bmax[4g..] keeps each lane's highest score of the block.
template <int NG, int KR>
inline void score_keys(const Rows& k, int j0, int64_t hd, const float* qt, float* st, float* bmax) {
  float32x4_t acc[KR][NG];
  for (int r = 0; r < KR; ++r)
    for (int g = 0; g < NG; ++g) acc[r][g] = vdupq_n_f32(0.0f);
  for (int64_t d = 0; d < hd; d += kLanes) {
    float32x4_t kv[KR];
    for (int r = 0; r < KR; ++r) kv[r] = vld1q_f32(k.row(j0 + r) + d);
    for_constants<kLanes>([&]<int L>() {
      float32x4_t qv[NG];
      for (int g = 0; g < NG; ++g) qv[g] = vld1q_f32(qt + (d + L) * kTile + kLanes * g);
      for (int r = 0; r < KR; ++r)
        for (int g = 0; g < NG; ++g) acc[r][g] = vfmaq_laneq_f32(acc[r][g], qv[g], kv[r], L);
    });
  }
  for (int g = 0; g < NG; ++g) {
    float32x4_t m = vld1q_f32(bmax + kLanes * g);
    for (int r = 0; r < KR; ++r) {
      vst1q_f32(st + r * kTile + kLanes * g, acc[r][g]);
      m = vmaxq_f32(m, acc[r][g]);
    }
    vst1q_f32(bmax + kLanes * g, m);
  }
}

// KR keys a pass (as many as keep 16 accumulators or fewer), then one at a time.
template <int NG>
void score_block(const Rows& k, int n_keys, int64_t hd, const float* qt, float* st, float* bmax) {
  constexpr int kKr = std::min(8, 16 / NG);
  for (int g = 0; g < NG; ++g) vst1q_f32(bmax + kLanes * g, vdupq_n_f32(kMasked));
  int j = 0;
  for (; j + kKr <= n_keys; j += kKr) score_keys<NG, kKr>(k, j, hd, qt, st + j * kTile, bmax);
  for (; j < n_keys; ++j) score_keys<NG, 1>(k, j, hd, qt, st + j * kTile, bmax);
}

void score_any(int n_groups, const Rows& k, int n_keys, int64_t hd, const float* qt, float* st, float* bmax) {
  switch (n_groups) {
    case 1: return score_block<1>(k, n_keys, hd, qt, st, bmax);
    case 2: return score_block<2>(k, n_keys, hd, qt, st, bmax);
    case 3: return score_block<3>(k, n_keys, hd, qt, st, bmax);
    case 4: return score_block<4>(k, n_keys, hd, qt, st, bmax);
    case 5: return score_block<5>(k, n_keys, hd, qt, st, bmax);
    case 6: return score_block<6>(k, n_keys, hd, qt, st, bmax);
    case 7: return score_block<7>(k, n_keys, hd, qt, st, bmax);
    default: return score_block<8>(k, n_keys, hd, qt, st, bmax);
  }
}

// Updates each lane's running max and sum and turns st into probabilities
// relative to the new max (corr rescales o). kMask: the block holds keys
// some query must not see, so each score is masked by position and the
// block's max taken again; otherwise the score pass's bmax is the max.
template <bool kMask>
void softmax_group(const Scratch& s, int g, int64_t j0, int n_keys) {
  const float32x4_t masked = vdupq_n_f32(kMasked);
  const float32x4_t nctx = vld1q_f32(s.nctx + kLanes * g);
  const auto visible = [&](int j) { return vcltq_f32(vdupq_n_f32(static_cast<float>(j0 + j)), nctx); };
  float32x4_t block_max = vld1q_f32(s.bmax + kLanes * g);
  if constexpr (kMask) {
    block_max = masked;
    for (int j = 0; j < n_keys; ++j) {
      float* row = s.st + j * kTile + kLanes * g;
      const float32x4_t score = vbslq_f32(visible(j), vld1q_f32(row), masked);
      vst1q_f32(row, score);
      block_max = vmaxq_f32(block_max, score);
    }
  }
  const float32x4_t m_old = vld1q_f32(s.m + kLanes * g);
  const float32x4_t m_new = vmaxq_f32(m_old, block_max);
  float32x4_t sum = vdupq_n_f32(0.0f);
  for (int j = 0; j < n_keys; ++j) {
    float* row = s.st + j * kTile + kLanes * g;
    float32x4_t p = exp4(vsubq_f32(vld1q_f32(row), m_new));
    if constexpr (kMask)
      p = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(p), visible(j)));
    vst1q_f32(row, p);
    sum = vaddq_f32(sum, p);
  }
  const float32x4_t corr = exp4(vsubq_f32(m_old, m_new));
  vst1q_f32(s.corr + kLanes * g, corr);
  vst1q_f32(s.l + kLanes * g, vfmaq_f32(sum, vld1q_f32(s.l + kLanes * g), corr));
  vst1q_f32(s.m + kLanes * g, m_new);
}

void softmax_block(const Scratch& s, int n_groups, int64_t j0, int n_keys, bool all_visible) {
  for (int g = 0; g < n_groups; ++g) {
    if (all_visible)
      softmax_group<false>(s, g, j0, n_keys);
    else
      softmax_group<true>(s, g, j0, n_keys);
  }
}

// o[i0 + i][d0..d0+4DV) = o * corr + sum_j st[j][i0 + i] * v_j[d0..] for QR
// queries: 4 (one vector of st, its lanes broadcast) or 1.
template <int QR, int DV>
inline void value_dims(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int i0, int64_t d0) {
  float32x4_t acc[QR][DV];
  for (int i = 0; i < QR; ++i) {
    const float c = s.corr[i0 + i];
    for (int u = 0; u < DV; ++u) acc[i][u] = vmulq_n_f32(vld1q_f32(s.o + (i0 + i) * hd + d0 + kLanes * u), c);
  }
  for (int j = 0; j < n_keys; ++j) {
    float32x4_t vv[DV];
    for (int u = 0; u < DV; ++u) vv[u] = vld1q_f32(v.row(j) + d0 + kLanes * u);
    const float* p = s.st + j * kTile + i0;
    if constexpr (QR == kLanes) {
      const float32x4_t pv = vld1q_f32(p);
      for_constants<kLanes>([&]<int I>() {
        for (int u = 0; u < DV; ++u) acc[I][u] = vfmaq_laneq_f32(acc[I][u], vv[u], pv, I);
      });
    } else {
      for (int i = 0; i < QR; ++i)
        for (int u = 0; u < DV; ++u) acc[i][u] = vfmaq_n_f32(acc[i][u], vv[u], p[i]);
    }
  }
  for (int i = 0; i < QR; ++i)
    for (int u = 0; u < DV; ++u) vst1q_f32(s.o + (i0 + i) * hd + d0 + kLanes * u, acc[i][u]);
}

template <int DV>
void value_queries(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries, int64_t d0) {
  int i = 0;
  for (; i + kLanes <= n_queries; i += kLanes) value_dims<kLanes, DV>(s, v, n_keys, hd, i, d0);
  for (; i < n_queries; ++i) value_dims<1, DV>(s, v, n_keys, hd, i, d0);
}

// 16 dims a pass (4 x 4 accumulators for 4 queries), then 4.
void value_block(const Scratch& s, const Rows& v, int n_keys, int64_t hd, int n_queries) {
  int64_t d0 = 0;
  for (; d0 + 16 <= hd; d0 += 16) value_queries<4>(s, v, n_keys, hd, n_queries, d0);
  for (; d0 < hd; d0 += kLanes) value_queries<1>(s, v, n_keys, hd, n_queries, d0);
}

}  // namespace

void attention_decode_row(const KvHead& kv, const uint8_t* row, int64_t hd, float* buf) {
  switch (kv.elem) {
    case CacheElem::kF32:
      std::memcpy(buf, row + 4 * kv.first, static_cast<size_t>(hd) * 4);
      return;
    case CacheElem::kF16:  // rows start on even bytes (kernels.h)
      return widen_f16(reinterpret_cast<const uint16_t*>(row) + kv.first, hd, buf);
    default:
      return widen_q8_0(row, kv.first, hd, buf);
  }
}

size_t attention_tokens_scratch_floats(int64_t head_dim) { return Scratch::floats(head_dim); }

bool attention_tokens_supports(int64_t head_dim) { return head_dim > 0 && head_dim % kLanes == 0; }

void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride) {
  const Scratch s = attention_tile::aligned_scratch(scratch, head_dim, 16);
  const attention_tile::TileArgs args{q, q_stride, group, start_pos, head_dim, scale, out, out_stride,
                                      &attention_decode_row};
  // Values are copied together per block, as the AVX2 kernel does: a cache
  // of whole rows puts a head's 32 value rows 2 KiB or more apart.
  constexpr bool kValuesInPlace = false;
  attention_tile::attend_tiles(args, kv, n_tokens * group, s, kValuesInPlace,
                               [&](const Rows& k, const Rows& v, int64_t j0, int nk, int n, bool all_visible) {
    const int n_groups = (n + kLanes - 1) / kLanes;
    score_any(n_groups, k, nk, head_dim, s.qt, s.st, s.bmax);
    softmax_block(s, n_groups, j0, nk, all_visible);
    value_block(s, v, nk, head_dim, n);
  });
}

}  // namespace llmpack::kernels::neon
