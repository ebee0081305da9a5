// AVX-512 VNNI prefill GEMM for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL
// and IQ4_XS weights (several tokens at once), and for the codebook types from
// kCodebookPackedMinTokens tokens (CodebookPack); the counterpart of x86/matmul_packed_avx2.cc.
//
// Rows are packed, 16 at a time, into a row-interleaved panel on the stack
// (the weights in memory are never changed): for each 32-column unit, int32
// lane r of q[g] holds elements 4g..4g+3 of row r as unsigned bytes. One
// vpdpbusd of q[g] with a broadcast of 4 signed activation bytes adds 4
// products into each of the 16 rows' lanes: no horizontal sums, and each
// weight vector feeds kTile tokens, each activation broadcast kTilePanels panels.
// Packing 16 rows takes 16-byte loads and two rounds of vpermt2d per 16
// bytes of each row (transpose16x4).
//
// Per unit (Q6_K: per half-unit of 16 elements), with the exact int32 sum
// s = init + sum(q * a.q) (|s| < 2^21, so its float conversion is exact):
//   row . x += a.d * ws * s - wm * (a.d * a.qsum)
//   Q4_0: q = nibble, value = d (q - 8):      ws = d, init = -8 qsum
//   Q5_0: q in 0..31, value = d (q - 16):     ws = d, init = -16 qsum
//   Q5_1: q in 0..31, value = d q + m:        ws = d, wm = -m, init = 0
//   Q4_1: q = nibble, value = d q + m:         ws = d, wm = -m, init = 0
//   Q8_0: q = w + 128 (w xor 0x80):           ws = d, init = -128 qsum
//   Q4_K: q = nibble, value = d sc q - dmin m: ws = d sc, wm = dmin m, init = 0
//   (Q5_K: the same with q in 0..31)
//   Q6_K: q in 0..63, value = d sc_h (q - 32): ws = d sc_h, init = -32 qsum_h
//   Q3_K: q in 0..7, value = d (sc_h - 32) (q - 4): ws = d (sc_h - 32), init = -4 qsum_h
//   Q2_K: q in 0..3, value = d sc_h q - dmin m_h: ws = d sc_h, wm = dmin m_h, init = 0
//   IQ4_NL / IQ4_XS: q = grid value + 128:    ws = d (d (scale - 32)), init = -128 qsum
//   codebook types: q = unpacked weight + 128: ws = factor iscale, init = -128 qsum (per 16: qsum_h)
// so the offsets cost nothing (vpdpbusd accumulates onto init) and only Q4_K,
// Q5_K, Q4_1, Q5_1 and Q2_K (one per half) have a float min term.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512_internal.h"
#include "kernels/x86/grouped_pack.h"
#include "kernels/x86/iq_unpack_x86.h"

namespace llmpack::kernels::avx512 {
namespace {

using avx2::ActBlock;

// Measured on Zen 5 (1B shapes, 512 tokens): 64-row groups beat 32 by a few
// percent; 32x6 tiles beat 32x4, 32x7 and 16x12, and match 48x4 and 64x3
// (within noise; 64x3 is slower for Q4_K / Q6_K).
constexpr int kPanelRows = 16;   // rows per interleaved panel (one zmm of int32 lanes)
constexpr int kGroupPanels = 4;  // panels packed together (64 rows, 80 KiB of stack)
constexpr int kChunkUnits = 32;  // units of 32 columns packed at once (1024 columns)
constexpr int kTilePanels = 2;   // panels per register tile (32 rows)
constexpr int kTile = 6;         // tokens per register tile: 12 int32 + 12 f32 accumulators
// Fewest tokens for which packing pays; below it rows stream (AVX2), as in
// decode, where the weights' memory bandwidth bounds either kernel.
constexpr int64_t kMinTokens = 4;

// One unit (32 columns) of 16 rows. ws[0]: the rows' scales (the types with
// 16-element halves, Q6_K, Q3_K and Q2_K: of elements 0..15); ws[1]: Q4_K's
// mins, the halves' scales of elements 16..31; ws[2], ws[3]: Q2_K's mins of
// the two halves (only its units carry them: kScaleVecs).
template <int kScaleVecs>
struct alignas(64) UnitOf {
  uint8_t q[8][64];
  float ws[kScaleVecs][kPanelRows];
};
using Unit = UnitOf<2>;

// Per token and unit of a column chunk: the int32 start of the sum (init[1]:
// a half type's second half), the activation scale d, and the min term's
// activation sum d * qsum (Q4_K; Q2_K: dqs[h] = d * qsum of half h).
struct TokenUnit {
  int32_t init[2];
  float d;
  float dqs[2];
};

// Packing works on 16 rows at once: src[r] is row r's block (a zero block
// for rows past the matrix). transpose16x4 gives out[g] with int32 lane r =
// bytes off + 4g..off + 4g + 3 of row r: four 4-row loads, then two rounds of
// vpermt2d (no per-row work beyond the loads).
inline __m512i load4rows(const uint8_t* const* src, int k, int off) {
  const auto row = [&](int i) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[4 * k + i] + off)); };
  __m512i z = _mm512_castsi128_si512(row(0));
  z = _mm512_inserti32x4(z, row(1), 1);
  z = _mm512_inserti32x4(z, row(2), 2);
  return _mm512_inserti32x4(z, row(3), 3);
}

inline void transpose16x4(const uint8_t* const* src, int off, __m512i* out) {
  // z_k lane 4i + g = row 4k + i, group g. Round 1: rows 0..7 (or 8..15) of
  // groups {0, 1} (lo) or {2, 3} (hi), lane 8 * (g % 2) + row.
  const __m512i lo = _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29);
  const __m512i hi = _mm512_add_epi32(lo, _mm512_set1_epi32(2));
  const __m512i z0 = load4rows(src, 0, off), z1 = load4rows(src, 1, off);
  const __m512i z2 = load4rows(src, 2, off), z3 = load4rows(src, 3, off);
  const __m512i a = _mm512_permutex2var_epi32(z0, lo, z1), b = _mm512_permutex2var_epi32(z0, hi, z1);
  const __m512i c = _mm512_permutex2var_epi32(z2, lo, z3), d = _mm512_permutex2var_epi32(z2, hi, z3);
  // Round 2: group g's rows 0..7 from a / b, rows 8..15 from c / d.
  const __m512i g0 = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  const __m512i g1 = _mm512_add_epi32(g0, _mm512_set1_epi32(8));
  out[0] = _mm512_permutex2var_epi32(a, g0, c);
  out[1] = _mm512_permutex2var_epi32(a, g1, c);
  out[2] = _mm512_permutex2var_epi32(b, g0, d);
  out[3] = _mm512_permutex2var_epi32(b, g1, d);
}

// The f16 at byte `off` of each row's block, as 16 floats.
inline __m512 f16x16(const uint8_t* const* src, int off) {
  alignas(32) uint16_t h[kPanelRows];
  for (int r = 0; r < kPanelRows; ++r) std::memcpy(&h[r], src[r] + off, 2);
  return _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(h)));
}

inline __m512i nibbles_lo(__m512i v) { return _mm512_and_si512(v, _mm512_set1_epi8(0x0F)); }
inline __m512i nibbles_hi(__m512i v) { return nibbles_lo(_mm512_srli_epi32(v, 4)); }
// byte lanes of int32 lanes: (v >> 8 * byte) & mask, as float
inline __m512 byte_field(__m512i v, int shift, int mask) {
  return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_srli_epi32(v, shift), _mm512_set1_epi32(mask)));
}

// Each packer fills the kUnitsPerBlock units of one block of 16 rows
// (pack_block) and a TokenUnit's kind-specific fields (token).
struct Q4_0Pack {
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ4_0);
  static constexpr bool kMin = false, kHalves = false;
  static void pack_block(const uint8_t* const* src, Unit* u) {
    __m512i t[4];  // elements 4g.. (low nibbles) and 16 + 4g.. (high)
    transpose16x4(src, offsetof(BlockQ4_0, qs), t);
    for (int g = 0; g < 4; ++g) {
      _mm512_store_si512(u->q[g], nibbles_lo(t[g]));
      _mm512_store_si512(u->q[g + 4], nibbles_hi(t[g]));
    }
    _mm512_store_ps(u->ws[0], f16x16(src, offsetof(BlockQ4_0, d)));
  }
  static void token(const ActBlock& a, TokenUnit* tu) { tu->init[0] = -8 * a.qsum; }
};

struct Q8_0Pack {
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ8_0);
  static constexpr bool kMin = false, kHalves = false;
  static void pack_block(const uint8_t* const* src, Unit* u) {
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));  // w xor 0x80 = w + 128
    __m512i t[8];
    transpose16x4(src, offsetof(BlockQ8_0, qs), t);
    transpose16x4(src, offsetof(BlockQ8_0, qs) + 16, t + 4);
    for (int g = 0; g < 8; ++g) _mm512_store_si512(u->q[g], _mm512_xor_si512(t[g], bias));
    _mm512_store_ps(u->ws[0], f16x16(src, offsetof(BlockQ8_0, d)));
  }
  static void token(const ActBlock& a, TokenUnit* tu) { tu->init[0] = -128 * a.qsum; }
};

// Q4_1, Q5_0 and Q5_1: the nibbles as Q4_0's; Q5's fifth bits of a row's
// elements 4g..4g+3 are bits 4g..4g+3 of its qh (16 + 4g.. for the high
// nibbles), which one vpermd of a 16-entry table spreads to bit 4 of each
// byte (vpermd reads only the low 4 bits of each index lane).
template <class Block>
struct OffsetPack {
  static constexpr bool kHasMin = kBlockHasMin<Block>;
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(Block);
  static constexpr bool kMin = kHasMin, kHalves = false;
  static __m512i fifth_bits(__m512i qh, int shift) {
    alignas(64) static constexpr uint32_t kSpread[16] = {
        0x00000000, 0x00000010, 0x00001000, 0x00001010, 0x00100000, 0x00100010, 0x00101000, 0x00101010,
        0x10000000, 0x10000010, 0x10001000, 0x10001010, 0x10100000, 0x10100010, 0x10101000, 0x10101010};
    return _mm512_permutexvar_epi32(_mm512_srli_epi32(qh, shift), _mm512_load_si512(kSpread));
  }
  static void pack_block(const uint8_t* const* src, Unit* u) {
    __m512i t[4];  // elements 4g.. (low nibbles) and 16 + 4g.. (high)
    transpose16x4(src, offsetof(Block, qs), t);
    if constexpr (kBlockHasQh<Block>) {
      alignas(64) uint32_t bits[kPanelRows];
      for (int r = 0; r < kPanelRows; ++r) std::memcpy(&bits[r], src[r] + offsetof(Block, qh), 4);
      const __m512i qh = _mm512_load_si512(bits);
      for (int g = 0; g < 4; ++g) {
        _mm512_store_si512(u->q[g], _mm512_or_si512(nibbles_lo(t[g]), fifth_bits(qh, 4 * g)));
        _mm512_store_si512(u->q[g + 4], _mm512_or_si512(nibbles_hi(t[g]), fifth_bits(qh, 16 + 4 * g)));
      }
    } else {
      for (int g = 0; g < 4; ++g) {
        _mm512_store_si512(u->q[g], nibbles_lo(t[g]));
        _mm512_store_si512(u->q[g + 4], nibbles_hi(t[g]));
      }
    }
    _mm512_store_ps(u->ws[0], f16x16(src, offsetof(Block, d)));
    if constexpr (kHasMin)
      _mm512_store_ps(u->ws[1], _mm512_sub_ps(_mm512_setzero_ps(), f16x16(src, offsetof(Block, m))));
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    if constexpr (kHasMin) {
      tu->init[0] = 0;
      tu->dqs[0] = a.d * static_cast<float>(a.qsum);
    } else {
      tu->init[0] = -16 * a.qsum;
    }
  }
};

// Q4_K, and Q5_K (kFifthBit: the same layout plus qh[32], unit j's fifth
// bits at bit j of qh[0..31]): bytes 0..15 of a block are d, dmin and the 12
// packed scale bytes, so one transpose gives all 16 rows' scales (unpacked
// as unpack_q4k_scale does).
template <bool kFifthBit>
struct K45Pack {
  using Block = std::conditional_t<kFifthBit, BlockQ5_K, BlockQ4_K>;
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(Block);
  static constexpr bool kMin = true, kHalves = false;
  static void pack_scales(const uint8_t* const* src, Unit* u) {
    __m512i h[4];  // d | dmin << 16, scales[0..3], scales[4..7], scales[8..11]
    transpose16x4(src, 0, h);
    const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h[0]));
    const __m512 dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(h[0], 16)));
    for (int j = 0; j < 4; ++j) {
      _mm512_store_ps(u[j].ws[0], _mm512_mul_ps(d, byte_field(h[1], 8 * j, 63)));
      _mm512_store_ps(u[j].ws[1], _mm512_mul_ps(dmin, byte_field(h[2], 8 * j, 63)));
      const __m512 sc = _mm512_add_ps(byte_field(h[3], 8 * j, 0x0F),
                                      _mm512_mul_ps(byte_field(h[1], 8 * j + 6, 3), _mm512_set1_ps(16)));
      const __m512 mn = _mm512_add_ps(byte_field(h[3], 8 * j + 4, 0x0F),
                                      _mm512_mul_ps(byte_field(h[2], 8 * j + 6, 3), _mm512_set1_ps(16)));
      _mm512_store_ps(u[j + 4].ws[0], _mm512_mul_ps(d, sc));
      _mm512_store_ps(u[j + 4].ws[1], _mm512_mul_ps(dmin, mn));
    }
  }
  // Bit j of each byte moved to bit 4 (a 32-bit shift: what crosses from a
  // neighbouring byte lands outside 0x10).
  static __m512i fifth_bits(__m512i qh, int j) {
    const __m512i moved = j < 4 ? _mm512_sll_epi32(qh, _mm_cvtsi32_si128(4 - j))
                                : _mm512_srl_epi32(qh, _mm_cvtsi32_si128(j - 4));
    return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
  }
  static void pack_block(const uint8_t* const* src, Unit* u) {
    pack_scales(src, u);
    __m512i qh[8];  // group g: qh bytes 4g..4g+3 of each row
    if constexpr (kFifthBit) {
      transpose16x4(src, offsetof(BlockQ5_K, qh), qh);
      transpose16x4(src, offsetof(BlockQ5_K, qh) + 16, qh + 4);
    }
    for (int c = 0; c < 4; ++c) {  // qs[32c..32c+31]: units 2c (low nibbles), 2c+1 (high)
      __m512i t[8];
      transpose16x4(src, offsetof(Block, qs) + 32 * c, t);
      transpose16x4(src, offsetof(Block, qs) + 32 * c + 16, t + 4);
      for (int g = 0; g < 8; ++g) {
        __m512i lo = nibbles_lo(t[g]), hi = nibbles_hi(t[g]);
        if constexpr (kFifthBit) {
          lo = _mm512_or_si512(lo, fifth_bits(qh[g], 2 * c));
          hi = _mm512_or_si512(hi, fifth_bits(qh[g], 2 * c + 1));
        }
        _mm512_store_si512(u[2 * c].q[g], lo);
        _mm512_store_si512(u[2 * c + 1].q[g], hi);
      }
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->init[0] = 0;
    tu->dqs[0] = a.d * static_cast<float>(a.qsum);
  }
};

// Q6_K unit j = elements 128h + 32g + l (h = j / 4, g = j % 4), q in 0..63:
// low 4 bits from ql[64h + 32(g & 1) + l] (low nibble for g < 2, high after),
// high 2 bits from (qh[32h + l] >> 2g) & 3; scales[8h + 2g] and [8h + 2g + 1].
struct Q6_KPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMin = false, kHalves = true;
  static void pack_block(const uint8_t* const* src, Unit* u) {
    const __m512 d = f16x16(src, offsetof(BlockQ6_K, d));
    __m512i sc[4];  // scales[4i..4i+3] as int32 lane of each row
    transpose16x4(src, offsetof(BlockQ6_K, scales), sc);
    for (int j = 0; j < 8; ++j) {
      const int m = 8 * (j / 4) + 2 * (j % 4), byte = m % 4;  // byte 0 or 2
      const __m512i v = sc[m / 4];
      const __m512i a = _mm512_srai_epi32(_mm512_slli_epi32(v, 24 - 8 * byte), 24);
      const __m512i b = _mm512_srai_epi32(_mm512_slli_epi32(v, 16 - 8 * byte), 24);
      _mm512_store_ps(u[j].ws[0], _mm512_mul_ps(d, _mm512_cvtepi32_ps(a)));
      _mm512_store_ps(u[j].ws[1], _mm512_mul_ps(d, _mm512_cvtepi32_ps(b)));
    }
    const __m512i mask2 = _mm512_set1_epi8(3);
    for (int h = 0; h < 2; ++h) {
      __m512i ql[16], qh[8];
      for (int i = 0; i < 4; ++i) transpose16x4(src, offsetof(BlockQ6_K, ql) + 64 * h + 16 * i, ql + 4 * i);
      for (int i = 0; i < 2; ++i) transpose16x4(src, offsetof(BlockQ6_K, qh) + 32 * h + 16 * i, qh + 4 * i);
      for (int g = 0; g < 4; ++g)
        for (int i = 0; i < 8; ++i) {
          const __m512i l = ql[8 * (g & 1) + i];
          const __m512i low = g < 2 ? nibbles_lo(l) : nibbles_hi(l);
          const __m512i high = _mm512_and_si512(_mm512_srli_epi32(qh[i], 2 * g), mask2);
          _mm512_store_si512(u[4 * h + g].q[i], _mm512_or_si512(low, _mm512_slli_epi32(high, 4)));
        }
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->init[0] = -32 * a.qsum_lo;
    tu->init[1] = -32 * (a.qsum - a.qsum_lo);
  }
};

// IQ4_NL (a block is one unit) and IQ4_XS (8 units of 32): the indices'
// grid values (vpshufb of kIQ4Values) are signed, so they go as Q8_0's do
// (w + 128, init -128 qsum). IQ4_XS's bytes 0..7 are d | scales_h << 16 and
// scales_l: one transpose gives all 16 rows' 6-bit scales.
template <bool kSuper>
struct IQ4Pack {
  using Block = std::conditional_t<kSuper, BlockIQ4_XS, BlockIQ4_NL>;
  static constexpr int kUnitsPerBlock = kSuper ? 8 : 1, kBytes = sizeof(Block);
  static constexpr bool kMin = false, kHalves = false;
  // the grid values + 128 of the nibbles of t (elements 4g.. or 16 + 4g..)
  static __m512i values(__m512i nibbles) {
    const __m512i table = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values)));
    return _mm512_xor_si512(_mm512_shuffle_epi8(table, nibbles), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static void pack_unit(const uint8_t* const* src, int off, Unit* u) {
    __m512i t[4];
    transpose16x4(src, off, t);
    for (int g = 0; g < 4; ++g) {
      _mm512_store_si512(u->q[g], values(nibbles_lo(t[g])));
      _mm512_store_si512(u->q[g + 4], values(nibbles_hi(t[g])));
    }
  }
  static void pack_block(const uint8_t* const* src, Unit* u) {
    if constexpr (!kSuper) {
      pack_unit(src, offsetof(BlockIQ4_NL, qs), u);
      _mm512_store_ps(u->ws[0], f16x16(src, offsetof(BlockIQ4_NL, d)));
    } else {
      __m512i h[4];  // d | scales_h << 16, scales_l[0..3], ...
      transpose16x4(src, 0, h);
      const __m512 d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(h[0]));
      for (int j = 0; j < 8; ++j) {
        const __m512i low = _mm512_and_si512(_mm512_srli_epi32(h[1], 4 * j), _mm512_set1_epi32(0x0F));
        const __m512i high = _mm512_and_si512(_mm512_srli_epi32(h[0], 16 + 2 * j), _mm512_set1_epi32(3));
        const __m512i ls = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)), _mm512_set1_epi32(32));
        _mm512_store_ps(u[j].ws[0], _mm512_mul_ps(d, _mm512_cvtepi32_ps(ls)));
        pack_unit(src, offsetof(BlockIQ4_XS, qs) + 16 * j, u + j);
      }
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) { tu->init[0] = -128 * a.qsum; }
};

// The codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
// each of the 16 rows' super-blocks is unpacked (kernels/iq_unpack.h) to
// signed int8 weights q (|q| <= 62), an odd integer scale per 16 weights and
// a float factor per super-block, then packed as Q8_0's bytes are (q + 128,
// init -128 qsum): unit j of a row weighs factor * iscale * q. The types
// whose scale changes every 16 weights (IQ2_XS, IQ2_S, IQ1_M) take halves, as
// Q6_K does. The unpacking, the costly part, is paid once per row chunk and
// shared by every token.
template <class Block, void (*kUnpack)(const Block&, int8_t*, int32_t*, float*), bool kPer16>
struct CodebookPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(Block);
  static constexpr bool kMin = false, kHalves = kPer16;
  // Out of line: inlined into pack_block, GCC built the unpacker's 8-byte
  // grid entries through 2-byte stack stores, and 17-token calls ran 1.6x slower.
  [[gnu::noinline]] static void unpack(const uint8_t* block, int8_t* q, int32_t* iscale, float* factor) {
    kUnpack(*reinterpret_cast<const Block*>(block), q, iscale, factor);
  }
  static void pack_block(const uint8_t* const* src, Unit* u) {
    alignas(64) int8_t q[kPanelRows][kQKK];
    const uint8_t* rows[kPanelRows];
    for (int r = 0; r < kPanelRows; ++r) {
      int32_t iscale[16];  // the row's scale of weights 16i..16i+15
      float factor;
      unpack(src[r], q[r], iscale, &factor);
      rows[r] = reinterpret_cast<const uint8_t*>(q[r]);
      for (int j = 0; j < 8; ++j)
        for (int h = 0; h < (kPer16 ? 2 : 1); ++h) u[j].ws[h][r] = factor * static_cast<float>(iscale[2 * j + h]);
    }
    const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int j = 0; j < 8; ++j) {
      __m512i t[8];
      transpose16x4(rows, 32 * j, t);
      transpose16x4(rows, 32 * j + 16, t + 4);
      for (int g = 0; g < 8; ++g) _mm512_store_si512(u[j].q[g], _mm512_xor_si512(t[g], bias));
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    if constexpr (kPer16) {
      tu->init[0] = -128 * a.qsum_lo;
      tu->init[1] = -128 * (a.qsum - a.qsum_lo);
    } else {
      tu->init[0] = -128 * a.qsum;
    }
  }
};
using IQ2_XXSPack = CodebookPack<BlockIQ2_XXS, iq_unpack_iq2_xxs<X86Unpack>, false>;
using IQ2_XSPack = CodebookPack<BlockIQ2_XS, iq_unpack_iq2_xs<X86Unpack>, true>;
using IQ2_SPack = CodebookPack<BlockIQ2_S, iq_unpack_iq2_s<X86Unpack>, true>;
using IQ3_XXSPack = CodebookPack<BlockIQ3_XXS, iq_unpack_iq3_xxs<X86Unpack>, false>;
using IQ3_SPack = CodebookPack<BlockIQ3_S, iq_unpack_iq3_s<X86Unpack>, false>;
using IQ1_SPack = CodebookPack<BlockIQ1_S, iq_unpack_iq1_s<X86Unpack>, false>;
using IQ1_MPack = CodebookPack<BlockIQ1_M, iq_unpack_iq1_m<X86Unpack>, true>;

// Q3_K unit j = 4n + k: q in 0..7 (value d (sc - 32) (q - 4)), the low 2 bits
// (qs[32n + l] >> 2k) & 3 and the third bit j of hmask[l] moved to bit 2; the
// 16-element halves take scales 2j and 2j + 1 (ws[h]) and init -4 qsum_h.
struct Q3_KPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ3_K);
  static constexpr bool kMin = false, kHalves = true;
  static void pack_block(const uint8_t* const* src, Unit* u) {
    const __m512 d = f16x16(src, offsetof(BlockQ3_K, d));
    alignas(64) float sc[16][kPanelRows];  // sub-block s of row r, less 32
    for (int r = 0; r < kPanelRows; ++r)
      for (int s = 0; s < 16; ++s)
        sc[s][r] = static_cast<float>(q3k_scale(src[r] + offsetof(BlockQ3_K, scales), s) - 32);
    __m512i hm[8], qs[16];  // group g: bytes 4g..4g+3 of each row's hmask / qs[32n..]
    transpose16x4(src, offsetof(BlockQ3_K, hmask), hm);
    transpose16x4(src, offsetof(BlockQ3_K, hmask) + 16, hm + 4);
    for (int i = 0; i < 4; ++i) transpose16x4(src, offsetof(BlockQ3_K, qs) + 16 * i, qs + 4 * i);
    for (int j = 0; j < 8; ++j) {
      _mm512_store_ps(u[j].ws[0], _mm512_mul_ps(d, _mm512_load_ps(sc[2 * j])));
      _mm512_store_ps(u[j].ws[1], _mm512_mul_ps(d, _mm512_load_ps(sc[2 * j + 1])));
      const int n = j / 4, k = j % 4;
      for (int g = 0; g < 8; ++g) {
        const __m512i low = _mm512_and_si512(_mm512_srli_epi32(qs[8 * n + g], 2 * k), _mm512_set1_epi8(3));
        // bit j to bit 2 (32-bit shifts: what crosses from a neighbour byte lands outside 0x04)
        const __m512i moved = j < 2 ? _mm512_slli_epi32(hm[g], 2 - j) : _mm512_srli_epi32(hm[g], j - 2);
        _mm512_store_si512(u[j].q[g], _mm512_or_si512(low, _mm512_and_si512(moved, _mm512_set1_epi8(4))));
      }
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->init[0] = -4 * a.qsum_lo;
    tu->init[1] = -4 * (a.qsum - a.qsum_lo);
  }
};

// Q2_K unit j = 4n + k: q = (qs[32n + l] >> 2k) & 3; its halves are
// sub-blocks 2j and 2j + 1, whose scale bytes hold sc (low nibble: ws[h] =
// d sc) and m (high nibble: ws[2 + h] = dmin m), with the min term's sums
// d * qsum of each half.
struct Q2_KPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ2_K), kScaleVecs = 4;
  static constexpr bool kMin = true, kHalves = true;
  static void pack_block(const uint8_t* const* src, UnitOf<kScaleVecs>* u) {
    const __m512 d = f16x16(src, offsetof(BlockQ2_K, d));
    const __m512 dmin = f16x16(src, offsetof(BlockQ2_K, dmin));
    __m512i sc[4], qs[16];  // scales[4i..4i+3] / qs[32n + 4g..] (qs[8n + g]) as int32 lane of each row
    transpose16x4(src, offsetof(BlockQ2_K, scales), sc);
    for (int i = 0; i < 4; ++i) transpose16x4(src, offsetof(BlockQ2_K, qs) + 16 * i, qs + 4 * i);
    for (int j = 0; j < 8; ++j) {
      const int bit = 16 * (j % 2);  // scales 2j and 2j + 1 are bytes 2 (j % 2) and + 1 of lane j / 2
      for (int h = 0; h < 2; ++h) {
        _mm512_store_ps(u[j].ws[h], _mm512_mul_ps(d, byte_field(sc[j / 2], bit + 8 * h, 0x0F)));
        _mm512_store_ps(u[j].ws[2 + h], _mm512_mul_ps(dmin, byte_field(sc[j / 2], bit + 8 * h + 4, 0x0F)));
      }
      const int n = j / 4, k = j % 4;
      for (int g = 0; g < 8; ++g)
        _mm512_store_si512(u[j].q[g], _mm512_and_si512(_mm512_srli_epi32(qs[8 * n + g], 2 * k), _mm512_set1_epi8(3)));
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->dqs[0] = a.d * static_cast<float>(a.qsum_lo);
    tu->dqs[1] = a.d * static_cast<float>(a.qsum - a.qsum_lo);
  }
};

// The unit type of packer P: UnitOf<P::kScaleVecs>, or Unit.
template <class P>
constexpr int scale_vecs() {
  if constexpr (requires { P::kScaleVecs; })
    return P::kScaleVecs;
  else
    return 2;
}
template <class P>
using UnitFor = UnitOf<scale_vecs<P>()>;

// Stands in for the blocks of rows past the matrix (zero quants and scales).
alignas(64) constexpr uint8_t kZeroBlock[256] = {};
static_assert(sizeof(BlockQ6_K) <= sizeof(kZeroBlock));

// Packs rows [r0, r0 + n_rows) (n_rows <= 16; missing rows are zero, with
// zero scales) over blocks [blk0, blk0 + n_blk) into u[n_blk * kUnitsPerBlock].
template <class P>
void pack_panel(const uint8_t* base, int64_t stride, int64_t r0, int n_rows, int64_t blk0,
                int64_t n_blk, UnitFor<P>* u) {
  if constexpr (requires { P::kGroupedType; })  // a grouped Q5 type: ungrouped, then packed as plain
    return x86::pack_ungrouped<kPanelRows, kChunkUnits, P>(
        base, stride, r0, n_rows, blk0, n_blk, [&](const uint8_t* plain, int64_t plain_stride) {
          pack_panel<typename P::Plain>(plain, plain_stride, 0, n_rows, 0, n_blk, u);
        });
  const uint8_t* src[kPanelRows];
  for (int r = 0; r < kPanelRows; ++r)
    src[r] = r < n_rows ? base + (r0 + r) * stride + blk0 * P::kBytes : kZeroBlock;
  for (int64_t b = 0; b < n_blk; ++b) {
    P::pack_block(src, u + b * P::kUnitsPerBlock);
    for (int r = 0; r < n_rows; ++r) src[r] += P::kBytes;
  }
}

// The TokenUnits of tokens [0, n_tokens) (n_tokens <= kTile) over the chunk's
// n_units units (act: unit 0 of the chunk for token 0; tu[t * kChunkUnits + k]).
template <class P>
void fill_token_units(const ActBlock* act, int64_t n_sub, int64_t n_tokens, int64_t n_units,
                      TokenUnit* tu) {
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t k = 0; k < n_units; ++k) {
      const ActBlock& a = act[t * n_sub + k];
      TokenUnit& out = tu[t * kChunkUnits + k];
      out = TokenUnit{{0, 0}, a.d, {0.0f, 0.0f}};
      P::token(a, &out);
    }
}

// acc[p * T + t] (rows of panel p, token t) += panels . act of token t over
// n_units units. u: panel 0 (panel p at u + p * kChunkUnits); act / tu: token
// 0 at unit 0 of the chunk, token t at act + t * n_sub, tu + t * kChunkUnits.
template <class P, int NP, int T>
inline void tile(const UnitFor<P>* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                 const TokenUnit* tu, __m512* acc) {
  constexpr int kHalves = P::kHalves ? 2 : 1, kGroups = 8 / kHalves;
  for (int64_t k = 0; k < n_units; ++k) {
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) {
      __m512i s[NP * T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512i init = _mm512_set1_epi32(tu[t * kChunkUnits + k].init[h]);
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) s[p * T + t] = init;
      }
#pragma GCC unroll 8
      for (int g = 0; g < kGroups; ++g) {
        const int gg = h * kGroups + g;
        __m512i w[NP];
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) w[p] = _mm512_load_si512(u[p * kChunkUnits + k].q[gg]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          // One vpbroadcastd feeds NP dot products. (vpdpbusd's embedded
          // {1to16} broadcast through inline asm measured 10-20% slower here.)
          int32_t a4;
          std::memcpy(&a4, act[t * n_sub + k].q + 4 * gg, 4);
          const __m512i a = _mm512_set1_epi32(a4);
#pragma GCC unroll 4
          for (int p = 0; p < NP; ++p) s[p * T + t] = _mm512_dpbusd_epi32(s[p * T + t], w[p], a);
        }
      }
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        const __m512 ws = _mm512_load_ps(u[p * kChunkUnits + k].ws[h]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const __m512 sd = _mm512_mul_ps(_mm512_cvtepi32_ps(s[p * T + t]),
                                          _mm512_set1_ps(tu[t * kChunkUnits + k].d));
          acc[p * T + t] = _mm512_fmadd_ps(sd, ws, acc[p * T + t]);
          if constexpr (P::kMin) {  // Q2_K: half h's; the others' (h = 0): ws[1], dqs[0]
            const __m512 wm = _mm512_load_ps(u[p * kChunkUnits + k].ws[P::kHalves ? 2 + h : 1]);
            const __m512 dqs = _mm512_set1_ps(tu[t * kChunkUnits + k].dqs[h]);
            acc[p * T + t] = _mm512_fnmadd_ps(wm, dqs, acc[p * T + t]);
          }
        }
      }
    }
  }
}

// y rows [0, n_rows) (n_rows <= 16 * NP) of tokens [0, T) at y (row stride
// ld_y per token): stores (first chunk) or adds.
template <class P, int NP, int T>
void tile_store(const UnitFor<P>* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                const TokenUnit* tu, float* y, int64_t ld_y, int n_rows, bool add) {
  __m512 acc[NP * T];
  for (int i = 0; i < NP * T; ++i) acc[i] = _mm512_setzero_ps();
  tile<P, NP, T>(u, n_units, act, n_sub, tu, acc);
  for (int p = 0; p < NP; ++p) {
    const int rows = std::min(kPanelRows, n_rows - p * kPanelRows);
    for (int t = 0; t < T; ++t) {
      float* out = y + t * ld_y + p * kPanelRows;
      __m512 v = acc[p * T + t];
      if (rows == kPanelRows) {
        if (add) v = _mm512_add_ps(v, _mm512_loadu_ps(out));
        _mm512_storeu_ps(out, v);
      } else {  // a partial panel at the end of the row range: no access past it
        alignas(64) float tmp[kPanelRows];
        _mm512_store_ps(tmp, v);
        for (int r = 0; r < rows; ++r) out[r] = add ? out[r] + tmp[r] : tmp[r];
      }
    }
  }
}

// tile_store for nt <= T tokens (the token tail picks a smaller tile).
template <class P, int NP, int T>
void tile_tokens(int nt, const UnitFor<P>* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                 const TokenUnit* tu, float* y, int64_t ld_y, int n_rows, bool add) {
  if (nt == T) return tile_store<P, NP, T>(u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
  if constexpr (T > 1) tile_tokens<P, NP, T - 1>(nt, u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
}

// tile_tokens for np <= NP panels (the last tile of a group may have fewer).
template <class P, int NP>
void tile_panels(int np, int nt, const UnitFor<P>* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                 const TokenUnit* tu, float* y, int64_t ld_y, int n_rows, bool add) {
  if (np == NP) return tile_tokens<P, NP, kTile>(nt, u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
  if constexpr (NP > 1) tile_panels<P, NP - 1>(np, nt, u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
}

// All tokens against the n_panels packed panels of rows [r0, r1). Each token
// tile's TokenUnits are derived into a small stack table first (forward
// allocates nothing, P6; the cost is one entry per 2048 multiply-adds).
template <class P>
void tokens_over_panels(const UnitFor<P>* units, int n_panels, int64_t n_units, int64_t r0, int64_t r1,
                        const ActBlock* act, int64_t n_sub, int64_t n_tokens, float* y, int64_t ld_y,
                        bool add) {
  TokenUnit tt[kTile * kChunkUnits];
  for (int64_t t = 0; t < n_tokens; t += kTile) {
    const int nt = static_cast<int>(std::min<int64_t>(kTile, n_tokens - t));
    fill_token_units<P>(act + t * n_sub, n_sub, nt, n_units, tt);
    for (int p = 0; p < n_panels; p += kTilePanels) {
      const int np = std::min(kTilePanels, n_panels - p);
      const int64_t r = r0 + p * kPanelRows;
      const int n_rows = static_cast<int>(std::min<int64_t>(np * kPanelRows, r1 - r));
      const UnitFor<P>* u = units + p * kChunkUnits;
      const ActBlock* a = act + t * n_sub;
      float* out = y + t * ld_y + r;
      tile_panels<P, kTilePanels>(np, nt, u, n_units, a, n_sub, tt, out, ld_y, n_rows, add);
    }
  }
}

template <class P>
void matmul_typed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                  int64_t row_begin, int64_t row_end) {
  constexpr int64_t kBlkPerChunk = kChunkUnits / P::kUnitsPerBlock;
  const int64_t n_blk = w.cols / (32 * P::kUnitsPerBlock);
  const int64_t n_sub = w.cols / 32;
  const int64_t stride = n_blk * P::kBytes;
  const auto* base = static_cast<const uint8_t*>(w.data);
  UnitFor<P> units[kGroupPanels * kChunkUnits];  // 80 KiB of stack (Q2_K: 96 KiB)
  for (int64_t b0 = 0; b0 < n_blk; b0 += kBlkPerChunk) {
    const int64_t nb = std::min(kBlkPerChunk, n_blk - b0);
    const int64_t n_units = nb * P::kUnitsPerBlock;
    const ActBlock* chunk_act = act + b0 * P::kUnitsPerBlock;
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kGroupPanels * kPanelRows) {
      const int64_t r1 = std::min(row_end, r0 + kGroupPanels * kPanelRows);
      const int n_panels = static_cast<int>((r1 - r0 + kPanelRows - 1) / kPanelRows);
      for (int p = 0; p < n_panels; ++p) {
        const int64_t r = r0 + p * kPanelRows;
        const int n_rows = static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r));
        pack_panel<P>(base, stride, r, n_rows, b0, nb, units + p * kChunkUnits);
      }
      tokens_over_panels<P>(units, n_panels, n_units, r0, r1, chunk_act, n_sub, n_tokens, y, w.rows,
                            b0 > 0);
    }
  }
}

}  // namespace

bool quant_supports(DType dtype, int64_t n_tokens) {
  const bool packed = dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ5_0 ||
                      dtype == DType::kQ5_1 || dtype == DType::kQ5_0x8 || dtype == DType::kQ5_1x8 ||
                      dtype == DType::kQ8_0 || dtype == DType::kQ2_K || dtype == DType::kQ3_K ||
                      dtype == DType::kQ4_K || dtype == DType::kQ5_K || dtype == DType::kQ6_K ||
                      dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS;
  if (is_codebook_type(dtype)) return n_tokens >= kCodebookPackedMinTokens;
  return packed && n_tokens >= kMinTokens;
}

void matmul_rows_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end) {
  switch (w.dtype) {
    case DType::kQ4_0: return matmul_typed<Q4_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_1: return matmul_typed<OffsetPack<BlockQ4_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0: return matmul_typed<OffsetPack<BlockQ5_0>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1: return matmul_typed<OffsetPack<BlockQ5_1>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_0x8:
      return matmul_typed<x86::GroupedPack<OffsetPack<BlockQ5_0>, DType::kQ5_0x8>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_1x8:
      return matmul_typed<x86::GroupedPack<OffsetPack<BlockQ5_1>, DType::kQ5_1x8>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ8_0: return matmul_typed<Q8_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_K: return matmul_typed<K45Pack<false>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ5_K: return matmul_typed<K45Pack<true>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ6_K: return matmul_typed<Q6_KPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ2_K: return matmul_typed<Q2_KPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ3_K: return matmul_typed<Q3_KPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_NL: return matmul_typed<IQ4Pack<false>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_XS: return matmul_typed<IQ4Pack<true>>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ2_XXS: return matmul_typed<IQ2_XXSPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ2_XS: return matmul_typed<IQ2_XSPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ2_S: return matmul_typed<IQ2_SPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ3_XXS: return matmul_typed<IQ3_XXSPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ3_S: return matmul_typed<IQ3_SPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ1_S: return matmul_typed<IQ1_SPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ1_M: return matmul_typed<IQ1_MPack>(w, act, n_tokens, y, row_begin, row_end);
    default: return;
  }
}

}  // namespace llmpack::kernels::avx512
