// The x86 vector steps of kernels/iq_unpack.h's unpackers (AVX2), shared by
// the AVX2 and AVX-512 codebook prefill kernels (x86/matmul_iq_avx2.cc,
// x86/matmul_iq_avx512.cc). Like iq_unpack.h, a copy per including file.
#pragma once

#include <immintrin.h>

#include <type_traits>

#include "kernels/iq_unpack.h"

namespace llmpack::kernels {
namespace {  // NOLINT(build/namespaces): a copy per file

inline __m256i iq_four_u64(const uint64_t (&v)[4]) {
  return _mm256_setr_epi64x(static_cast<long long>(v[0]), static_cast<long long>(v[1]), static_cast<long long>(v[2]),
                            static_cast<long long>(v[3]));
}

// Block b's two integer scales as vpmaddwd's factors: s0 in every int16 of
// lanes 0..3, s1 in lanes 4..7, from scales already in both halves of their
// int32 (finish_chunk leaves them so).
inline __m256i iq_block_scales16(const IqUnpacked& u, int64_t b) {
  const __m128i pair = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(u.iscale + 2 * b));
  return _mm256_permutevar8x32_epi32(_mm256_castsi128_si256(pair), _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1));
}

struct X86Unpack {
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static void put_signed(int8_t* q, const uint64_t (&mag)[4], const uint64_t (&neg)[4]) {
    const __m256i m = iq_four_u64(mag), n = iq_four_u64(neg);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_sub_epi8(_mm256_xor_si256(m, n), n));
  }
  // 8 g per byte: a 16-bit shift by 3 less the bits it carried into the next byte.
  static void put_iq1(int8_t* q, const uint64_t (&grid)[4], const uint64_t (&delta)[4]) {
    const __m256i high5 = _mm256_set1_epi8(static_cast<char>(0xF8));
    const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(iq_four_u64(grid), 3), high5);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_add_epi8(g8, iq_four_u64(delta)));
  }
  // The kernels multiply activations offset to unsigned bytes (a + 128, the
  // unsigned operand of vpmaddubsw in both kernels), so each
  // super-block's sum of iscale q is what the offset adds per unit.
  // Each scale is also copied into the high half of its int32 (s + 65536 s),
  // vpmaddwd's int16 pair, so that the kernels' per-block scale vector is one
  // permute; the low half, all the AVX-512 kernel reads, stays s.
  static void finish_chunk(IqUnpacked& u, int64_t n) {
    for (int64_t i = 0; i < 16 * n; i += 8) {
      const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.iscale + i));
      _mm256_store_si256(reinterpret_cast<__m256i*>(u.iscale + i), _mm256_or_si256(s, _mm256_slli_epi32(s, 16)));
    }
    const __m256i ones = _mm256_set1_epi8(1);
    for (int64_t sb = 0; sb < n; ++sb) {
      __m256i s = _mm256_setzero_si256();
      for (int64_t b = 8 * sb; b < 8 * sb + 8; ++b) {
        const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * b));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(ones, w), iq_block_scales16(u, b)));
      }
      const __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
      const __m128i q = _mm_add_epi32(h, _mm_shuffle_epi32(h, 0x4E));
      u.scaled_qsum[sb] = _mm_cvtsi128_si32(_mm_add_epi32(q, _mm_shuffle_epi32(q, 0xB1)));
    }
  }
};

// Activation bytes are a + 128 in the prefill kernels; this is the integer
// that brings a super-block's sum back to that of the signed a.
inline int32_t iq_offset_correction(const IqUnpacked& u, int64_t sb) { return -128 * u.scaled_qsum[sb]; }

// Rows [row_begin, row_end) of a codebook matmul of kIqRegisterDecodeBelow or
// more tokens: the chunk driver with the including file's dot kernel,
// dot(std::integral_constant<int, kTokens>, u, n_blocks, s0, t, sums) for
// kTokens = kIqTokenPass and 1 (the tail), s0 the chunk's first super-block.
template <class Dot>
void iq_prefill_rows(const WeightMatrix& w, int64_t n_tokens, float* y, int64_t row_begin, int64_t row_end, Dot dot) {
  iq_rows_by_chunks<X86Unpack>(
      w, n_tokens, y, row_begin, row_end,
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        dot(std::integral_constant<int, kIqTokenPass>{}, u, n_blocks, b0 / 8, t, sums);
      },
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        dot(std::integral_constant<int, 1>{}, u, n_blocks, b0 / 8, t, sums);
      });
}

}  // namespace
}  // namespace llmpack::kernels
