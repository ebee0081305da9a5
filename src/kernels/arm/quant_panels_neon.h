// Prefill (4 tokens or more) of block-quantized weights on CPUs with the
// dot-product extension, in panels of 4 rows: each 32-element unit of 4
// rows is unpacked to int8 once per call and token block and stored with
// its 4 bytes of each row side by side, so one indexed sdot
// (vdotq_laneq_s32: lane i += row i's 4 quants . 4 activations picked by the
// index) multiplies 4 rows at once, and the 8 sdots of a unit serve one
// token for all 4 rows. The scales then apply as one vector of 4 rows per
// token and unit:
//   y[t, r] += s_r * a.d_t * (q_r . a_t)  (+ m_r * a.d_t * qsum_t for types with a min)
// against the row kernels' 2 sdots, a convert, a scalar multiply and a
// multiply-add per row, token and unit, and an unpacking per 4 tokens.
// Loops: token blocks whose activations for one chunk of columns fit in
// about 128 KiB (tokens_per_block: kept in L2 while every panel of the
// thread's rows passes), then column chunks of kChunkUnits units, then panels, then tiles of up to
// 4 tokens; partial sums across chunks add up in y.
// Include after arm/quant_rows_neon.h, only from the dot-product build
// (matmul_quant_dotprod_neon.cc); everything sits in its unnamed namespace.
#pragma once

#include <algorithm>

#include "kernels/arm/quant_rows_neon.h"

namespace llmpack::kernels::neon {
namespace {

// One 32-element unit of a row: quants as int8 (elements 0..15 in w[0], 16..31
// in w[1]), value = s[h] * q + m[h] for element i in half h = i / 16.
struct Unit {
  int8x16_t w[2];
  float s[2], m[2];
};

// How a weight type's blocks give units: kUnits per block, whether the two
// halves of a unit have their own scale (kHalfScales), and whether units
// carry a min (kMins 1: one, 2: one per half).
template <class Block>
struct UnitSource {  // the 32-element types: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL
  static constexpr int kUnits = 1, kMins = kBlockHasMin<Block> ? 1 : 0;
  static constexpr bool kHalfScales = false;
  static void units(const Block& b, Unit* u) {
    const Unpacked32 p = unpack(b);
    u[0] = {{p.w0, p.w1}, {p.d, p.d}, {p.m, p.m}};
  }
};

template <class Block>
struct K45Units {  // Q4_K, Q5_K: value d sc_j q - dmin min_j
  static constexpr int kUnits = 8, kMins = 1;
  static constexpr bool kHalfScales = false;
  static void units(const Block& b, Unit* u) {
    const float d = half_to_float(b.d), dmin = half_to_float(b.dmin);
    for (int c = 0; c < 4; ++c) {
      int8x16_t lo[2], hi[2];
      k45_pair(b, c, lo, hi);
      for (int h = 0; h < 2; ++h) {
        uint8_t scale, min;
        unpack_q4k_scale(b.scales, 2 * c + h, &scale, &min);
        const float s = d * scale, m = -dmin * min;
        u[2 * c + h] = {{h ? hi[0] : lo[0], h ? hi[1] : lo[1]}, {s, s}, {m, m}};
      }
    }
  }
};
template <>
struct UnitSource<BlockQ4_K> : K45Units<BlockQ4_K> {};
template <>
struct UnitSource<BlockQ5_K> : K45Units<BlockQ5_K> {};

template <>
struct UnitSource<BlockQ6_K> {  // value d sc_s (q - 32), 16-element sub-blocks s
  static constexpr int kUnits = 8, kMins = 0;
  static constexpr bool kHalfScales = true;
  static void units(const BlockQ6_K& b, Unit* u) {
    const float d = half_to_float(b.d);
    for (int j = 0; j < 8; ++j) {
      u[j] = {{}, {d * b.scales[2 * j], d * b.scales[2 * j + 1]}, {0.0f, 0.0f}};
      q6k_unit(b, j / 4, j % 4, u[j].w);
    }
  }
};

template <class Block>
struct K23Units {  // Q3_K: d (sc_s - 32) (q - 4); Q2_K: d sc_s q - dmin m_s
  static constexpr bool kThree = sizeof(Block) == sizeof(BlockQ3_K);
  static constexpr int kUnits = 8, kMins = kThree ? 0 : 2;
  static constexpr bool kHalfScales = true;
  static void units(const Block& b, Unit* u) {
    int8_t scale[16], min[16] = {};
    vst1q_s8(scale, k23_scale_bytes(b));
    const float d = half_to_float(b.d);
    float dmin = 0.0f;
    if constexpr (!kThree) dmin = half_to_float(b.dmin), vst1q_s8(min, k23_min_bytes(b));
    for (int j = 0; j < 8; ++j) {
      u[j] = {{}, {d * static_cast<float>(scale[2 * j]), d * static_cast<float>(scale[2 * j + 1])},
              {-dmin * static_cast<float>(min[2 * j]), -dmin * static_cast<float>(min[2 * j + 1])}};
      k23_unit(b, j, u[j].w);
    }
  }
};
template <>
struct UnitSource<BlockQ2_K> : K23Units<BlockQ2_K> {};
template <>
struct UnitSource<BlockQ3_K> : K23Units<BlockQ3_K> {};

template <>
struct UnitSource<BlockIQ4_XS> {  // value d (scale_j - 32) grid[index]
  static constexpr int kUnits = 8, kMins = 0;
  static constexpr bool kHalfScales = false;
  static void units(const BlockIQ4_XS& b, Unit* u) {
    const float d = half_to_float(b.d);
    for (int j = 0; j < 8; ++j) {
      const float s = d * static_cast<float>(iq4xs_scale(b, j) - 32);
      u[j] = {{}, {s, s}, {0.0f, 0.0f}};
      iq4xs_unit(b, j, u[j].w);
    }
  }
};

// A unit of 4 rows, in one of two layouts: for sdot (kPairs false) q[g] holds
// bytes 4g..4g+3 of rows 0, 1, 2, 3 (group g of the unit's 32 elements); for
// smmla (kPairs true) q[4R + g] holds bytes 8g..8g+7 of rows 2R and 2R + 1.
// s0, s1, m0, m1 one lane a row either way.
struct PanelUnit {
  int8x16_t q[8];
  float32x4_t s0, s1, m0, m1;
};

constexpr int kChunkUnits = 32;  // 1024 columns a chunk: a 6 KiB panel

// 4 rows' 16 bytes as 4 groups of 4: out[g] = [a_g b_g c_g d_g] (a 4 x 4
// transpose of 32-bit lanes).
inline void interleave4(const int8x16_t* rows, int8x16_t* out) {
  const int32x4_t a = vreinterpretq_s32_s8(rows[0]), b = vreinterpretq_s32_s8(rows[1]);
  const int32x4_t c = vreinterpretq_s32_s8(rows[2]), d = vreinterpretq_s32_s8(rows[3]);
  const int64x2_t ab0 = vreinterpretq_s64_s32(vtrn1q_s32(a, b)), ab1 = vreinterpretq_s64_s32(vtrn2q_s32(a, b));
  const int64x2_t cd0 = vreinterpretq_s64_s32(vtrn1q_s32(c, d)), cd1 = vreinterpretq_s64_s32(vtrn2q_s32(c, d));
  out[0] = vreinterpretq_s8_s64(vtrn1q_s64(ab0, cd0));
  out[1] = vreinterpretq_s8_s64(vtrn1q_s64(ab1, cd1));
  out[2] = vreinterpretq_s8_s64(vtrn2q_s64(ab0, cd0));
  out[3] = vreinterpretq_s8_s64(vtrn2q_s64(ab1, cd1));
}

// Blocks [b_begin, b_end) of n_rows (1..4) rows as PanelUnits; absent rows
// are zeros.
template <class Block, bool kPairs>
void pack_panel(const Block* const* rows, int n_rows, int64_t b_begin, int64_t b_end, PanelUnit* out) {
  using Src = UnitSource<Block>;
  for (int64_t blk = b_begin; blk < b_end; ++blk) {
    Unit u[4][Src::kUnits] = {};
    for (int r = 0; r < n_rows; ++r) Src::units(rows[r][blk], u[r]);
    for (int j = 0; j < Src::kUnits; ++j) {
      PanelUnit& p = out[(blk - b_begin) * Src::kUnits + j];
      for (int h = 0; h < 2; ++h) {
        const int8x16_t half[4] = {u[0][j].w[h], u[1][j].w[h], u[2][j].w[h], u[3][j].w[h]};
        if constexpr (kPairs) {  // groups 2h, 2h + 1 of row pairs (0, 1) and (2, 3)
          for (int pair = 0; pair < 2; ++pair) {
            const int64x2_t a = vreinterpretq_s64_s8(half[2 * pair]), b = vreinterpretq_s64_s8(half[2 * pair + 1]);
            p.q[4 * pair + 2 * h] = vreinterpretq_s8_s64(vzip1q_s64(a, b));
            p.q[4 * pair + 2 * h + 1] = vreinterpretq_s8_s64(vzip2q_s64(a, b));
          }
        } else {
          interleave4(half, p.q + 4 * h);
        }
      }
      float s0[4], s1[4], m0[4], m1[4];
      for (int r = 0; r < 4; ++r)
        s0[r] = u[r][j].s[0], s1[r] = u[r][j].s[1], m0[r] = u[r][j].m[0], m1[r] = u[r][j].m[1];
      p.s0 = vld1q_f32(s0), p.s1 = vld1q_f32(s1), p.m0 = vld1q_f32(m0), p.m1 = vld1q_f32(m1);
    }
  }
}

// acc[t] (4 rows) += the panel's n_units units . token t's activation blocks
// act[t][0..n_units). The unit's 8 quant vectors are loaded once for the NT
// tokens, and the sums stay in registers (the token loop unrolled).
struct SdotPanels {
  static constexpr bool kPairs = false;
  template <class Src, int NT>
  static void tile(const PanelUnit* panel, int64_t n_units, const ActBlock* const* act, float32x4_t* acc_io);
};

template <class Src, int NT>
void SdotPanels::tile(const PanelUnit* panel, int64_t n_units, const ActBlock* const* act, float32x4_t* acc_io) {
  float32x4_t acc[NT];
  const ActBlock* tokens[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t] = acc_io[t], tokens[t] = act[t];
  for (int64_t k = 0; k < n_units; ++k) {
    const PanelUnit& p = panel[k];
    int8x16_t q[8];
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) q[g] = p.q[g];
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const ActBlock& a = tokens[t][k];
      const int8x16_t a0 = vld1q_s8(a.q), a1 = vld1q_s8(a.q + 16);
      int32x4_t lo = vdotq_laneq_s32(vdupq_n_s32(0), q[0], a0, 0);
      int32x4_t hi = vdotq_laneq_s32(vdupq_n_s32(0), q[4], a1, 0);
      lo = vdotq_laneq_s32(lo, q[1], a0, 1);
      hi = vdotq_laneq_s32(hi, q[5], a1, 1);
      lo = vdotq_laneq_s32(lo, q[2], a0, 2);
      hi = vdotq_laneq_s32(hi, q[6], a1, 2);
      lo = vdotq_laneq_s32(lo, q[3], a0, 3);
      hi = vdotq_laneq_s32(hi, q[7], a1, 3);
      if constexpr (Src::kHalfScales) {
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(lo), vmulq_n_f32(p.s0, a.d));
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(hi), vmulq_n_f32(p.s1, a.d));
      } else {
        acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(vaddq_s32(lo, hi)), vmulq_n_f32(p.s0, a.d));
      }
      if constexpr (Src::kMins == 1) {
        acc[t] = vfmaq_n_f32(acc[t], p.m0, a.d * static_cast<float>(a.qsum));
      } else if constexpr (Src::kMins == 2) {
        acc[t] = vfmaq_n_f32(acc[t], p.m0, a.d * static_cast<float>(a.qsum_lo));
        acc[t] = vfmaq_n_f32(acc[t], p.m1, a.d * static_cast<float>(a.qsum - a.qsum_lo));
      }
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc_io[t] = acc[t];
}

// Tokens [t0, t0 + nt) of one panel (rows r0..r0 + n_rows) over units
// [k0, k0 + n_units): y[t, r] = (k0 == 0 ? 0 : y[t, r]) + the tile's sums.
template <class Kernel, class Src, int NT>
void panel_tokens(const PanelUnit* panel, int64_t n_units, const ActBlock* act, int64_t units_per_token,
                  int64_t k0, int64_t t0, float* y, int64_t ld_y, int64_t r0, int n_rows) {
  const ActBlock* tokens[NT];
  float32x4_t acc[NT];
  for (int t = 0; t < NT; ++t) {
    tokens[t] = act + (t0 + t) * units_per_token + k0;
    float prior[4] = {};
    if (k0 > 0)
      for (int r = 0; r < n_rows; ++r) prior[r] = y[(t0 + t) * ld_y + r0 + r];
    acc[t] = vld1q_f32(prior);
  }
  Kernel::template tile<Src, NT>(panel, n_units, tokens, acc);
  for (int t = 0; t < NT; ++t) {
    float sums[4];
    vst1q_f32(sums, acc[t]);
    for (int r = 0; r < n_rows; ++r) y[(t0 + t) * ld_y + r0 + r] = sums[r];
  }
}

// Rows [row_begin, row_end) of y = w . x for n_tokens >= 4, in panels, with
// Kernel's layout and tile (SdotPanels; matmul_quant_i8mm_neon.cc's smmla).
template <class Kernel, class Block>
void panel_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  using Src = UnitSource<Block>;
  const int64_t units_per_token = w.cols / kQK, n_blocks = units_per_token / Src::kUnits;
  const int64_t rb = row_bytes(*dtype_info(w.dtype), w.cols);
  constexpr int64_t kChunkBlocks = std::max(1, kChunkUnits / Src::kUnits);
  const int64_t chunk_units = std::min(n_blocks, kChunkBlocks) * Src::kUnits;
  const int64_t token_block = tokens_per_block(chunk_units * static_cast<int64_t>(sizeof(ActBlock)));
  PanelUnit panel[kChunkBlocks * Src::kUnits];
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t tb = 0; tb < n_tokens; tb += token_block) {
    const int64_t te = std::min(n_tokens, tb + token_block);
    for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunkBlocks) {
      const int64_t b1 = std::min(n_blocks, b0 + kChunkBlocks), k0 = b0 * Src::kUnits;
      const int64_t n_units = (b1 - b0) * Src::kUnits;
      for (int64_t r0 = row_begin; r0 < row_end; r0 += 4) {
        const int n_rows = static_cast<int>(std::min<int64_t>(4, row_end - r0));
        const Block* rows[4];
        for (int r = 0; r < n_rows; ++r) rows[r] = reinterpret_cast<const Block*>(base + (r0 + r) * rb);
        pack_panel<Block, Kernel::kPairs>(rows, n_rows, b0, b1, panel);
        for (int64_t t0 = tb; t0 < te; t0 += kTokenTile) {
          with_tile_tokens(static_cast<int>(std::min<int64_t>(kTokenTile, te - t0)), [&]<int NT>() {
            panel_tokens<Kernel, Src, NT>(panel, n_units, act, units_per_token, k0, t0, y, w.rows, r0, n_rows);
          });
        }
      }
    }
  }
}

// Prefill by weight type (quant_rows_dotprod and quant_rows_i8mm send 4 tokens
// or more here).
template <class Kernel>
void panel_rows_of_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                         int64_t row_begin, int64_t row_end) {
  switch (w.dtype) {
    case DType::kQ8_0: return panel_rows<Kernel, BlockQ8_0>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_0: return panel_rows<Kernel, BlockQ4_0>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_1: return panel_rows<Kernel, BlockQ4_1>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0: return panel_rows<Kernel, BlockQ5_0>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1: return panel_rows<Kernel, BlockQ5_1>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_NL: return panel_rows<Kernel, BlockIQ4_NL>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ2_K: return panel_rows<Kernel, BlockQ2_K>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ3_K: return panel_rows<Kernel, BlockQ3_K>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_K: return panel_rows<Kernel, BlockQ4_K>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_K: return panel_rows<Kernel, BlockQ5_K>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ6_K: return panel_rows<Kernel, BlockQ6_K>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_XS: return panel_rows<Kernel, BlockIQ4_XS>(w, act, n_tokens, y, row_begin, row_end);
    default: return rows_of_quant(w, act, n_tokens, y, row_begin, row_end);
  }
}

}  // namespace
}  // namespace llmpack::kernels::neon
