// AVX2 matmul for block-quantized weights (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and their grouped
// layouts, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL here; IQ4_XS decode in matmul_lowbit_avx2.cc).
// Activations are first quantized per 32-element block to int8 with one f32
// scale (ActBlock); each weight sub-block of 32 is unpacked to 32 int8 (or
// uint8) lanes and dotted with _mm256_maddubs_epi16 + _mm256_madd_epi16.
// This file has the paths for fewer tokens than a packed prefill tile
// (matmul_packed_avx2.cc): each weight row streams once per token (decode).
// Q4_0 and Q4_K sum 8 blocks' integer dots into one vector before a single
// convert and FMA (fold_tree); Q4_0 also reads two blocks a load against the
// paired copy of the activations (PairedActs in avx2_internal.h).

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/grouped_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/lowbit_quants.h"
#include "kernels/x86/q4k_scales.h"
#include "kernels/x86/q5_bits.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// One weight block of 32 ready for the integer dot; ws is its float scale.
// (Q4_K and Q6_K decode have their own loops below.)
struct Sub {
  __m256i q;
  float ws;
};

// sum over 32 lanes of w * a as 8 int32 lanes. Signed w uses the sign trick
// (maddubs needs one unsigned operand): |w| * (a * sign(w)).
template <bool kUnsigned>
inline __m256i idot(const Sub& s, __m256i a) {
  __m256i p16;
  if constexpr (kUnsigned) {
    p16 = _mm256_maddubs_epi16(s.q, a);
  } else {
    p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(s.q, s.q), _mm256_sign_epi8(a, s.q));
  }
  return _mm256_madd_epi16(p16, _mm256_set1_epi16(1));
}

struct Q8_0Dec {
  static constexpr int kBytes = sizeof(BlockQ8_0);
  static void unpack(const uint8_t* p, Sub* s) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
    s[0].q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
    s[0].ws = half_to_float(b->d);
  }
};

// IQ4_NL: the indices looked up in the grid (one vpshufb), then as Q8_0.
struct IQ4_NLDec {
  static constexpr int kBytes = sizeof(BlockIQ4_NL);
  static void unpack(const uint8_t* p, Sub* s) {
    const auto* b = reinterpret_cast<const BlockIQ4_NL*>(p);
    s[0].q = x86::iq4_values(b->qs, x86::iq4_table());
    s[0].ws = half_to_float(b->d);
  }
};

struct Q4_0Dec {
  static constexpr int kBytes = sizeof(BlockQ4_0);
  static void unpack(const uint8_t* p, Sub* s) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(p);
    // The 16 bytes in both halves, the upper half shifted right by 4, then the
    // low nibbles: elements 0..15 below, 16..31 above (two ALU ops).
    const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs)));
    const __m256i shifted = _mm256_srlv_epi32(raw, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    // kept unsigned (0..15): maddubs takes it directly, and the -8 offset is
    // applied as -8 * d * qsum
    s[0].q = _mm256_and_si256(shifted, _mm256_set1_epi8(0x0F));
    s[0].ws = half_to_float(b->d);
  }
};

// The 8 f16 scales of 8 blocks starting at p (kBlockBytes apart), as floats.
template <int kBlockBytes>
inline __m256 block_scales(const uint8_t* p) {
  uint16_t d16[8];
  for (int j = 0; j < 8; ++j) std::memcpy(&d16[j], p + j * kBlockBytes, sizeof(uint16_t));
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d16)));
}

// Decode of one Q8_0 (or IQ4_NL) row against one token's activations, 8 blocks a step:
// row . x = sum_b ws_b a.d_b (q_b . a_b). The 8 weight scales of a step are
// converted together (one vcvtph2ps) and multiplied by the 8 activation
// scales (act_floats), so a block costs its load, one integer dot, one
// convert and one FMA. Two accumulators: with one, each FMA waited for the
// previous one's result.
template <class Dec>
float signed_row(const uint8_t* row, int64_t n_blocks, const TokenActs& a) {
  const ActBlock* act = a.a;
  const float* act_d = a.ad;
  constexpr int kB = Dec::kBytes;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t b = 0;
  for (; b + 8 <= n_blocks; b += 8) {
    const uint8_t* p = row + b * kB;
    // rows lie back to back, so this runs on into the next rows
    prefetch_bytes(p + kDecodePrefetchBytes, 8 * kB);
    alignas(32) float scale[8];
    _mm256_store_ps(scale, _mm256_mul_ps(block_scales<kB>(p), _mm256_loadu_ps(act_d + b)));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      Sub s;
      Dec::unpack(p + j * kB, &s);
      const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[b + j].q));
      const __m256 prod = _mm256_cvtepi32_ps(idot<false>(s, aq));
      acc[j & 1] = _mm256_fmadd_ps(prod, _mm256_broadcast_ss(scale + j), acc[j & 1]);
    }
  }
  for (; b < n_blocks; ++b) {  // the last n_blocks % 8, one at a time
    Sub s;
    Dec::unpack(row + b * kB, &s);
    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[b].q));
    const __m256 prod = _mm256_cvtepi32_ps(idot<false>(s, aq));
    acc[0] = _mm256_fmadd_ps(prod, _mm256_set1_ps(s.ws * act_d[b]), acc[0]);
  }
  return hsum(_mm256_add_ps(acc[0], acc[1]));
}

// Sums of vpmaddubsw results by shuffles and int16 adds. Per 128-bit half,
// p[k] holds 8 int16 lanes of one block (its part of that half); the result's
// int32 lane k of each half is the sum of p[k]'s 8 lanes there. Two folds
// (vpunpck + vpaddw) leave 2 lanes per block and one vpmaddwd adds them: one
// multiply-port instruction for the 4 vectors where a vpmaddwd per vector and a
// vpackssdw + vpmaddwd tree took 7 (the multiply ports also run every
// vpmaddubsw). Each input lane must be at most 7620 (a sum of 4 products of a
// nibble and an int8), so that the 2 lanes left, sums of 4, stay below 2^15.
// Per 128-bit half, int32 elements (pairs of int16) [a0 a1 a2 a3], [b0 b1 b2 b3]
// -> [a0+a2, b0+b2, a1+a3, b1+b3], added as int16 (Q6_K's decode uses it too).
inline __m256i fold32(__m256i a, __m256i b) {
  return _mm256_add_epi16(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}

inline __m256i fold_tree(const __m256i* p) {
  // [x0 x1 x2 x3], [y0 y1 y2 y3] -> [x0+x2, x1+x3, y0+y2, y1+y3]: blocks 0 1 2 3
  const auto fold64 = [](__m256i x, __m256i y) {
    return _mm256_add_epi16(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
  };
  return _mm256_madd_epi16(fold64(fold32(p[0], p[1]), fold32(p[2], p[3])), _mm256_set1_epi16(1));
}

// Decode of one Q4_0 row against one token's paired activations (PairedActs),
// 8 blocks a step: row . x = sum_b ws_b a.d_b (q_b . a_b) - 8 sum_b ws_b a.d_b qsum_b.
// A 256-bit load holds the nibbles of two blocks A, B; its low nibbles are
// A's and B's elements 0..15, its high ones 16..31, matching the paired
// activations, so one vpmaddubsw each and an add give both blocks' sums of
// pairs. The 8 blocks' integer dots are then summed in the integer domain
// (fold_tree: unsigned nibbles keep every partial sum below 2^15) into the 8
// lanes of one vector, so one convert and one FMA with the 8 scale products
// serve 8 blocks. The lanes come out in kPairLaneBlock order (A blocks in the
// low half, B blocks in the high one), as the paired scales are stored.
// 20-25% faster than a dot, convert and FMA per block from L1/L2
// (docs/PERFORMANCE.md section 13); fold_tree instead of a vpackssdw +
// vpmaddwd tree 1.01-1.10x more (section 17).
float q4_0_row(const uint8_t* row, int64_t n_blocks, const TokenActs& a) {
  const PairedActs& pa = a.paired;
  constexpr int kB = Q4_0Dec::kBytes;
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps();
  const int64_t n_paired = paired_blocks(n_blocks);
  for (int64_t b = 0; b < n_paired; b += 8) {
    const uint8_t* p = row + b * kB;
    prefetch_bytes(p + kDecodePrefetchBytes, 8 * kB);
    const __m256 ws = x86::q4_0_scales_paired(p);
    offset = _mm256_fmadd_ps(ws, _mm256_loadu_ps(pa.dsum + b), offset);
    __m256i sums[4];  // [A: 8 int16 sums of 4 products | B: 8 of 4], each <= 7620
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const auto* ba = reinterpret_cast<const BlockQ4_0*>(p + 2 * i * kB);
      const auto* bb = reinterpret_cast<const BlockQ4_0*>(p + (2 * i + 1) * kB);
      const __m256i raw = _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(bb->qs),
                                              reinterpret_cast<const __m128i*>(ba->qs));
      const __m256i lo = _mm256_and_si256(raw, mask);
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask);
      const int8_t* aq = pa.q + (b + 2 * i) * 32;
      const __m256i p16 = _mm256_add_epi16(
          _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq))),
          _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32))));
      sums[i] = p16;
    }
    const __m256i dots = fold_tree(sums);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(ws, _mm256_loadu_ps(pa.d + b)), acc);
  }
  // The last n_blocks % 8, one at a time, into the same vector sums: a
  // reduction per block cost SmolLM2's 576-column rows (18 blocks) about a
  // quarter of their rate (docs/PERFORMANCE.md section 24).
  float tail_offset = 0.0f;
  for (int64_t b = n_paired; b < n_blocks; ++b) {
    Sub s;
    Q4_0Dec::unpack(row + b * kB, &s);
    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.a[b].q));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(idot<true>(s, aq)), _mm256_set1_ps(s.ws * a.ad[b]), acc);
    tail_offset += s.ws * a.adq[b];
  }
  return hsum(_mm256_fmadd_ps(offset, _mm256_set1_ps(-8.0f), acc)) - 8.0f * tail_offset;
}

// Decode of one IQ4_NL row (Q4_0's layout, signed grid values): 8 blocks a
// step as q4_0_row, the pairs of blocks' nibbles read with one load and
// dotted against the paired activations (x86::iq4_dots8), one convert and FMA
// per step; the tail as Q8_0's (signed_row). In the decode driver (256 x 2048
// in L2, one core) 19.3-19.4 GB/s against 13.9-16.4 for the per-block loop
// (docs/PERFORMANCE.md section 28).
float iq4nl_row(const uint8_t* row, int64_t n_blocks, const TokenActs& a) {
  const PairedActs& pa = a.paired;
  constexpr int kB = sizeof(BlockIQ4_NL);
  const __m256i table = x86::iq4_table();
  __m256 acc = _mm256_setzero_ps();
  const int64_t n_paired = paired_blocks(n_blocks);
  for (int64_t b = 0; b < n_paired; b += 8) {
    const uint8_t* p = row + b * kB;
    prefetch_bytes(p + kDecodePrefetchBytes, 8 * kB);
    const auto pair = [&](int i) {
      const auto* ba = reinterpret_cast<const BlockIQ4_NL*>(p + 2 * i * kB);
      const auto* bb = reinterpret_cast<const BlockIQ4_NL*>(p + (2 * i + 1) * kB);
      return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(bb->qs), reinterpret_cast<const __m128i*>(ba->qs));
    };
    const __m256i dots = x86::iq4_dots8(pair, pa.q + b * 32, table);
    const __m256 scale = _mm256_mul_ps(x86::q4_0_scales_paired(p), _mm256_loadu_ps(pa.d + b));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), scale, acc);
  }
  float tail = 0.0f;
  if (n_paired < n_blocks) {
    const TokenActs rest{a.a + n_paired, a.ad + n_paired, a.adq + n_paired, a.hs + 2 * n_paired, pa};
    tail = signed_row<IQ4_NLDec>(row + n_paired * kB, n_blocks - n_paired, rest);
  }
  return hsum(acc) + tail;
}

// The unsigned quants of a Q4_1, Q5_0 or Q5_1 block as 32 bytes.
template <class Block>
inline __m256i offset_block_quants(const uint8_t* blk) {
  const auto* b = reinterpret_cast<const Block*>(blk);
  if constexpr (kBlockHasQh<Block>)
    return x86::q5_quants(b->qs, b->qh);
  else
    return x86::q4_quants(b->qs);
}

// Decode of one Q4_1, Q5_0 or Q5_1 row against one token, 8 blocks a step as
// q8_0_row: q is kept unsigned (0..31; a vpmaddubsw lane is at most
// 2 * 31 * 127), so row . x = sum_b d_b a.d_b (q_b . a_b) + k sum_b w_b a.d_b qsum_b
// with k w_b = -16 d_b (Q5_0) or m_b (Q4_1, Q5_1): the offsets go into one
// vector FMA per step from the activations' d * qsum floats.
template <class Block>
float offset_row(const uint8_t* row, int64_t n_blocks, const TokenActs& a) {
  constexpr bool kHasMin = kBlockHasMin<Block>;
  constexpr int kB = sizeof(Block);
  constexpr float kOffset = kHasMin ? 1.0f : -16.0f;  // per unit of w_b a.d_b qsum_b
  constexpr int kW = kHasMin ? 2 : 0;  // the byte of w_b: m (after d), or d
  const ActBlock* act = a.a;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, offset = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= n_blocks; b += 8) {
    const uint8_t* p = row + b * kB;
    prefetch_bytes(p + kDecodePrefetchBytes, 8 * kB);
    const __m256 d = block_scales<kB>(p);
    const __m256 w = kHasMin ? block_scales<kB>(p + kW) : d;
    offset = _mm256_fmadd_ps(w, _mm256_loadu_ps(a.adq + b), offset);
    alignas(32) float scale[8];
    _mm256_store_ps(scale, _mm256_mul_ps(d, _mm256_loadu_ps(a.ad + b)));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i q = offset_block_quants<Block>(p + j * kB);
      const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[b + j].q));
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(q, aq), ones));
      acc[j & 1] = _mm256_fmadd_ps(dot, _mm256_broadcast_ss(scale + j), acc[j & 1]);
    }
  }
  float tail_offset = 0.0f;
  for (; b < n_blocks; ++b) {  // the last n_blocks % 8, one at a time
    const uint8_t* blk = row + b * kB;
    uint16_t d16, w16;
    std::memcpy(&d16, blk, 2);
    std::memcpy(&w16, blk + kW, 2);
    const __m256i q = offset_block_quants<Block>(blk);
    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[b].q));
    const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(q, aq), ones));
    acc[0] = _mm256_fmadd_ps(dot, _mm256_set1_ps(half_to_float(d16) * a.ad[b]), acc[0]);
    tail_offset += half_to_float(w16) * a.adq[b];
  }
  const __m256 sum = _mm256_fmadd_ps(offset, _mm256_set1_ps(kOffset), _mm256_add_ps(acc[0], acc[1]));
  return hsum(sum) + kOffset * tail_offset;
}

// Decode of one grouped Q5_0 / Q5_1 row (kQ5_0x8, kQ5_1x8; layout in
// kernels/grouped_blocks.h) against one token's paired activations, a group
// of 8 blocks a step. Pair i's qs (blocks 2i, 2i + 1) are one 32-byte load:
// the low nibbles line up with the paired activations' first 32 bytes, the
// high ones with the next 32, as in q4_0_row; their fifth bits are bits i and
// 4 + i of the group's 32 sliced bytes, brought to bit 4 by one 16-bit shift
// each (bits crossing from the other byte land outside 0x10). Each vpmaddubsw
// lane is at most 2 * 31 * 127 = 7874, the two of a pair add up in int16
// (<= 15748), and one fold of two pairs (<= 31496) goes to a vpmaddwd; the 8
// dots then take one convert and one FMA with the 8 scales, stored in the
// paired lanes' order (one 16-byte load). The offset (-16 d, or the min m) is
// one FMA a group from the paired d * qsum. The blocks after the last whole
// group are plain: offset_row takes them. 1.7-1.8x offset_row on the plain
// layout in the decode driver (docs/PERFORMANCE.md section 31).
template <class Block>
float grouped_q5_row(const uint8_t* row, int64_t n_blocks, const TokenActs& a) {
  constexpr bool kHasMin = kBlockHasMin<Block>;
  using Group = std::conditional_t<kHasMin, GroupQ5_1, GroupQ5_0>;
  const PairedActs& pa = a.paired;
  const __m256i mask = _mm256_set1_epi8(0x0F), bit4 = _mm256_set1_epi8(0x10), ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps();
  const int64_t n_grouped = paired_blocks(n_blocks);
  static_assert(kGroupBlocks == 8 && kPairLaneBlock[1] == kGroupLane[1] && kPairLaneBlock[4] == kGroupLane[4]);
  for (int64_t b = 0; b < n_grouped; b += kGroupBlocks) {
    const auto& g = *reinterpret_cast<const Group*>(row + b * sizeof(Block));
    prefetch_bytes(reinterpret_cast<const char*>(&g) + kDecodePrefetchBytes, sizeof(Group));
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.d)));
    __m256 w = d;
    if constexpr (kHasMin) w = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(g.m)));
    offset = _mm256_fmadd_ps(w, _mm256_loadu_ps(pa.dsum + b), offset);
    const __m256i fifth = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.fifth));
    // bit i (low nibbles) and bit 4 + i (high nibbles) of pair i at bit 4
    const __m256i lo_bits[4] = {_mm256_slli_epi16(fifth, 4), _mm256_slli_epi16(fifth, 3),
                                _mm256_slli_epi16(fifth, 2), _mm256_slli_epi16(fifth, 1)};
    const __m256i hi_bits[4] = {fifth, _mm256_srli_epi16(fifth, 1), _mm256_srli_epi16(fifth, 2),
                                _mm256_srli_epi16(fifth, 3)};
    __m256i sums[4];  // pair i: 16 int16 lanes, <= 15748
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.qs[2 * i]));
      const __m256i lo = _mm256_or_si256(_mm256_and_si256(raw, mask), _mm256_and_si256(lo_bits[i], bit4));
      const __m256i hi =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(raw, 4), mask), _mm256_and_si256(hi_bits[i], bit4));
      const int8_t* aq = pa.q + (b + 2 * i) * 32;
      sums[i] = _mm256_add_epi16(
          _mm256_maddubs_epi16(lo, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq))),
          _mm256_maddubs_epi16(hi, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq + 32))));
    }
    const __m256i x = _mm256_madd_epi16(fold32(sums[0], sums[1]), ones);
    const __m256i y = _mm256_madd_epi16(fold32(sums[2], sums[3]), ones);
    const __m256i dots = _mm256_add_epi32(_mm256_unpacklo_epi64(x, y), _mm256_unpackhi_epi64(x, y));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(d, _mm256_loadu_ps(pa.d + b)), acc);
  }
  // the plain blocks after the last group, one at a time into the same sums
  const auto* blocks = reinterpret_cast<const Block*>(row);
  float tail_offset = 0.0f;
  for (int64_t b = n_grouped; b < n_blocks; ++b) {
    const __m256i q = x86::q5_quants(blocks[b].qs, blocks[b].qh);
    const __m256i aq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.a[b].q));
    const __m256 dot = _mm256_cvtepi32_ps(_mm256_madd_epi16(_mm256_maddubs_epi16(q, aq), ones));
    const float d = half_to_float(blocks[b].d);
    acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(d * a.ad[b]), acc);
    if constexpr (kHasMin)
      tail_offset += half_to_float(blocks[b].m) * a.adq[b];
    else
      tail_offset += d * a.adq[b];
  }
  constexpr float kOffset = kHasMin ? 1.0f : -16.0f;
  return hsum(_mm256_fmadd_ps(offset, _mm256_set1_ps(kOffset), acc)) + kOffset * tail_offset;
}

// Decode (fewer tokens than a packed tile) of every quantized type: each
// row is read once from memory and dotted with each token in turn (the row,
// at most a few KiB, stays in L1 for the 2nd and 3rd token).
// kBytesPer256: a row's bytes per 256 columns (n_sub is a multiple of 8 for
// the super-block types). n_tokens <= kMaxDecodeTokens: matmul_rows_quant
// sends more to the packed path, which takes every type here.
constexpr int64_t kMaxDecodeTokens = kPackedMinTokens - 1;
template <int kBytesPer256, float (*kRow)(const uint8_t*, int64_t, const TokenActs&)>
void decode_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  const int64_t n_sub = w.cols / kQK;
  const int64_t stride = n_sub * kBytesPer256 / 8;
  TokenActs tokens[kMaxDecodeTokens];
  for (int64_t t = 0; t < n_tokens; ++t) tokens[t] = token_acts(act, n_tokens, n_sub, t);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t t = 0; t < n_tokens; ++t) y[t * w.rows + r] = kRow(base + r * stride, n_sub, tokens[t]);
}

// Q4_K decode (few tokens), one row against one token: the 8 scales and mins
// of a super-block are unpacked as vectors; a 256-bit load of 32 bytes holds
// sub-blocks 2c (low nibbles) and 2c + 1 (high); each sub-block's dot is one
// vpmaddubsw, and the 8 dots are summed in the integer domain as in
// q4_0_row (fold_tree; the 16 int16 lanes of a sub-block, 8 in each half,
// are sums of 2 products, <= 3810) into one vector of 8 lanes (two trees of
// four, then the 128-bit halves added), so one convert
// and one FMA with the 8 products d * scale_j * a.d_j serve the super-block.
// The min terms accumulate as one vector FMA per super-block. 1.15x the
// per-sub-block convert and FMA in L1/L2 (docs/PERFORMANCE.md section 13).
// Q5_K (the same layout plus qh[32]): sub-block j's fifth bits are bit j of
// qh[0..31], moved to bit 4 by one 16-bit shift (bits crossing from the
// other byte land outside 0x10); q <= 31 keeps the fold tree's int16 lanes,
// sums of 4 vpmaddubsw lanes, <= 4 * 2 * 31 * 127 = 31496.
template <class Block>
float k45_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const auto* row = reinterpret_cast<const Block*>(row_bytes);
  const int64_t n_super = n_blocks / 8;
  const ActBlock* act = t.a;
  const float *act_d = t.ad, *act_dsum = t.adq;
  __m256 acc = _mm256_setzero_ps(), macc = _mm256_setzero_ps();
  const __m256i mask = _mm256_set1_epi8(0x0F);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const Block& b = row[sb];
    prefetch_bytes(reinterpret_cast<const char*>(&b) + kDecodePrefetchBytes, sizeof(b));
    const __m128i sc_mn = x86::q4k_scale_min_bytes(b.scales);
    const __m256i sc_i = _mm256_cvtepu8_epi32(sc_mn), mn_i = _mm256_cvtepu8_epi32(_mm_srli_si128(sc_mn, 8));
    const __m256 sc = _mm256_mul_ps(_mm256_cvtepi32_ps(sc_i), _mm256_set1_ps(half_to_float(b.d)));
    const __m256 mn = _mm256_mul_ps(_mm256_cvtepi32_ps(mn_i), _mm256_set1_ps(half_to_float(b.dmin)));
    macc = _mm256_fmadd_ps(mn, _mm256_loadu_ps(act_dsum + 8 * sb), macc);
    __m256i sums[8];  // sub-block j: 16 int16 lanes, each a sum of 2 products (<= 3810)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * c));
      __m256i q[2] = {_mm256_and_si256(raw, mask), _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask)};
      if constexpr (kFifthBit) {
        const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh));
        const __m256i bit4 = _mm256_set1_epi8(0x10);
        for (int h = 0; h < 2; ++h) {
          const int j = 2 * c + h;  // bit j of qh -> bit 4
          const __m256i moved = j < 4 ? _mm256_slli_epi16(qh, 4 - j) : _mm256_srli_epi16(qh, j - 4);
          q[h] = _mm256_or_si256(q[h], _mm256_and_si256(moved, bit4));
        }
      }
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[8 * sb + 2 * c + h].q));
        sums[2 * c + h] = _mm256_maddubs_epi16(q[h], a);
      }
    }
    // per 128-bit half: sub-blocks 0..3 (lo) and 4..7 (hi), then the halves added
    const __m256i lo = fold_tree(sums), hi = fold_tree(sums + 4);
    const __m256i dots = _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                                          _mm256_permute2x128_si256(lo, hi, 0x31));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(sc, _mm256_loadu_ps(act_d + 8 * sb)), acc);
  }
  return hsum(_mm256_sub_ps(acc, macc));
}

// The vpshufb control that spreads a half's 16-element scales (int16 words
// 0..7 of each 128-bit lane: scales 8h..8h+7) over a fold of groups g0, g1:
// per lane, int32 elements [g0 g1 g0 g1], scale 2g of the group for the low
// lane (elements 0..15 of each group), 2g + 1 for the high lane (16..31).
inline __m256i q6k_fold_scale_pick(int g0, int g1) {
  const auto word = [](int s) { return static_cast<int16_t>(((2 * s + 1) << 8) | (2 * s)); };
  const auto lane = [&](int off) {
    const int16_t a = word(2 * g0 + off), b = word(2 * g1 + off);
    return _mm_setr_epi16(a, a, b, b, a, a, b, b);
  };
  return _mm256_set_m128i(lane(1), lane(0));
}

// Q6_K, Q3_K and Q2_K decode, one token: 16 sub-blocks of 16 elements with
// int8 scales (Q6_K's scales, Q3_K's 6-bit scales less 32, Q2_K's 4-bit ones),
// and unsigned quants q (Q6_K 0..63, Q3_K 0..7, Q2_K 0..3), so maddubs takes
// q without the sign trick. The offset term (Q6_K: -32 d sc_s, Q3_K: -4 d sc_s,
// Q2_K: -dmin m_s per sub-block s) is applied once per super-block in float
// from the activations' 16-element half sums (act_floats): two FMAs for 16
// sub-blocks instead of three operations per sub-block.
// Half h of a block (128 elements) is 4 groups g of 32 (unit 4h + g); the
// source type gives their quants (Q6_K: low 4 bits from ql[64h + 32(g & 1) + l],
// low nibble for g < 2, high after, high 2 bits from (qh[32h + l] >> 2g) & 3;
// Q3_K and Q2_K: bits 2g, 2g + 1 of qs[32h + l], Q3_K's third bit g + 4h of
// hmask[l]); sub-block scale s = 8h + 2g + l / 16.
// The 8 groups' dots are summed in the integer domain into one vector of 8
// lanes, as in k45_row: the vpmaddubsw lanes of two groups fold once in int16
// (sums of 4 products, <= 4 * 63 * 127 = 32004), one vpmaddwd applies their
// scales, and a 64-bit fold in int32 and the two halves' sum follow; one
// convert and one FMA with the 8 products d * a.d then serve the super-block.
// That is 12 multiply-port instructions a super-block where a vpmaddwd, convert
// and FMA per group took 16 plus 8 converts and 8 FMAs: 1.02-1.15x for Q6_K in
// the decode driver, both orders (docs/PERFORMANCE.md section 17); Q3_K and
// Q2_K 1.06-1.08x a vpmaddwd, convert and FMA per group (section 28).
struct Q6_KSub16 {
  using Block = BlockQ6_K;
  static constexpr float kOffset = -32.0f;
  static __m128i scales(const Block& b) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)); }
  static __m128i offsets(const Block& b) { return scales(b); }
  static float offset_scale(const Block& b) { return half_to_float(b.d); }
  static void quants(const Block& b, int h, __m256i* q) {
    const __m256i mask4 = _mm256_set1_epi8(0x0F), mask_hi = _mm256_set1_epi8(0x30);
    const __m256i ql0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
    const __m256i ql1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    const __m256i lows[4] = {_mm256_and_si256(ql0, mask4), _mm256_and_si256(ql1, mask4),
                             _mm256_and_si256(_mm256_srli_epi16(ql0, 4), mask4),
                             _mm256_and_si256(_mm256_srli_epi16(ql1, 4), mask4)};
    // bits 2g, 2g + 1 of each qh byte moved to bits 4, 5 by one 16-bit shift
    // (bits crossing from the next byte land outside the mask)
    const __m256i at4[4] = {_mm256_slli_epi16(qh, 4), _mm256_slli_epi16(qh, 2), qh, _mm256_srli_epi16(qh, 2)};
    for (int g = 0; g < 4; ++g) q[g] = _mm256_or_si256(lows[g], _mm256_and_si256(at4[g], mask_hi));
  }
};

// Q3_K (kQ3) and Q2_K: the low 2 bits of group g are bits 2g, 2g + 1 of
// qs[32h + l]; Q3_K adds 4 where bit 4h + g of hmask[l] is set (moved to bit 2
// by one 16-bit shift: what crosses from the other byte lands outside 0x04).
template <bool kQ3>
struct K23Sub16 {
  using Block = std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>;
  static constexpr float kOffset = kQ3 ? -4.0f : -1.0f;
  static __m128i scales(const Block& b) { return x86::k23_scale_bytes(b); }
  static __m128i offsets(const Block& b) {
    if constexpr (kQ3)
      return scales(b);
    else  // the 4-bit mins, high nibbles of scales[]
      return _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), 4),
                           _mm_set1_epi8(0x0F));
  }
  static float offset_scale(const Block& b) {
    if constexpr (kQ3)
      return half_to_float(b.d);
    else
      return half_to_float(b.dmin);
  }
  static void quants(const Block& b, int h, __m256i* q) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * h));
    const __m256i three = _mm256_set1_epi8(3);
    q[0] = _mm256_and_si256(raw, three);
    q[1] = _mm256_and_si256(_mm256_srli_epi16(raw, 2), three);
    q[2] = _mm256_and_si256(_mm256_srli_epi16(raw, 4), three);
    q[3] = _mm256_and_si256(_mm256_srli_epi16(raw, 6), three);
    if constexpr (kQ3) {
      const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
      const __m256i four = _mm256_set1_epi8(4);
      // bit 4h + g to bit 2
      const __m256i moved[4] = {h == 0 ? _mm256_slli_epi16(hm, 2) : _mm256_srli_epi16(hm, 2),
                                h == 0 ? _mm256_slli_epi16(hm, 1) : _mm256_srli_epi16(hm, 3),
                                h == 0 ? hm : _mm256_srli_epi16(hm, 4), _mm256_srli_epi16(hm, h == 0 ? 1 : 5)};
      for (int g = 0; g < 4; ++g) q[g] = _mm256_or_si256(q[g], _mm256_and_si256(moved[g], four));
    }
  }
};

template <class Src>
float sub16_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  using Block = typename Src::Block;
  const auto* row = reinterpret_cast<const Block*>(row_bytes);
  const int64_t n_super = n_blocks / 8;
  const ActBlock* act = t.a;
  const float *ad = t.ad, *half_sums = t.hs;
  __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const Block& b = row[sb];
    prefetch_bytes(reinterpret_cast<const char*>(&b) + kDecodePrefetchBytes, sizeof(b));
    const float d = half_to_float(b.d);
    const __m128i sc = Src::scales(b), off = Src::offsets(b);
    const __m256 os = _mm256_set1_ps(Src::offset_scale(b));
    const __m256 off_lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(off));
    const __m256 off_hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(off, 8)));
    const float* hs = half_sums + 16 * sb;
    offset = _mm256_fmadd_ps(_mm256_mul_ps(off_lo, os), _mm256_loadu_ps(hs), offset);
    offset = _mm256_fmadd_ps(_mm256_mul_ps(off_hi, os), _mm256_loadu_ps(hs + 8), offset);
    // the half's 8 int16 scales in both 128-bit lanes, for one vpshufb per fold
    const __m256i s16 = _mm256_cvtepi8_epi16(sc);
    const __m256i half_scales[2] = {_mm256_permute2x128_si256(s16, s16, 0x00),
                                    _mm256_permute2x128_si256(s16, s16, 0x11)};
    __m256i half_dots[2];  // per 128-bit lane: groups 0..3 of half h, that lane's 16 elements
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      Src::quants(b, h, q);
      __m256i p[4];  // group g: 16 int16 lanes, sums of 2 products (<= 2 * 63 * 127 = 16002)
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(act[8 * sb + 4 * h + g].q));
        p[g] = _mm256_maddubs_epi16(q[g], a);
      }
      __m256i scaled[2];  // groups (0, 1) and (2, 3): int32 elements [g0 g1 g0 g1] per lane
#pragma GCC unroll 2
      for (int k = 0; k < 2; ++k) {
        const __m256i folded = fold32(p[2 * k], p[2 * k + 1]);
        scaled[k] = _mm256_madd_epi16(folded, _mm256_shuffle_epi8(half_scales[h], q6k_fold_scale_pick(2 * k, 2 * k + 1)));
      }
      half_dots[h] = _mm256_add_epi32(_mm256_unpacklo_epi64(scaled[0], scaled[1]),
                                      _mm256_unpackhi_epi64(scaled[0], scaled[1]));
    }
    // lanes: groups 0..7 (group 4h + g reads activation block 8 sb + 4h + g)
    const __m256i dots = _mm256_add_epi32(_mm256_permute2x128_si256(half_dots[0], half_dots[1], 0x20),
                                          _mm256_permute2x128_si256(half_dots[0], half_dots[1], 0x31));
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(_mm256_loadu_ps(ad + 8 * sb), _mm256_set1_ps(d)),
                          acc);
  }
  return hsum(_mm256_fmadd_ps(offset, _mm256_set1_ps(Src::kOffset), acc));
}

}  // namespace

void quantize_activations(const float* x, int64_t cols, ActBlock* out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  for (int64_t b = 0; b < cols / kQK; ++b, x += kQK) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[i]));
    }
    const float m = hmax(amax);
    const float d = m / 127.0f;
    const __m256 id = _mm256_set1_ps(d > 0.0f ? 127.0f / m : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)  // round to nearest even (MXCSR default)
      q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], id));
    const __m256i sum = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    const __m256i p01 = _mm256_packs_epi32(q[0], q[1]);
    const __m256i p23 = _mm256_packs_epi32(q[2], q[3]);
    const __m256i p = _mm256_packs_epi16(p01, p23);
    // packs interleave 128-bit lanes; this puts the 4-element groups back in order
    const __m256i ordered = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[b].q), ordered);
    out[b].d = d;
    __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum), _mm256_extracti128_si256(sum, 1));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
    s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
    out[b].qsum = _mm_cvtsi128_si32(s4);
    const __m256i lo8 = _mm256_add_epi32(q[0], q[1]);  // elements 0..15
    __m128i l4 = _mm_add_epi32(_mm256_castsi256_si128(lo8), _mm256_extracti128_si256(lo8, 1));
    l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, 0x4E));
    l4 = _mm_add_epi32(l4, _mm_shuffle_epi32(l4, 0xB1));
    out[b].qsum_lo = _mm_cvtsi128_si32(l4);
    out[b].pad = 0;
  }
}

void pair_activations(const ActBlock* act, const float* f, int64_t n_sub, uint8_t* out) {
  const int64_t n = paired_blocks(n_sub);
  for (int64_t b = 0; b < n; b += 2) {
    int8_t* q = reinterpret_cast<int8_t*>(out) + b * 32;
    std::memcpy(q, act[b].q, 16);
    std::memcpy(q + 16, act[b + 1].q, 16);
    std::memcpy(q + 32, act[b].q + 16, 16);
    std::memcpy(q + 48, act[b + 1].q + 16, 16);
  }
  auto* d = reinterpret_cast<float*>(out + 32 * n);
  float* dsum = d + n;
  for (int64_t b = 0; b < n; b += 8)
    for (int l = 0; l < 8; ++l) {
      d[b + l] = f[b + kPairLaneBlock[l]];
      dsum[b + l] = f[n_sub + b + kPairLaneBlock[l]];
    }
}

void matmul_rows_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end) {
  if (n_tokens > kMaxDecodeTokens) {
    if (packed_supports(w.dtype)) matmul_rows_packed(w, act, n_tokens, y, row_begin, row_end);
    return;
  }
  switch (w.dtype) {
    case DType::kQ8_0:
      return decode_rows<8 * sizeof(BlockQ8_0), signed_row<Q8_0Dec>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_NL:
      return decode_rows<8 * sizeof(BlockIQ4_NL), iq4nl_row>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_XS:
      return decode_rows<sizeof(BlockIQ4_XS), iq4xs_row>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ2_K:
      return decode_rows<sizeof(BlockQ2_K), sub16_row<K23Sub16<false>>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ3_K:
      return decode_rows<sizeof(BlockQ3_K), sub16_row<K23Sub16<true>>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_0:
      return decode_rows<8 * sizeof(BlockQ4_0), q4_0_row>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0:
      return decode_rows<8 * sizeof(BlockQ5_0), offset_row<BlockQ5_0>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1:
      return decode_rows<8 * sizeof(BlockQ5_1), offset_row<BlockQ5_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0x8:
      return decode_rows<8 * sizeof(BlockQ5_0), grouped_q5_row<BlockQ5_0>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1x8:
      return decode_rows<8 * sizeof(BlockQ5_1), grouped_q5_row<BlockQ5_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_1:
      return decode_rows<8 * sizeof(BlockQ4_1), offset_row<BlockQ4_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_K:
      return decode_rows<sizeof(BlockQ4_K), k45_row<BlockQ4_K>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_K:
      return decode_rows<sizeof(BlockQ5_K), k45_row<BlockQ5_K>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ6_K:
      return decode_rows<sizeof(BlockQ6_K), sub16_row<Q6_KSub16>>(w, act, n_tokens, y, row_begin, row_end);
    default:
      return;
  }
}

}  // namespace llmpack::kernels::avx2
