// The NEON row kernels of every block-quantized weight type, written once for
// two instruction sets: included by matmul_quant_neon.cc (base AArch64:
// widening int8 multiplies) and matmul_quant_dotprod_neon.cc (compiled with
// the dot-product extension: sdot). Each includer first defines, in its own
// unnamed namespace, the two int8 primitives the kernels use:
//   int32x4_t dot16(int8x16_t w, const int8_t* x)   lanes sum to w . x[0..15]
//   int32x4_t dot32(int8x16_t w0, int8x16_t w1, const int8_t* x)
//                                                   lanes sum to w0 . x[0..15] + w1 . x[16..31]
// Everything here sits in an unnamed namespace too, so each file compiles its
// own copy for its instruction set and the linker never swaps one for the other.
// The token loops carry `#pragma GCC unroll 4`: without it GCC 12 kept the NT
// accumulators in memory, a load and a store per token and block (about 2-3x
// the cycles of a Q4_0 row-block in llvm-mca's models, docs/PERFORMANCE.md
// section 32).
#pragma once

#include <algorithm>
#include <cstring>

#include "kernels/arm/neon_internal.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::neon {
namespace {

// ---- 32-element blocks: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL ----------------

// A block's 32 quants as int8 (elements 0..15 in w0, 16..31 in w1) with its
// scale d and offset m: value = d * q + m (m = 0 for the types without one).
struct Unpacked32 {
  int8x16_t w0, w1;
  float d, m;
};

// Element i < 16 is the low nibble of qs[i], i >= 16 the high nibble of qs[i - 16].
inline void nibbles(const uint8_t* qs, uint8x16_t* lo, uint8x16_t* hi) {
  const uint8x16_t q = vld1q_u8(qs);
  *lo = vandq_u8(q, vdupq_n_u8(0x0F));
  *hi = vshrq_n_u8(q, 4);
}

// Bit i of the little-endian 32-bit qh as 0x10 in lane i (elements 0..15 in
// h0, 16..31 in h1): the fifth bit of Q5_0 / Q5_1 quants.
inline void fifth_bits(const uint8_t* qh, uint8x16_t* h0, uint8x16_t* h1) {
  static const uint8_t kByte0[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
  static const uint8_t kByte1[16] = {2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};
  static const uint8_t kBit[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
  const uint8x16_t bytes = vcombine_u8(vld1_u8(qh), vld1_u8(qh));  // only lanes 0..3 are read
  const uint8x16_t bit = vld1q_u8(kBit), ten = vdupq_n_u8(0x10);
  *h0 = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(kByte0)), bit), ten);
  *h1 = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(kByte1)), bit), ten);
}

inline int8x16_t s8(uint8x16_t v) { return vreinterpretq_s8_u8(v); }

inline Unpacked32 unpack(const BlockQ8_0& b) {
  return {vld1q_s8(b.qs), vld1q_s8(b.qs + 16), half_to_float(b.d), 0.0f};
}
inline Unpacked32 unpack(const BlockQ4_0& b) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  const int8x16_t eight = vdupq_n_s8(8);
  return {vsubq_s8(s8(lo), eight), vsubq_s8(s8(hi), eight), half_to_float(b.d), 0.0f};
}
inline Unpacked32 unpack(const BlockQ4_1& b) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  return {s8(lo), s8(hi), half_to_float(b.d), half_to_float(b.m)};
}
inline Unpacked32 unpack(const BlockQ5_0& b) {
  uint8x16_t lo, hi, h0, h1;
  nibbles(b.qs, &lo, &hi);
  fifth_bits(b.qh, &h0, &h1);
  const int8x16_t sixteen = vdupq_n_s8(16);
  return {vsubq_s8(s8(vorrq_u8(lo, h0)), sixteen), vsubq_s8(s8(vorrq_u8(hi, h1)), sixteen), half_to_float(b.d),
          0.0f};
}
inline Unpacked32 unpack(const BlockQ5_1& b) {
  uint8x16_t lo, hi, h0, h1;
  nibbles(b.qs, &lo, &hi);
  fifth_bits(b.qh, &h0, &h1);
  return {s8(vorrq_u8(lo, h0)), s8(vorrq_u8(hi, h1)), half_to_float(b.d), half_to_float(b.m)};
}
// IQ4: the nibbles index the non-linear grid kIQ4Values (|value| <= 127).
inline int8x16_t iq4_grid() { return vld1q_s8(kIQ4Values); }
inline Unpacked32 unpack(const BlockIQ4_NL& b) {
  uint8x16_t lo, hi;
  nibbles(b.qs, &lo, &hi);
  const int8x16_t grid = iq4_grid();
  return {vqtbl1q_s8(grid, lo), vqtbl1q_s8(grid, hi), half_to_float(b.d), 0.0f};
}

// One token's activations as prepare_activations lays them out: its int8
// blocks, and the runs of per-block floats after them (neon_internal.h:
// d, d * qsum, the half sums), so that the kernels take 4 blocks' terms
// with one vector load.
struct TokenActs {
  const ActBlock* blocks;
  const float* runs;
};

// The activation scales d_j and d_j * qsum_j of blocks b .. b + 3 of a row of
// n_blocks as float vectors.
template <bool kSums>
inline void act_scales4(const TokenActs& a, int64_t n_blocks, int64_t b, float32x4_t* ad, float32x4_t* adq) {
  *ad = vld1q_f32(a.runs + b);
  if constexpr (kSums) *adq = vld1q_f32(a.runs + n_blocks + b);
}

// The 4 half-precision fields at p, p + stride, ... (bytes) as floats: lane
// loads and one vector convert.
inline float32x4_t halves4(const uint16_t* p, size_t stride) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(p);
  uint16x4_t h = vdup_n_u16(0);
  h = vld1_lane_u16(p, h, 0);
  h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(bytes + stride), h, 1);
  h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(bytes + 2 * stride), h, 2);
  h = vld1_lane_u16(reinterpret_cast<const uint16_t*>(bytes + 3 * stride), h, 3);
  return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

// y_t = row . x_t for NT tokens whose activation blocks start at act[t]. Four
// blocks a step: their 4 dots are folded into one vector of 4 sums (two rounds
// of pairwise adds), so one convert and one multiply-add by the 4 products
// d_w d_x serve 4 blocks (one each before: about 1.5x the instructions a
// block, docs/PERFORMANCE.md section 32); the offset m of Q4_1 / Q5_1 adds
// m * (sum of the block's x) = m * d_x * qsum, four blocks a multiply-add.
// The last n_blocks % 4 blocks go one at a time.
template <class Block, int NT>
void row_32(const Block* w, int64_t n_blocks, const TokenActs* act, float* out) {
  constexpr bool kMin = kBlockHasMin<Block>;
  float32x4_t acc[NT];
  float tail[NT] = {};
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  int64_t b = 0;
  for (; b + 4 <= n_blocks; b += 4) {
    const Unpacked32 u[4] = {unpack(w[b]), unpack(w[b + 1]), unpack(w[b + 2]), unpack(w[b + 3])};
    const float32x4_t dw = halves4(&w[b].d, sizeof(Block));
    float32x4_t mw = vdupq_n_f32(0.0f);
    if constexpr (kMin) mw = halves4(&w[b].m, sizeof(Block));
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const ActBlock* a = act[t].blocks + b;
      const int32x4_t sums = vpaddq_s32(vpaddq_s32(dot32(u[0].w0, u[0].w1, a[0].q), dot32(u[1].w0, u[1].w1, a[1].q)),
                                        vpaddq_s32(dot32(u[2].w0, u[2].w1, a[2].q), dot32(u[3].w0, u[3].w1, a[3].q)));
      float32x4_t ad, adq;
      act_scales4<kMin>(act[t], n_blocks, b, &ad, &adq);
      acc[t] = vfmaq_f32(acc[t], vcvtq_f32_s32(sums), vmulq_f32(dw, ad));
      if constexpr (kMin) acc[t] = vfmaq_f32(acc[t], mw, adq);
    }
  }
  for (; b < n_blocks; ++b) {
    const Unpacked32 u = unpack(w[b]);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      const ActBlock& a = act[t].blocks[b];
      tail[t] += u.d * a.d * static_cast<float>(vaddvq_s32(dot32(u.w0, u.w1, a.q)));
      if constexpr (kMin) tail[t] += u.m * a.d * static_cast<float>(a.qsum);
    }
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]) + tail[t];
}

// ---- 256-element super-blocks ----------------------------------------------

// Lanes of v with bit `mask` set, as `value` (else 0).
inline uint8x16_t bit_as(uint8x16_t v, uint8_t mask, uint8_t value) {
  return vandq_u8(vtstq_u8(v, vdupq_n_u8(mask)), vdupq_n_u8(value));
}

// Q4_K and Q5_K: per 256-element super-block, 8 sub-blocks j of 32
// (activation block 8 sb + j) with value d * scale_j * q - dmin * min_j; the
// min term is dmin * min_j * (sum of x over the sub-block) = ... * a.d * a.qsum.
// Sub-block 2c holds the low nibbles of qs[32c..32c+31], 2c + 1 the high ones;
// Q5_K's fifth bit is bit 2c (2c + 1) of qh[l]. k45_pair gives the quants of
// sub-blocks 2c (lo) and 2c + 1 (hi), elements 0..15 in [0], 16..31 in [1].
template <class Block>
inline void k45_pair(const Block& b, int c, int8x16_t* lo, int8x16_t* hi) {
  constexpr bool kFive = sizeof(Block) == sizeof(BlockQ5_K);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const uint8x16_t q0 = vld1q_u8(b.qs + 32 * c), q1 = vld1q_u8(b.qs + 32 * c + 16);
  uint8x16_t lo0 = vandq_u8(q0, low4), lo1 = vandq_u8(q1, low4);
  uint8x16_t hi0 = vshrq_n_u8(q0, 4), hi1 = vshrq_n_u8(q1, 4);
  if constexpr (kFive) {
    const uint8x16_t qh0 = vld1q_u8(b.qh), qh1 = vld1q_u8(b.qh + 16);
    const auto lo_bit = static_cast<uint8_t>(1u << (2 * c)), hi_bit = static_cast<uint8_t>(2u << (2 * c));
    lo0 = vorrq_u8(lo0, bit_as(qh0, lo_bit, 0x10));
    lo1 = vorrq_u8(lo1, bit_as(qh1, lo_bit, 0x10));
    hi0 = vorrq_u8(hi0, bit_as(qh0, hi_bit, 0x10));
    hi1 = vorrq_u8(hi1, bit_as(qh1, hi_bit, 0x10));
  }
  lo[0] = s8(lo0), lo[1] = s8(lo1), hi[0] = s8(hi0), hi[1] = s8(hi1);
}

// A Q4_K / Q5_K super-block's 8 scales and 8 mins (6 bits each in 12 bytes,
// layout in quant_blocks.h) times d and dmin, as float vectors of sub-blocks
// 0..3 ([0]) and 4..7 ([1]). The 12 bytes as 3 words u: scales 0..3 are
// u0 & 63 per byte, mins 0..3 u1 & 63; scales 4..7 the low nibbles of u2 with
// the top 2 bits of u0's bytes above them, mins 4..7 the high nibbles of u2
// with the top 2 bits of u1's.
inline void k45_scales(const uint8_t* packed, float d, float dmin, float32x4_t* sc, float32x4_t* mn) {
  uint32_t u[3];
  std::memcpy(u, packed, sizeof u);
  const uint32_t s_lo = u[0] & 0x3F3F3F3F, m_lo = u[1] & 0x3F3F3F3F;
  const uint32_t s_hi = (u[2] & 0x0F0F0F0F) | ((u[0] >> 6) & 0x03030303) << 4;
  const uint32_t m_hi = ((u[2] >> 4) & 0x0F0F0F0F) | ((u[1] >> 6) & 0x03030303) << 4;
  const uint16x8_t s16 = vmovl_u8(vcreate_u8(s_lo | uint64_t{s_hi} << 32));
  const uint16x8_t m16 = vmovl_u8(vcreate_u8(m_lo | uint64_t{m_hi} << 32));
  sc[0] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(s16))), d);
  sc[1] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(s16))), d);
  mn[0] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_low_u16(m16))), dmin);
  mn[1] = vmulq_n_f32(vcvtq_f32_u32(vmovl_u16(vget_high_u16(m16))), dmin);
}

// The same for blocks b .. b + 7: b .. b + 3 in [0], b + 4 .. b + 7 in [1].
inline void act_scales8(const TokenActs& a, int64_t n_blocks, int64_t b, float32x4_t* ad, float32x4_t* adq) {
  act_scales4<true>(a, n_blocks, b, &ad[0], &adq[0]);
  act_scales4<true>(a, n_blocks, b + 4, &ad[1], &adq[1]);
}

// Per super-block the 8 products d sc_j a.d_j come out as two vectors
// (k45_scales, act_scales8) and each sub-block's dot takes one convert and
// one multiply-add by a lane of them; the mins leave as two multiply-subtracts
// of dmin m_j by a.d_j qsum_j. (Scalar scale unpacking and per-sub-block
// scalar products took about half of the instructions of a super-block:
// docs/PERFORMANCE.md section 32.)
template <class Block, int NT>
void row_k45(const Block* w, int64_t n_super, const TokenActs* act, float* out) {
  float32x4_t acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const Block& b = w[sb];
    float32x4_t sc[2], mn[2], f[NT][2];
    k45_scales(b.scales, half_to_float(b.d), half_to_float(b.dmin), sc, mn);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      float32x4_t ad[2], adq[2];
      act_scales8(act[t], 8 * n_super, 8 * sb, ad, adq);
      f[t][0] = vmulq_f32(sc[0], ad[0]), f[t][1] = vmulq_f32(sc[1], ad[1]);
      acc[t] = vfmsq_f32(vfmsq_f32(acc[t], mn[0], adq[0]), mn[1], adq[1]);
    }
    // pair c: sub-blocks 2c and 2c + 1, lanes 2c % 4 and + 1 of f[t][c / 2]
    const auto pair = [&]<int C>() {
      int8x16_t lo[2], hi[2];
      k45_pair(b, C, lo, hi);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        const ActBlock& a = act[t].blocks[8 * sb + 2 * C];
        const ActBlock& h = act[t].blocks[8 * sb + 2 * C + 1];
        acc[t] = vfmaq_laneq_f32(acc[t], vcvtq_f32_s32(dot32(lo[0], lo[1], a.q)), f[t][C / 2], 2 * C % 4);
        acc[t] = vfmaq_laneq_f32(acc[t], vcvtq_f32_s32(dot32(hi[0], hi[1], h.q)), f[t][C / 2], 2 * C % 4 + 1);
      }
    };
    for_constants<4>(pair);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// Q6_K: per half h of 128 elements, group g of 32 (activation block
// 8 sb + 4h + g): low 4 bits from ql[64h + 32(g & 1) + l] (low nibble for
// g < 2, high for g >= 2), high 2 bits from (qh[32h + l] >> 2g) & 3; value
// d * scales[8h + 2g + l / 16] * (q - 32). q6k_unit gives q - 32 of unit
// 4h + g, elements 0..15 in w[0], 16..31 in w[1].
inline void q6k_unit(const BlockQ6_K& b, int h, int g, int8x16_t* w) {
  const uint8x16_t low4 = vdupq_n_u8(0x0F), low2 = vdupq_n_u8(0x03);
  const uint8_t* ql = b.ql + 64 * h;
  const uint8x16_t qh0 = vld1q_u8(b.qh + 32 * h), qh1 = vld1q_u8(b.qh + 32 * h + 16);
  uint8x16_t l0 = vld1q_u8(ql + 32 * (g & 1)), l1 = vld1q_u8(ql + 32 * (g & 1) + 16);
  l0 = g < 2 ? vandq_u8(l0, low4) : vshrq_n_u8(l0, 4);
  l1 = g < 2 ? vandq_u8(l1, low4) : vshrq_n_u8(l1, 4);
  const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-2 * g));  // vshl by a negative count shifts right
  const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(qh0, down), low2), 4);
  const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(qh1, down), low2), 4);
  const int8x16_t bias = vdupq_n_s8(32);
  w[0] = vsubq_s8(s8(vorrq_u8(l0, h0)), bias);
  w[1] = vsubq_s8(s8(vorrq_u8(l1, h1)), bias);
}

// 16 signed byte scales times d as 4 float vectors ([k]: scales 4k..4k+3).
inline void scales16(int8x16_t s, float d, float32x4_t* out) {
  const int16x8_t lo = vmovl_s8(vget_low_s8(s)), hi = vmovl_high_s8(s);
  out[0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d);
  out[1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d);
  out[2] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d);
  out[3] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d);
}

// Q6_K's 16 sub-block scales times d as 4 float vectors (sub-blocks 4k..4k+3 in [k]).
inline void q6k_scales(const BlockQ6_K& b, float d, float32x4_t* sc) { scales16(vld1q_s8(b.scales), d, sc); }

// Q2_K and Q3_K: unit j = 4n + k (activation block 8 sb + j) takes bits
// 2k, 2k + 1 of qs[32n + l]; Q2_K: value d * sc_s * q - dmin * m_s with 4-bit
// scale and min per 16-element sub-block s (2j, 2j + 1); Q3_K: the third bit
// of element l at bit j of hmask[l], value d * (sc_s - 32) * (q - 4).
// k23_unit gives unit j's q (Q2_K) or q - 4 (Q3_K), elements 0..15 in w[0].
template <class Block>
inline void k23_unit(const Block& b, int j, int8x16_t* w) {
  const int n = j / 4, k = j % 4;
  const uint8x16_t low2 = vdupq_n_u8(0x03);
  const uint8x16_t q0 = vld1q_u8(b.qs + 32 * n), q1 = vld1q_u8(b.qs + 32 * n + 16);
  const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-2 * k));
  const uint8x16_t u0 = vandq_u8(vshlq_u8(q0, down), low2), u1 = vandq_u8(vshlq_u8(q1, down), low2);
  if constexpr (sizeof(Block) == sizeof(BlockQ3_K)) {
    const auto bit = static_cast<uint8_t>(1u << j);
    const int8x16_t four = vdupq_n_s8(4);
    w[0] = vsubq_s8(s8(vorrq_u8(u0, bit_as(vld1q_u8(b.hmask), bit, 4))), four);
    w[1] = vsubq_s8(s8(vorrq_u8(u1, bit_as(vld1q_u8(b.hmask + 16), bit, 4))), four);
  } else {
    w[0] = s8(u0), w[1] = s8(u1);
  }
}

// The 16 sub-block scales as signed bytes: Q2_K's low nibbles of scales[]
// (its mins are the high nibbles), Q3_K's q3k_scale - 32, its 12 bytes read as
// three little-endian words w and remixed into four: the low nibbles of w0
// and w1 (sub-blocks 0..7), then their high nibbles (8..15), each byte with its
// 2 high bits from w2.
inline int8x16_t k23_scale_bytes(const BlockQ2_K& b) {
  return s8(vandq_u8(vld1q_u8(b.scales), vdupq_n_u8(0x0F)));
}
inline int8x16_t k23_min_bytes(const BlockQ2_K& b) { return s8(vshrq_n_u8(vld1q_u8(b.scales), 4)); }
inline int8x16_t k23_scale_bytes(const BlockQ3_K& b) {
  uint32_t w[3];
  std::memcpy(w, b.scales, sizeof w);
  const uint32_t lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
  const uint32_t words[4] = {(w[0] & lo4) | (w[2] & lo2) << 4, (w[1] & lo4) | ((w[2] >> 2) & lo2) << 4,
                             ((w[0] >> 4) & lo4) | ((w[2] >> 4) & lo2) << 4,
                             ((w[1] >> 4) & lo4) | ((w[2] >> 6) & lo2) << 4};
  return vsubq_s8(vreinterpretq_s8_u32(vld1q_u32(words)), vdupq_n_s8(32));
}

// How Q6_K, Q3_K and Q2_K give the row kernel below their super-blocks: the 16
// sub-block scales times d as 4 float vectors (sub-blocks 4k..4k+3 in [k]),
// Q2_K's 16 mins times dmin the same way (kMins), and unit 4H + G's quants.
struct Q6_KSub16 {
  using Block = BlockQ6_K;
  static constexpr bool kMins = false;
  static void scales(const Block& b, float32x4_t* sc, float32x4_t*) { q6k_scales(b, half_to_float(b.d), sc); }
  template <int H, int G>
  static void unit(const Block& b, int8x16_t* q) {
    q6k_unit(b, H, G, q);
  }
};
template <class K23Block>
struct K23Sub16 {
  using Block = K23Block;
  static constexpr bool kMins = sizeof(Block) == sizeof(BlockQ2_K);
  static void scales(const Block& b, float32x4_t* sc, float32x4_t* mn) {
    scales16(k23_scale_bytes(b), half_to_float(b.d), sc);
    if constexpr (kMins) scales16(k23_min_bytes(b), half_to_float(b.dmin), mn);
  }
  template <int H, int G>
  static void unit(const Block& b, int8x16_t* q) {
    k23_unit(b, 4 * H + G, q);
  }
};

// Super-blocks of 16 sub-blocks of 16 (Q6_K, Q3_K, Q2_K). Per half H of a
// super-block the 8 products d sc_s a.d_j (s = 2j, 2j + 1 for the half's units
// j) come out as two vectors, and each 16-element half of a unit takes one
// sdot, one convert and one multiply-add by a lane of them; Q2_K's mins leave
// as two multiply-subtracts a half by dmin m_s times a.d_j and the 16-element
// sums. The unit loop is unrolled (template lambdas) so every shift and lane
// is a constant. (The loop with integer scale multiplies ran about 45
// instructions a Q6_K unit: docs/PERFORMANCE.md section 32.)
template <class Src, int NT>
void row_sub16(const typename Src::Block* w, int64_t n_super, const TokenActs* act, float* out) {
  float32x4_t acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const auto& b = w[sb];
    float32x4_t sc[4], mn[4];
    Src::scales(b, sc, mn);
    const auto half = [&]<int H>() {
      float32x4_t f[NT][2];  // units 4H + g use lanes 2(g % 2), + 1 of f[g / 2]
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t) {
        float32x4_t ad, unused;
        act_scales4<false>(act[t], 8 * n_super, 8 * sb + 4 * H, &ad, &unused);
        const float32x4_t ad0 = vzip1q_f32(ad, ad), ad1 = vzip2q_f32(ad, ad);
        f[t][0] = vmulq_f32(sc[2 * H], ad0);
        f[t][1] = vmulq_f32(sc[2 * H + 1], ad1);
        if constexpr (Src::kMins) {  // d times the 16-element half sums: [lo0 hi0 lo1 hi1], [lo2 hi2 lo3 hi3]
          const float* halves = act[t].runs + 2 * (8 * n_super) + 2 * (8 * sb + 4 * H);
          acc[t] = vfmsq_f32(acc[t], mn[2 * H], vld1q_f32(halves));
          acc[t] = vfmsq_f32(acc[t], mn[2 * H + 1], vld1q_f32(halves + 4));
        }
      }
      const auto unit = [&]<int G>() {
        int8x16_t q[2];
        Src::template unit<H, G>(b, q);
#pragma GCC unroll 4
        for (int t = 0; t < NT; ++t) {
          const ActBlock& a = act[t].blocks[8 * sb + 4 * H + G];
          acc[t] = vfmaq_laneq_f32(acc[t], vcvtq_f32_s32(dot16(q[0], a.q)), f[t][G / 2], 2 * (G % 2));
          acc[t] = vfmaq_laneq_f32(acc[t], vcvtq_f32_s32(dot16(q[1], a.q + 16)), f[t][G / 2], 2 * (G % 2) + 1);
        }
      };
      for_constants<4>(unit);
    };
    for_constants<2>(half);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// IQ4_XS: 8 sub-blocks of 32, each an IQ4_NL block's indices (qs[16j..]),
// value d * (scale_j - 32) * kIQ4Values[index]; iq4xs_unit gives unit j's
// grid values, elements 0..15 in w[0].
inline void iq4xs_unit(const BlockIQ4_XS& b, int j, int8x16_t* w) {
  uint8x16_t lo, hi;
  nibbles(b.qs + 16 * j, &lo, &hi);
  const int8x16_t grid = iq4_grid();
  w[0] = vqtbl1q_s8(grid, lo), w[1] = vqtbl1q_s8(grid, hi);
}

// IQ4_XS's 8 sub-block scales (scale_j - 32) times d as two float vectors
// (sub-blocks 0..3, 4..7): the low 4 bits are nibble j % 2 of scales_l[j / 2]
// (the even and odd nibbles zipped), the high 2 bits bits 2j, 2j + 1 of
// scales_h (one variable shift of 8 copies).
inline void iq4xs_scales(const BlockIQ4_XS& b, float d, float32x4_t* sc) {
  uint32_t l;
  std::memcpy(&l, b.scales_l, sizeof l);
  const uint8x8_t low = vzip1_u8(vcreate_u8(l & 0x0F0F0F0Fu), vcreate_u8((l >> 4) & 0x0F0F0F0Fu));
  static const int16_t kDown[8] = {0, -2, -4, -6, -8, -10, -12, -14};
  const uint16x8_t h = vandq_u16(vshlq_u16(vdupq_n_u16(b.scales_h), vld1q_s16(kDown)), vdupq_n_u16(3));
  const int16x8_t s = vsubq_s16(vreinterpretq_s16_u16(vmovl_u8(vorr_u8(low, vshl_n_u8(vmovn_u16(h), 4)))),
                                vdupq_n_s16(32));
  sc[0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(s))), d);
  sc[1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(s)), d);
}

// As row_k45 without mins: the 8 products d (scale_j - 32) a.d_j as two
// vectors, one convert and one lane multiply-add a unit.
template <int NT>
void row_iq4_xs(const BlockIQ4_XS* w, int64_t n_super, const TokenActs* act, float* out) {
  float32x4_t acc[NT];
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockIQ4_XS& b = w[sb];
    float32x4_t sc[2], f[NT][2];
    iq4xs_scales(b, half_to_float(b.d), sc);
#pragma GCC unroll 4
    for (int t = 0; t < NT; ++t) {
      float32x4_t ad[2], unused;
      act_scales4<false>(act[t], 8 * n_super, 8 * sb, &ad[0], &unused);
      act_scales4<false>(act[t], 8 * n_super, 8 * sb + 4, &ad[1], &unused);
      f[t][0] = vmulq_f32(sc[0], ad[0]), f[t][1] = vmulq_f32(sc[1], ad[1]);
    }
    const auto unit = [&]<int J>() {
      int8x16_t q[2];
      iq4xs_unit(b, J, q);
#pragma GCC unroll 4
      for (int t = 0; t < NT; ++t)
        acc[t] = vfmaq_laneq_f32(acc[t], vcvtq_f32_s32(dot32(q[0], q[1], act[t].blocks[8 * sb + J].q)), f[t][J / 4], J % 4);
    };
    for_constants<8>(unit);
  }
#pragma GCC unroll 4
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// One row against NT tokens, by weight type.
template <int NT>
void quant_row(DType dtype, const void* row, int64_t cols, const TokenActs* act, float* out) {
  const int64_t nb = cols / kQK, ns = cols / kQKK;
  switch (dtype) {
    case DType::kQ8_0: return row_32<BlockQ8_0, NT>(static_cast<const BlockQ8_0*>(row), nb, act, out);
    case DType::kQ4_0: return row_32<BlockQ4_0, NT>(static_cast<const BlockQ4_0*>(row), nb, act, out);
    case DType::kQ4_1: return row_32<BlockQ4_1, NT>(static_cast<const BlockQ4_1*>(row), nb, act, out);
    case DType::kQ5_0: return row_32<BlockQ5_0, NT>(static_cast<const BlockQ5_0*>(row), nb, act, out);
    case DType::kQ5_1: return row_32<BlockQ5_1, NT>(static_cast<const BlockQ5_1*>(row), nb, act, out);
    case DType::kIQ4_NL: return row_32<BlockIQ4_NL, NT>(static_cast<const BlockIQ4_NL*>(row), nb, act, out);
    case DType::kQ2_K: return row_sub16<K23Sub16<BlockQ2_K>, NT>(static_cast<const BlockQ2_K*>(row), ns, act, out);
    case DType::kQ3_K: return row_sub16<K23Sub16<BlockQ3_K>, NT>(static_cast<const BlockQ3_K*>(row), ns, act, out);
    case DType::kQ4_K: return row_k45<BlockQ4_K, NT>(static_cast<const BlockQ4_K*>(row), ns, act, out);
    case DType::kQ5_K: return row_k45<BlockQ5_K, NT>(static_cast<const BlockQ5_K*>(row), ns, act, out);
    case DType::kQ6_K: return row_sub16<Q6_KSub16, NT>(static_cast<const BlockQ6_K*>(row), ns, act, out);
    case DType::kIQ4_XS: return row_iq4_xs<NT>(static_cast<const BlockIQ4_XS*>(row), ns, act, out);
    default: return;  // supports() admits only the types above
  }
}

// Rows [row_begin, row_end) of y = w . x, up to tile_tokens (<= kTokenTile)
// tokens per pass over a row, a block of tokens (tokens_per_block) at a time.
void rows_of_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                   int64_t row_end, int tile_tokens = kTokenTile) {
  const int64_t rb = row_bytes(*dtype_info(w.dtype), w.cols), n_blocks = w.cols / kQK;
  const auto* base = static_cast<const uint8_t*>(w.data);
  rows_in_token_blocks(n_tokens, n_blocks * static_cast<int64_t>(sizeof(ActBlock)), row_begin, row_end, y, w.rows,
                       tile_tokens, [&]<int NT>(int64_t r, int64_t t0, float* out) {
                         TokenActs tokens[NT];
                         for (int t = 0; t < NT; ++t)
                           tokens[t] = {act + (t0 + t) * n_blocks, activation_runs(act, n_tokens, n_blocks, t0 + t)};
                         quant_row<NT>(w.dtype, base + r * rb, w.cols, tokens, out);
                       });
}

}  // namespace
}  // namespace llmpack::kernels::neon
