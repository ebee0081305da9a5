// The AVX2 prefill GEMM's body (several tokens at once) for Q4_0, Q4_1, Q5_0,
// Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS weights, built
// twice: by matmul_packed_avx2.cc (LLMPACK_PACKED_VNNI 0, vpmaddubsw) and by
// matmul_packed_avxvnni.cc (LLMPACK_PACKED_VNNI 1, compiled with -mavxvnni:
// vpdpbusd on 256-bit vectors, the avx_vnni kernel path). Include only from
// those two files: everything here sits in an unnamed namespace so that each
// gets its own copy, built with its own flags.
//
// Rows are packed, 8 at a time, into a row-interleaved panel on the stack
// (BLIS-style packing; the weights in memory are never changed): for each
// 32-element unit, int32 lane r of vector g holds elements 4g..4g+3 of row r
// as bytes. One broadcast of 4 activation bytes then feeds 8 rows with one
// vpmaddubsw, and the 8 results land in the 8 lanes of one vector: no
// horizontal sums, and each weight vector is reused for kTile tokens.
//
// Per unit, with per-row scale ws and min wm:
//   row . x = sum_units a.d * (ws * sum(q * a.q) - wm * sum(a.q))
//   Q4_0: q = nibble (0..15), ws = d, wm = 8d
//   Q5_0: q in 0..31, ws = d, wm = 16d; Q5_1: q in 0..31, ws = d, wm = -m
//   Q4_1: q = nibble, ws = d, wm = -m
//   Q4_K: q = nibble, ws = d * scale_j, wm = dmin * min_j (Q5_K: q in 0..31)
//   Q6_K: q in 0..63, scales in vpmaddwd, two mins (see Q6_KPack); Q2_K, Q3_K too (K23Pack)
//   Q8_0: q signed, ws = d, no min: |q| * (a.q * sign(q)) (sign trick); IQ4_NL, IQ4_XS too
// With q <= 15 and |a.q| <= 127 a vpmaddubsw lane is at most 2 * 15 * 127 = 3810,
// so the 8 products of a nibble unit add up in int16 (<= 30480) before one vpmaddwd;
// with q <= 31 (2 * 31 * 127 = 7874 a lane) four do (<= 31496).
//
// The VNNI build (vpdpbusd: 4 products of an unsigned and a signed byte added
// straight into an int32 lane, no int16 stage) sums the 32-element units of
// every kind but Q6_K's in int32: signed weights are stored as w + 128
// (unsigned) and their min term is 128 * d * (a.d * a.qsum), as Q4_0's is
// 8 * d * (...). One vpdpbusd replaces Q8_0's (and IQ4's) vpsignb,
// vpmaddubsw, vpmaddwd and vpaddd: their prefill runs 1.4-1.5x faster; Q5_K's
// four-group int16 flushes go too (1.2x); for the nibble types it replaces a
// vpmaddubsw and a vpaddw at the same throughput (docs/PERFORMANCE.md
// section 58). Q6_K, Q2_K and Q3_K keep the vpmaddwd by their 16-element
// scales: their halves summed by vpdpbusd and scaled in float measured no
// faster.
#pragma once

#ifndef LLMPACK_PACKED_VNNI
#error "define LLMPACK_PACKED_VNNI (0 or 1) before including packed_gemm_avx2.h"
#endif

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/grouped_pack.h"
#include "kernels/x86/lowbit_quants.h"
#include "kernels/x86/q5_bits.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {  // NOLINT(build/namespaces): a copy per build, see above

constexpr int kPanelRows = 8;      // rows per interleaved panel (one ymm of int32 lanes)
constexpr int kPanels = 4;         // panels packed together (32 rows)
constexpr int kChunkUnits = 32;    // units of 32 columns packed at once (1024 columns)
constexpr int kTile = 4;           // tokens per register tile
// Which build this is: the plain AVX2 one (vpmaddubsw) or the AVX-VNNI one
// (vpdpbusd); see the file comment.
constexpr bool kVnni = LLMPACK_PACKED_VNNI != 0;

// One unit (32 columns) of 8 rows: q[g] is a 32-byte vector whose int32
// lane r holds row r's elements 4g..4g+3. Layouts: nibbles (Q4_0, Q4_1, Q4_K), five-bit (Q5_0, Q5_1, Q5_K),
// signed bytes (Q8_0, sign trick),
// six-bit with 16-element scales (Q6_K).
enum Kind { kNibble, kFiveBit, kSigned, kSixBit };

template <int kKind>
struct alignas(32) Unit {
  uint8_t q[8][32];
  float ws[kPanelRows];
  float wm[kPanelRows];
};
// Q6_K: 16-element sub-blocks, so a unit has two int16 scales per row (int16
// lanes 2r, 2r+1 of sc16[0] for elements 0..15, sc16[1] for 16..31) applied
// in vpmaddwd, and two min terms.
template <>
struct alignas(32) Unit<kSixBit> {
  uint8_t q[8][32];
  int16_t sc16[2][16];
  float ws[kPanelRows];
  float wm[kPanelRows];
  float wm_b[kPanelRows];
};

// A row's scale terms of one unit (sc_a, sc_b, wm_b: Q6_K only).
struct UnitScales {
  float ws = 0, wm = 0, wm_b = 0;
  int16_t sc_a = 0, sc_b = 0;
};

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Each packer gives, for one block of a row, the 32 unpacked quants of unit j
// as one vector (int32 lane g = elements 4g..4g+3), and the row's
// scales and mins of the block's units.
struct Q4_0Pack {
  static constexpr int kKind = kNibble;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ4_0);
  static __m256i expand(const uint8_t* block, int) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(block);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(block);
    s[0].ws = half(b->d);
    s[0].wm = 8.0f * s[0].ws;
  }
};

// Q4_1 (nibbles), Q5_0 and Q5_1 (five-bit): a block is one unit of unsigned q.
template <class Block>
struct OffsetPack {
  static constexpr bool kHasMin = kBlockHasMin<Block>;
  static constexpr int kKind = kBlockHasQh<Block> ? kFiveBit : kNibble;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(Block);
  static __m256i expand(const uint8_t* block, int) {
    const auto* b = reinterpret_cast<const Block*>(block);
    if constexpr (kBlockHasQh<Block>)
      return x86::q5_quants(b->qs, b->qh);
    else
      return x86::q4_quants(b->qs);
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const Block*>(block);
    s[0].ws = half(b->d);
    if constexpr (kHasMin)
      s[0].wm = -half(b->m);
    else
      s[0].wm = 16.0f * s[0].ws;
  }
};

struct Q8_0Pack {
  static constexpr int kKind = kSigned;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ8_0);
  static __m256i expand(const uint8_t* block, int) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(block);
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    s[0].ws = half(reinterpret_cast<const BlockQ8_0*>(block)->d);
  }
};

// Q4_K, and Q5_K (kFifthBit: the same layout plus qh[32]; unit j's fifth
// bits are bit j of qh[0..31]).
template <bool kFifthBit>
struct K45Pack {
  using Block = std::conditional_t<kFifthBit, BlockQ5_K, BlockQ4_K>;
  static constexpr int kKind = kFifthBit ? kFiveBit : kNibble;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(Block);
  static __m256i expand(const uint8_t* block, int j) {
    const auto* b = reinterpret_cast<const Block*>(block);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * (j / 2)));
    const __m256i mask = _mm256_set1_epi8(0x0F);
    const __m256i q = (j % 2) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask) : _mm256_and_si256(raw, mask);
    if constexpr (!kFifthBit) {
      return q;
    } else {
      // bit j of each qh byte to bit 4 (a 16-bit shift; what crosses from the
      // other byte lands outside 0x10)
      const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh));
      const __m256i moved = j < 4 ? _mm256_sll_epi16(qh, _mm_cvtsi32_si128(4 - j))
                                  : _mm256_srl_epi16(qh, _mm_cvtsi32_si128(j - 4));
      return _mm256_or_si256(q, _mm256_and_si256(moved, _mm256_set1_epi8(0x10)));
    }
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const Block*>(block);
    const float d = half(b->d), dmin = half(b->dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      unpack_q4k_scale(b->scales, j, &sc, &mn);
      s[j].ws = d * sc;
      s[j].wm = dmin * mn;
    }
  }
};

// Q6_K unit j = 32 elements 128h + 32g + l (h = j / 4, g = j % 4) as unsigned
// q in 0..63: value = d * scale * (q - 32), so ws = d (scales go in vpmaddwd)
// and the min terms are 32 d scale_a (elements 0..15), 32 d scale_b (16..31).
// q <= 63 keeps two vpmaddubsw lanes in int16 (2 * 2 * 63 * 127 = 32004).
struct Q6_KPack {
  static constexpr int kKind = kSixBit;
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ6_K);
  static constexpr bool kSplit = true;
  static __m256i expand(const uint8_t* block, int j) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
    const int h = j / 4, g = j % 4;
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h + 32 * (g & 1)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h));
    const __m256i mask4 = _mm256_set1_epi8(0x0F), mask2 = _mm256_set1_epi8(3);
    const __m256i low = g < 2 ? _mm256_and_si256(ql, mask4)
                              : _mm256_and_si256(_mm256_srli_epi16(ql, 4), mask4);
    const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), mask2);
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
    const float d = half(b->d);
    for (int j = 0; j < 8; ++j) {
      const int8_t* sc = b->scales + 8 * (j / 4) + 2 * (j % 4);
      s[j].ws = d;
      s[j].sc_a = sc[0], s[j].sc_b = sc[1];
      s[j].wm = 32.0f * d * sc[0];
      s[j].wm_b = 32.0f * d * sc[1];
    }
  }
};

// IQ4_NL (a block is one unit) and IQ4_XS (8 units of 32 with 6-bit scales):
// the grid values looked up by vpshufb are signed, so they go as Q8_0's do.
struct IQ4_NLPack {
  static constexpr int kKind = kSigned;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockIQ4_NL);
  static __m256i expand(const uint8_t* block, int) {
    return x86::iq4_values(reinterpret_cast<const BlockIQ4_NL*>(block)->qs, x86::iq4_table());
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    s[0].ws = half(reinterpret_cast<const BlockIQ4_NL*>(block)->d);
  }
};

struct IQ4_XSPack {
  static constexpr int kKind = kSigned;
  static constexpr bool kSplit = false;
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockIQ4_XS);
  static __m256i expand(const uint8_t* block, int j) {
    return x86::iq4_values(reinterpret_cast<const BlockIQ4_XS*>(block)->qs + 16 * j, x86::iq4_table());
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const BlockIQ4_XS*>(block);
    const float d = half(b->d);
    for (int j = 0; j < 8; ++j) s[j].ws = d * static_cast<float>(iq4xs_scale(*b, j) - 32);
  }
};

// Q2_K and Q3_K: 16-element sub-blocks as Q6_K's (two int16 scales per row
// and unit in vpmaddwd, two min terms), with unsigned q: Q2_K's 0..3, value
// d sc q - dmin m; Q3_K's 0..7, value d (sc - 32) (q - 4).
template <class Block>
struct K23Pack {
  static constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  static constexpr int kKind = kSixBit;
  static constexpr bool kSplit = true;
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(Block);
  static __m256i expand(const uint8_t* block, int j) {
    const auto* b = reinterpret_cast<const Block*>(block);
    if constexpr (kQ3)
      return x86::q3k_quants(*b, j);
    else
      return x86::k23_low_bits(b->qs, j);
  }
  static void scales(const uint8_t* block, UnitScales* s) {
    const auto* b = reinterpret_cast<const Block*>(block);
    const float d = half(b->d);
    for (int j = 0; j < 8; ++j) {
      s[j].ws = d;
      if constexpr (kQ3) {
        s[j].sc_a = static_cast<int16_t>(q3k_scale(b->scales, 2 * j) - 32);
        s[j].sc_b = static_cast<int16_t>(q3k_scale(b->scales, 2 * j + 1) - 32);
        s[j].wm = 4.0f * d * s[j].sc_a;
        s[j].wm_b = 4.0f * d * s[j].sc_b;
      } else {
        const float dmin = half(b->dmin);
        s[j].sc_a = b->scales[2 * j] & 0x0F, s[j].sc_b = b->scales[2 * j + 1] & 0x0F;
        s[j].wm = dmin * static_cast<float>(b->scales[2 * j] >> 4);
        s[j].wm_b = dmin * static_cast<float>(b->scales[2 * j + 1] >> 4);
      }
    }
  }
};

// 8x8 transpose of int32 lanes: out[g] lane r = in[r] lane g.
inline void transpose8(const __m256i* in, __m256i* out) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
    const __m256i* th = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi64(th[0], th[2]);  // groups 0 / 4
    u[4 * h + 1] = _mm256_unpackhi_epi64(th[0], th[2]);  // 1 / 5
    u[4 * h + 2] = _mm256_unpacklo_epi64(th[1], th[3]);  // 2 / 6
    u[4 * h + 3] = _mm256_unpackhi_epi64(th[1], th[3]);  // 3 / 7
  }
  for (int g = 0; g < 4; ++g) {
    out[g] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x20);
    out[g + 4] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x31);
  }
}

// Packs rows [r0, r0 + n_rows) (n_rows <= 8; missing rows are zero) over
// blocks [blk0, blk0 + n_blk) into units u[n_blk * kUnitsPerBlock].
template <class P>
void pack_panel(const uint8_t* base, int64_t stride, int64_t r0, int n_rows, int64_t blk0,
                int64_t n_blk, Unit<P::kKind>* u) {
  if constexpr (requires { P::kGroupedType; })  // a grouped Q5 type: ungrouped, then packed as plain
    return x86::pack_ungrouped<kPanelRows, kChunkUnits, P>(
        base, stride, r0, n_rows, blk0, n_blk, [&](const uint8_t* plain, int64_t plain_stride) {
          pack_panel<typename P::Plain>(plain, plain_stride, 0, n_rows, 0, n_blk, u);
        });
  const uint8_t* rows[kPanelRows];
  for (int r = 0; r < n_rows; ++r) rows[r] = base + (r0 + r) * stride + blk0 * P::kBytes;
  for (int64_t b = 0; b < n_blk; ++b) {
    Unit<P::kKind>* ub = u + b * P::kUnitsPerBlock;
    for (int r = 0; r < kPanelRows; ++r) {
      UnitScales sc[P::kUnitsPerBlock];  // zero for missing rows
      if (r < n_rows) P::scales(rows[r] + b * P::kBytes, sc);
      for (int j = 0; j < P::kUnitsPerBlock; ++j) {
        ub[j].ws[r] = sc[j].ws, ub[j].wm[r] = sc[j].wm;
        if constexpr (kVnni && P::kKind == kSigned) ub[j].wm[r] = 128.0f * sc[j].ws;  // q stored as w + 128
        if constexpr (P::kSplit) {
          ub[j].wm_b[r] = sc[j].wm_b;
          ub[j].sc16[0][2 * r] = ub[j].sc16[0][2 * r + 1] = sc[j].sc_a;
          ub[j].sc16[1][2 * r] = ub[j].sc16[1][2 * r + 1] = sc[j].sc_b;
        }
      }
    }
    for (int j = 0; j < P::kUnitsPerBlock; ++j) {
      __m256i in[kPanelRows], out[8];
      for (int r = 0; r < kPanelRows; ++r)
        in[r] = r < n_rows ? P::expand(rows[r] + b * P::kBytes, j) : _mm256_setzero_si256();
      if constexpr (kVnni && P::kKind == kSigned)  // w + 128: vpdpbusd's unsigned operand
        for (int r = 0; r < kPanelRows; ++r) in[r] = _mm256_xor_si256(in[r], _mm256_set1_epi8(static_cast<char>(0x80)));
      transpose8(in, out);
      for (int g = 0; g < 8; ++g) _mm256_store_si256(reinterpret_cast<__m256i*>(ub[j].q[g]), out[g]);
    }
  }
}

// An empty asm the compiler cannot see through: keeps a running sum in its
// register, in program order. Without it GCC reassociates the 8 int16 adds of
// a unit, computes all 8 x T products first and spills them to the stack
// (seen in the disassembly: about 24 spill stores and reloads per unit).
inline void in_register(__m256i& v) { asm("" : "+x"(v)); }

// The activations' prepared sums (act_floats) of a tile's tokens, as floats
// to broadcast from memory: the min terms then cost one FMA per token and unit
// (converting qsum and multiplying by d there was a fifth of Q4_K's prefill).
struct TileSums {
  const float* f;  // floats of the tile's first token
  int64_t n_sub;   // blocks per token
  int64_t unit0;   // the chunk's first unit
  // d * qsum of token t, chunk unit k
  const float* dq(int t, int64_t k) const { return f + t * kActFloatsPerBlock * n_sub + n_sub + unit0 + k; }
  // d * qsum_lo, then d * (qsum - qsum_lo) of token t, chunk unit k
  const float* halves(int t, int64_t k) const {
    return f + t * kActFloatsPerBlock * n_sub + 2 * n_sub + 2 * (unit0 + k);
  }
};

// The int32 sums of one unit's 8 groups for T tokens, when q is too wide for
// all 8 vpmaddubsw results to add up in int16: kFlush of them add up (Q6_K:
// 2, q <= 63; five-bit: 4, q <= 31), then one vpmaddwd by multiplier(g) (the
// rows' scales, or ones) takes them to int32.
template <int T, int kFlush, class Multiplier>
inline void flushed_sums(const uint8_t (*q)[32], const ActBlock* act, int64_t n_sub, Multiplier multiplier,
                         __m256i* i32) {
  __m256i s16[T];
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(q[g]));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      int32_t a4;
      std::memcpy(&a4, act[t * n_sub].q + 4 * g, 4);
      const __m256i p = _mm256_maddubs_epi16(w, _mm256_set1_epi32(a4));
      s16[t] = g % kFlush == 0 ? p : _mm256_add_epi16(s16[t], p);
      if (g % kFlush == kFlush - 1) {
        const __m256i v = _mm256_madd_epi16(s16[t], multiplier(g));
        i32[t] = g == kFlush - 1 ? v : _mm256_add_epi32(i32[t], v);
        in_register(i32[t]);
      }
    }
  }
}

// The int32 sums of one unit's 8 groups for T tokens by vpdpbusd (the VNNI
// build), the even groups into sums[t] and the odd ones into a second
// accumulator: two dependency chains per token. (A vpdpbusd's result is ready
// 4-5 cycles later, so one chain per token keeps at most 4 in flight, fewer
// than a core that starts two a cycle could; on the Zen 5 VM of
// docs/PERFORMANCE.md section 58 one and two chains measured the same.) Each
// int32 lane adds 4 products per group, at most 8 * 4 * 255 * 127 for a signed
// unit (w + 128): far inside int32 and exact in float.
template <int T>
inline void vnni_sums(const uint8_t (*q)[32], const ActBlock* act, int64_t n_sub, __m256i* sums) {
  __m256i odd[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) sums[t] = odd[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(q[g]));
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      int32_t a4;
      std::memcpy(&a4, act[t * n_sub].q + 4 * g, 4);
      __m256i& s = g % 2 == 0 ? sums[t] : odd[t];
      s = _mm256_dpbusd_avx_epi32(s, w, _mm256_set1_epi32(a4));
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) sums[t] = _mm256_add_epi32(sums[t], odd[t]);
}

// One Q6_K unit for T tokens: int16 sums of two groups at a time (q <= 63),
// then vpmaddwd by the rows' 16-element scales.
template <int T>
inline void q6_unit(const Unit<kSixBit>& u, const ActBlock* act, int64_t n_sub, const TileSums& sums, int64_t k,
                    __m256* acc) {
  __m256i i32[T];
  const __m256i sc_a = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc16[0]));
  const __m256i sc_b = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.sc16[1]));
  flushed_sums<T, 2>(u.q, act, n_sub, [&](int g) { return g < 4 ? sc_a : sc_b; }, i32);
  const __m256 ws = _mm256_load_ps(u.ws), wm = _mm256_load_ps(u.wm), wm_b = _mm256_load_ps(u.wm_b);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    const float* halves = sums.halves(t, k);
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32[t]), _mm256_mul_ps(ws, _mm256_set1_ps(act[t * n_sub].d)), acc[t]);
    acc[t] = _mm256_fnmadd_ps(wm, _mm256_broadcast_ss(halves), acc[t]);
    acc[t] = _mm256_fnmadd_ps(wm_b, _mm256_broadcast_ss(halves + 1), acc[t]);
  }
}

// One Q8_0 unit of signed bytes for T tokens: |w| * (a * sign(w)) in
// vpmaddubsw (a pair can reach 2 * 127 * 127, so each goes straight to vpmaddwd).
template <int T>
inline void q8_unit(const Unit<kSigned>& u, const ActBlock* act, int64_t n_sub, __m256* acc) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i i32[T];
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q[g]));
    const __m256i aw = _mm256_sign_epi8(w, w);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      int32_t a4;
      std::memcpy(&a4, act[t * n_sub].q + 4 * g, 4);
      const __m256i a = _mm256_sign_epi8(_mm256_set1_epi32(a4), w);
      const __m256i v = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, a), ones);
      i32[t] = g == 0 ? v : _mm256_add_epi32(i32[t], v);
      in_register(i32[t]);
    }
  }
  const __m256 ws = _mm256_load_ps(u.ws);
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
    acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32[t]), _mm256_mul_ps(ws, _mm256_set1_ps(act[t * n_sub].d)), acc[t]);
}

// acc[t] (8 rows) += panel . act of token t over n_units units, and mins[t]
// += the nibble types' min terms (subtracted once, in tile_store; the VNNI
// build, out of registers, adds every kind's min terms into acc); act_t at
// act + t * n_sub (units of the chunk start at act). The min terms have their
// own accumulators so that a unit's two FMAs do not form one dependent chain
// through acc (Q4_0 and Q4_K prefill 1.02-1.17x in the kernel driver,
// docs/PERFORMANCE.md section 16); Q4_0's -8 offset goes the same way (it had
// been folded into the int32 sum, which cost a scalar load, shift and
// broadcast per token and unit: 1.08-1.16x).
template <int kKind, int T>
inline void tile(const Unit<kKind>* u, int64_t n_units, const ActBlock* act,
                 int64_t n_sub, const TileSums& sums, __m256* acc, __m256* mins) {
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t k = 0; k < n_units; ++k, ++u) {
    if constexpr (kKind == kSixBit) {
      q6_unit<T>(*u, act + k, n_sub, sums, k, acc);
      continue;
    }
    if constexpr (kKind == kSigned && !kVnni) {
      q8_unit<T>(*u, act + k, n_sub, acc);
      continue;
    }
    __m256i i32[T];
    if constexpr (kVnni) {
      // every kind at once: q < 256 is vpdpbusd's unsigned operand as it is
      vnni_sums<T>(u->q, act + k, n_sub, i32);
    } else if constexpr (kKind == kFiveBit) {
      // q <= 31: four vpmaddubsw results add up in int16 (<= 31496)
      flushed_sums<T, 4>(u->q, act + k, n_sub, [&](int) { return ones; }, i32);
    } else {
      // q <= 15: the 8 products of a unit add up in int16 before one vpmaddwd
      __m256i s16[T];
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
      for (int g = 0; g < 8; ++g) {
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u->q[g]));
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
          int32_t a4;
          std::memcpy(&a4, act[t * n_sub + k].q + 4 * g, 4);
          s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(w, _mm256_set1_epi32(a4)));
          in_register(s16[t]);
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < T; ++t) i32[t] = _mm256_madd_epi16(s16[t], ones);
    }
    const __m256 ws = _mm256_load_ps(u->ws);
    const __m256 wm = _mm256_load_ps(u->wm);
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 d = _mm256_set1_ps(act[t * n_sub + k].d);
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i32[t]), _mm256_mul_ps(ws, d), acc[t]);
      // five-bit units keep s16 and i32 live across their halves: with the mins'
      // own 4 accumulators a 4-token tile spilled 4 of them to the stack
      // (docs/PERFORMANCE.md section 26), so their min term goes into acc; the
      // VNNI build's two sums a token leave no registers for them either
      if constexpr (kKind == kFiveBit || kVnni)
        acc[t] = _mm256_fnmadd_ps(wm, _mm256_broadcast_ss(sums.dq(t, k)), acc[t]);
      else
        mins[t] = _mm256_fmadd_ps(wm, _mm256_broadcast_ss(sums.dq(t, k)), mins[t]);
    }
  }
}

// y rows [r0, r0 + n_rows) of tokens [t0, t0 + T): stores (first chunk) or adds.
template <int kKind, int T>
void tile_store(const Unit<kKind>* u, int64_t n_units, const ActBlock* act, int64_t n_sub, const TileSums& sums,
                float* y, int64_t ld_y, int n_rows, bool add) {
  __m256 acc[T], mins[T];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = mins[t] = _mm256_setzero_ps();
  tile<kKind, T>(u, n_units, act, n_sub, sums, acc, mins);
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    if constexpr (kKind == kNibble && !kVnni) acc[t] = _mm256_sub_ps(acc[t], mins[t]);  // only they fill mins
    float* out = y + t * ld_y;
    if (n_rows == kPanelRows) {
      if (add) acc[t] = _mm256_add_ps(acc[t], _mm256_loadu_ps(out));
      _mm256_storeu_ps(out, acc[t]);
    } else {
      alignas(32) float tmp[kPanelRows];
      _mm256_store_ps(tmp, acc[t]);
      for (int r = 0; r < n_rows; ++r) out[r] = add ? out[r] + tmp[r] : tmp[r];
    }
  }
}

template <int kKind>
void tokens_over_panels(const Unit<kKind>* units, int n_panels, int64_t units_per_panel,
                        int64_t row0, int64_t row_end, const ActBlock* act, int64_t n_sub,
                        const TileSums& chunk_sums, int64_t n_tokens, float* y, int64_t ld_y, bool add) {
  for (int64_t t = 0; t < n_tokens; t += kTile) {
    const int64_t nt = std::min<int64_t>(kTile, n_tokens - t);
    for (int p = 0; p < n_panels; ++p) {
      const int64_t r = row0 + p * kPanelRows;
      const int n_rows = static_cast<int>(std::min<int64_t>(kPanelRows, row_end - r));
      const Unit<kKind>* u = units + p * units_per_panel;
      const ActBlock* a = act + t * n_sub;
      const TileSums sums{chunk_sums.f + t * kActFloatsPerBlock * n_sub, n_sub, chunk_sums.unit0};
      float* out = y + t * ld_y + r;
      switch (nt) {
        case 4: tile_store<kKind, 4>(u, units_per_panel, a, n_sub, sums, out, ld_y, n_rows, add); break;
        case 3: tile_store<kKind, 3>(u, units_per_panel, a, n_sub, sums, out, ld_y, n_rows, add); break;
        case 2: tile_store<kKind, 2>(u, units_per_panel, a, n_sub, sums, out, ld_y, n_rows, add); break;
        default: tile_store<kKind, 1>(u, units_per_panel, a, n_sub, sums, out, ld_y, n_rows, add); break;
      }
    }
  }
}

// Rows [row_begin, row_end) in blocks of 32. With more than one column chunk,
// tokens go in blocks of up to kTokBlock whose chunks sum into a contiguous
// buffer, copied to y once (y's rows lie w.rows floats apart, so adding each
// chunk in place sent its read-modify-write to L3; 1B Q4_0 and Q4_K_M pp512
// +9%, docs/PERFORMANCE.md section 12; the float path does the same). One
// chunk (rows of up to 1024 columns) stores straight to y.
constexpr int64_t kBlockRows = kPanels * kPanelRows, kTokBlock = 192;

template <class P>
void matmul_packed_typed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                         int64_t row_begin, int64_t row_end) {
  constexpr int64_t kBlkPerChunk = kChunkUnits / P::kUnitsPerBlock;
  const int64_t n_blk = w.cols / (32 * P::kUnitsPerBlock);
  const int64_t n_sub = w.cols / 32;
  const int64_t stride = n_blk * P::kBytes;
  const auto* base = static_cast<const uint8_t*>(w.data);
  // 40 KiB (52 KiB for Q6_K) of units and 24 KiB of sums on the stack
  Unit<P::kKind> units[kPanels * kChunkUnits];
  alignas(32) float sums[kTokBlock * kBlockRows];  // sums[t - t0][r - r0]
  const bool one_chunk = n_blk <= kBlkPerChunk;
  const int64_t tok_block = one_chunk ? n_tokens : kTokBlock;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kBlockRows) {
    const int64_t r1 = std::min(row_end, r0 + kBlockRows);
    const int n_panels = static_cast<int>((r1 - r0 + kPanelRows - 1) / kPanelRows);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += tok_block) {
      const int64_t nt = std::min(tok_block, n_tokens - t0);
      for (int64_t b0 = 0; b0 < n_blk; b0 += kBlkPerChunk) {
        const int64_t nb = std::min(kBlkPerChunk, n_blk - b0);
        const int64_t n_units = nb * P::kUnitsPerBlock;
        for (int p = 0; p < n_panels; ++p) {
          const int64_t r = r0 + p * kPanelRows;
          const int n_rows = static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r));
          pack_panel<P>(base, stride, r, n_rows, b0, nb, units + p * n_units);
        }
        // from token t0's activations and per-block floats on
        const TileSums chunk_sums{act_floats(act, n_tokens, n_sub) + t0 * kActFloatsPerBlock * n_sub, n_sub,
                                  b0 * P::kUnitsPerBlock};
        const ActBlock* a = act + t0 * n_sub + b0 * P::kUnitsPerBlock;
        if (one_chunk) {
          tokens_over_panels<P::kKind>(units, n_panels, n_units, r0, r1, a, n_sub, chunk_sums, nt, y, w.rows, false);
        } else {  // a panel's rows past r1 are zeros, so its 8 sums are stored whole
          tokens_over_panels<P::kKind>(units, n_panels, n_units, 0, n_panels * kPanelRows, a, n_sub, chunk_sums, nt,
                                       sums, kBlockRows, b0 > 0);
        }
      }
      if (one_chunk) continue;
      for (int64_t t = 0; t < nt; ++t)
        std::memcpy(y + (t0 + t) * w.rows + r0, sums + t * kBlockRows,
                    static_cast<size_t>(r1 - r0) * sizeof(float));
    }
  }
}

// y rows [row_begin, row_end) of w (a type packed_supports takes) for n_tokens
// tokens: the entry of both builds.
void packed_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  switch (w.dtype) {
    case DType::kQ4_0:
      return matmul_packed_typed<Q4_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0:
      return matmul_packed_typed<OffsetPack<BlockQ5_0>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1:
      return matmul_packed_typed<OffsetPack<BlockQ5_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0x8:
      return matmul_packed_typed<x86::GroupedPack<OffsetPack<BlockQ5_0>, DType::kQ5_0x8>>(w, act, n_tokens, y, row_begin,
                                                                                     row_end);
    case DType::kQ5_1x8:
      return matmul_packed_typed<x86::GroupedPack<OffsetPack<BlockQ5_1>, DType::kQ5_1x8>>(w, act, n_tokens, y, row_begin,
                                                                                     row_end);
    case DType::kQ4_1:
      return matmul_packed_typed<OffsetPack<BlockQ4_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ8_0:
      return matmul_packed_typed<Q8_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_K:
      return matmul_packed_typed<K45Pack<false>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_K:
      return matmul_packed_typed<K45Pack<true>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ6_K:
      return matmul_packed_typed<Q6_KPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ2_K:
      return matmul_packed_typed<K23Pack<BlockQ2_K>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ3_K:
      return matmul_packed_typed<K23Pack<BlockQ3_K>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_NL:
      return matmul_packed_typed<IQ4_NLPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_XS:
      return matmul_packed_typed<IQ4_XSPack>(w, act, n_tokens, y, row_begin, row_end);
    default:
      return;
  }
}

}  // namespace
}  // namespace llmpack::kernels::avx2
