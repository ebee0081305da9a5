// A Q4_1 / Q5_0 / Q5_1 block's 32 quants (layout in quant_blocks.h) as the
// 32 bytes of one vector, element i in byte i, for the AVX2 decode and
// prefill kernels.
//
// Include only from ISA-flagged files (*_avx2.cc): as in q4k_scales.h, the
// function sits in an unnamed namespace so that each including file compiles
// its own copy with its own flags.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace llmpack::kernels::x86 {
namespace {  // NOLINT(build/namespaces): a copy per ISA, see above

// Bytes 0..15: the low nibbles of qs, 16..31: the high ones (the 16 bytes
// in both halves, the upper half shifted right by 4): Q4_0's and Q4_1's quants.
inline __m256i q4_quants(const uint8_t* qs) {
  const __m256i raw = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
  return _mm256_and_si256(_mm256_srlv_epi32(raw, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
}

// q4_quants, each ORed with 16 where its bit of qh is set.
inline __m256i q5_quants(const uint8_t* qs, const uint8_t* qh) {
  const __m256i low = q4_quants(qs);
  // the 4 bytes of qh in every dword (one broadcast load); byte i takes byte
  // i / 8 of them, then keeps bit i % 8 of it: 0xFF where set
  float bits;
  std::memcpy(&bits, qh, 4);
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_castps_si256(_mm256_set1_ps(bits)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_or_si256(low, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
}

}  // namespace
}  // namespace llmpack::kernels::x86
