// The quants of the low-bit GGUF types (Q2_K, Q3_K, IQ4_NL, IQ4_XS; layouts in
// quant_blocks.h) as 32 bytes of one vector, element i of a 32-element unit in
// byte i, for the AVX2 decode and prefill kernels (and the AVX-512 ones).
//
// Include only from ISA-flagged files (*_avx2.cc, *_avxvnni.cc, *_avx512.cc): as in
// q4k_scales.h, the functions sit in an unnamed namespace so that each
// including file compiles its own copy with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/x86/q5_bits.h"

namespace llmpack::kernels::x86 {
namespace {  // NOLINT(build/namespaces): a copy per ISA, see above

// kIQ4Values in both 128-bit lanes, for one vpshufb lookup of 32 indices.
inline __m256i iq4_table() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
  return _mm256_broadcastsi128_si256(t);
}

// The signed grid values (-127..113) of the 32 elements whose indices are the
// nibbles of qs[16] (IQ4_NL's block, IQ4_XS's sub-block).
inline __m256i iq4_values(const uint8_t* qs, __m256i table) { return _mm256_shuffle_epi8(table, q4_quants(qs)); }

// Q2_K / Q3_K unit j (elements 32j..32j+31 of a super-block, j = 4n + k):
// the 2 low bits of each, bits 2k, 2k + 1 of qs[32n..32n+31].
inline __m256i k23_low_bits(const uint8_t* qs, int j) {
  const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (j / 4)));
  return _mm256_and_si256(_mm256_srl_epi16(raw, _mm_cvtsi32_si128(2 * (j % 4))), _mm256_set1_epi8(3));
}

// Q3_K unit j's quants as unsigned q in 0..7 (value = scale * (q - 4)): the
// low bits, plus 4 where bit j of hmask[l] is set, moved to bit 2 by one
// 16-bit shift (what crosses from the other byte lands outside the mask).
inline __m256i q3k_quants(const BlockQ3_K& b, int j) {
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.hmask));
  const __m256i moved = j < 2 ? _mm256_sll_epi16(hm, _mm_cvtsi32_si128(2 - j))
                              : _mm256_srl_epi16(hm, _mm_cvtsi32_si128(j - 2));
  return _mm256_or_si256(k23_low_bits(b.qs, j), _mm256_and_si256(moved, _mm256_set1_epi8(4)));
}

// The 16 sub-block scales of a Q2_K (low nibbles of scales[]) or Q3_K
// (q3k_scale - 32) block as 16 signed bytes.
inline __m128i k23_scale_bytes(const BlockQ2_K& b) {
  return _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), _mm_set1_epi8(0x0F));
}
// Q3_K's 12 scale bytes read as three little-endian words w and remixed into
// the four words of 16 bytes: low nibbles of w0, w1 (sub-blocks 0..7), high
// nibbles (8..15), each with its 2 high bits from w2 (see q3k_scale).
inline __m128i k23_scale_bytes(const BlockQ3_K& b) {
  uint32_t w[3];
  std::memcpy(w, b.scales, 12);
  const uint32_t lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
  const __m128i s = _mm_setr_epi32(static_cast<int>((w[0] & lo4) | (w[2] & lo2) << 4),
                                   static_cast<int>((w[1] & lo4) | ((w[2] >> 2) & lo2) << 4),
                                   static_cast<int>(((w[0] >> 4) & lo4) | ((w[2] >> 4) & lo2) << 4),
                                   static_cast<int>(((w[1] >> 4) & lo4) | ((w[2] >> 6) & lo2) << 4));
  return _mm_sub_epi8(s, _mm_set1_epi8(32));
}

// Q4_0's 8 scales of a step in kPairLaneBlock order, without a trip through
// the stack: block k's d lies at byte 18k, which is word k of the 16-byte
// segment k, so word blends of 4 loads pick them out. Gathering them through
// a stack array (8 two-byte stores, then one 16-byte load that no store can
// forward) made Q4_0 decode 3-10% slower in the decode driver, both orders
// (docs/PERFORMANCE.md section 17); Q8_0's 34-byte blocks gained nothing.
// IQ4_NL's blocks have Q4_0's layout, so its decode reads its scales so too.
inline __m256 q4_0_scales_paired(const uint8_t* p) {
  static_assert(sizeof(BlockQ4_0) == 18);
  const __m256i v01 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i v23 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  const __m256i v45 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 64));
  const __m256i v67 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 96));
  // low lane: d0 d2 d4 d6 in words 0 2 4 6; high lane: d1 d3 d5 d7 in words 1 3 5 7
  const __m256i c = _mm256_blend_epi16(_mm256_blend_epi16(v01, v23, 0x0C), _mm256_blend_epi16(v45, v67, 0xC0), 0xF0);
  // -> d0 d2 d4 d6 d1 d3 d5 d7 (kPairLaneBlock)
  const __m256i pick = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                        -1, -1, -1, -1, -1, -1, -1, -1, 2, 3, 6, 7, 10, 11, 14, 15);
  const __m256i g = _mm256_shuffle_epi8(c, pick);
  return _mm256_cvtph_ps(_mm_or_si128(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1)));
}

// An IQ4_XS super-block's 8 unit scales (scale_j - 32, 6 bits each: nibble j
// of scales_l, bits 2j..2j+1 of scales_h above it) as int32 lanes in the
// order iq4_dots8 leaves the units' dots: 0, 2, 4, 6, then 1, 3, 5, 7.
inline __m256i iq4xs_scales8(const BlockIQ4_XS& b) {
  const __m256i low_shift = _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28);  // 4 j, j in lane order
  const __m256i high_shift = _mm256_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14);   // 2 j
  uint32_t low;
  std::memcpy(&low, b.scales_l, 4);
  const __m256i lo =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)), low_shift), _mm256_set1_epi32(0x0F));
  const __m256i hi =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), high_shift), _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
}

// The int32 dots of 8 units of IQ4 indices against paired activations
// (avx2_internal.h PairedActs): pair(i) gives the 32 index bytes of units
// 2i, 2i + 1 as [A: 16 bytes | B: 16 bytes] (low nibbles their elements
// 0..15, high 16..31), aq the 8 units' paired activations; each 32 indices
// are looked up in `table` and unit_dot(acc, values, a) adds their products
// with the 32 activations at a to acc's 8 int32 partial sums. Two rounds of vphaddd
// leave unit k's dot in lane kPairLaneBlock^-1(k) = A units 0, 2, 4, 6 low,
// B units 1, 3, 5, 7 high.
template <class Pair, class UnitDot>
inline __m256i iq4_unit_dots8(Pair pair, const int8_t* aq, __m256i table, UnitDot unit_dot) {
  const __m256i mask = _mm256_set1_epi8(0x0F);
  __m256i d[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m256i raw = pair(i);
    const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, mask));
    const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask));
    d[i] = unit_dot(unit_dot(_mm256_setzero_si256(), lo, aq + 64 * i), hi, aq + 64 * i + 32);
  }
  return _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
}

// iq4_unit_dots8 on the signed grid (iq4_table) by the sign trick (|v| <=
// 127: a vpmaddubsw lane stays within int16, but two do not, so each takes
// its own vpmaddwd).
template <class Pair>
inline __m256i iq4_dots8(Pair pair, const int8_t* aq, __m256i table) {
  return iq4_unit_dots8(pair, aq, table, [](__m256i acc, __m256i v, const int8_t* a) {
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(av, v));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
  });
}

}  // namespace
}  // namespace llmpack::kernels::x86
