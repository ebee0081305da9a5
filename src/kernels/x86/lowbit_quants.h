// The quants of the low-bit GGUF types (Q2_K, Q3_K, IQ4_NL, IQ4_XS; layouts in
// quant_blocks.h) as 32 bytes of one vector, element i of a 32-element unit in
// byte i, for the AVX2 decode and prefill kernels (and the AVX-512 ones).
//
// Include only from ISA-flagged files (*_avx2.cc, *_avx512.cc): as in
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

// The int32 dots of 8 units of IQ4 indices against paired activations
// (avx2_internal.h PairedActs): pair(i) gives the 32 index bytes of units
// 2i, 2i + 1 as [A: 16 bytes | B: 16 bytes] (low nibbles their elements
// 0..15, high 16..31), aq the 8 units' paired activations. Each pair's grid
// values go through the sign trick (|v| <= 127: a vpmaddubsw lane stays
// within int16, but two do not, so each takes its own vpmaddwd); two rounds
// of vphaddd leave unit k's dot in lane kPairLaneBlock^-1(k) = A units 0, 2,
// 4, 6 low, B units 1, 3, 5, 7 high.
template <class Pair>
inline __m256i iq4_dots8(Pair pair, const int8_t* aq, __m256i table) {
  const __m256i mask = _mm256_set1_epi8(0x0F), ones = _mm256_set1_epi16(1);
  const auto dot = [&](__m256i v, const int8_t* a) {
    const __m256i av = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
    return _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(av, v)), ones);
  };
  __m256i d[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m256i raw = pair(i);
    const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(raw, mask));
    const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask));
    d[i] = _mm256_add_epi32(dot(lo, aq + 64 * i), dot(hi, aq + 64 * i + 32));
  }
  return _mm256_hadd_epi32(_mm256_hadd_epi32(d[0], d[1]), _mm256_hadd_epi32(d[2], d[3]));
}

}  // namespace
}  // namespace llmpack::kernels::x86
