// AVX2 decode (1 to 3 tokens) of the low-bit GGUF types Q2_K, Q3_K and IQ4_XS,
// one weight row against one token's activations (int8 blocks of 32, as
// matmul_quant_avx2.cc prepares them). IQ4_NL decodes as Q8_0 does there.
//
// Q2_K and Q3_K: per 32-element unit j, the unsigned quants (0..3, 0..7)
// go into one vpmaddubsw with the activations (int16 lanes: pairs of
// elements 0..15 in the low half, 16..31 in the high one, so each half is one
// 16-element sub-block) and one vpmaddwd by the two sub-blocks' scales; one
// convert and one FMA with d * a.d_j follow. The min terms (Q2_K: dmin * m_s,
// Q3_K: the -4 offset, 4 d sc_s) take two FMAs a super-block with the
// activations' 16-element sums (act_floats).
#include <type_traits>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/lowbit_quants.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// vpshufb control spreading, from a vector whose two 128-bit lanes both hold 8
// int16 scales, word (2j) % 8 over the low lane and word (2j + 1) % 8 over
// the high one: unit j's sub-blocks 2j (elements 0..15) and 2j + 1.
inline __m256i unit_scale_pick(int j) {
  const auto word = [](int w) { return static_cast<int16_t>(((2 * w + 1) << 8) | (2 * w)); };
  return _mm256_setr_m128i(_mm_set1_epi16(word((2 * j) % 8)), _mm_set1_epi16(word((2 * j + 1) % 8)));
}

// The 16 per-sub-block min terms of a super-block: sum_s w_s * hs_s over the
// token's 16-element activation sums hs (d * qsum of each half block).
inline __m256 min_terms(__m128i w8, float scale, const float* hs, __m256 offset) {
  const __m256 lo = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(w8));
  const __m256 hi = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(w8, 8)));
  offset = _mm256_fmadd_ps(_mm256_mul_ps(lo, _mm256_set1_ps(scale)), _mm256_loadu_ps(hs), offset);
  return _mm256_fmadd_ps(_mm256_mul_ps(hi, _mm256_set1_ps(scale)), _mm256_loadu_ps(hs + 8), offset);
}

}  // namespace

template <class Block>
float k23_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  constexpr bool kQ3 = std::is_same_v<Block, BlockQ3_K>;
  const auto* row = reinterpret_cast<const Block*>(row_bytes);
  const int64_t n_super = n_blocks / 8;
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, offset = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const Block& b = row[sb];
    prefetch_bytes(reinterpret_cast<const char*>(&b) + kDecodePrefetchBytes, sizeof(b));
    const float d = half(b.d);
    __m128i sc8;
    if constexpr (kQ3) {
      sc8 = x86::q3k_scale_bytes(b);
      offset = min_terms(sc8, 4.0f * d, t.hs + 16 * sb, offset);
    } else {
      sc8 = x86::q2k_scale_bytes(b);
      const __m128i mins = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales)), 4),
                                         _mm_set1_epi8(0x0F));
      offset = min_terms(mins, half(b.dmin), t.hs + 16 * sb, offset);
    }
    const __m256i s16 = _mm256_cvtepi8_epi16(sc8);
    const __m256i halves[2] = {_mm256_permute2x128_si256(s16, s16, 0x00), _mm256_permute2x128_si256(s16, s16, 0x11)};
    alignas(32) float scale[8];  // d * a.d of each unit
    _mm256_store_ps(scale, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_loadu_ps(t.ad + 8 * sb)));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256i q = kQ3 ? x86::q3k_quants(reinterpret_cast<const BlockQ3_K&>(b), j) : x86::k23_low_bits(b.qs, j);
      const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.a[8 * sb + j].q));
      const __m256i sc = _mm256_shuffle_epi8(halves[j / 4], unit_scale_pick(j));
      const __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(q, a), sc);
      acc[j & 1] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_broadcast_ss(scale + j), acc[j & 1]);
    }
  }
  return hsum(_mm256_sub_ps(_mm256_add_ps(acc[0], acc[1]), offset));
}

template float k23_row<BlockQ2_K>(const uint8_t*, int64_t, const TokenActs&);
template float k23_row<BlockQ3_K>(const uint8_t*, int64_t, const TokenActs&);

// IQ4_XS: units 2i, 2i + 1 of a super-block are the 32 bytes qs[32i..], the
// paired activations' layout, so x86::iq4_dots8 takes them with one load; the
// 8 6-bit scales are unpacked as one vector in the dots' lane order (units 0,
// 2, 4, 6, then 1, 3, 5, 7: nibble j of scales_l, bits 2j..2j+1 of scales_h),
// and one convert and FMA with d * (scale - 32) * a.d serve the super-block.
float iq4xs_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  const auto* row = reinterpret_cast<const BlockIQ4_XS*>(row_bytes);
  const int64_t n_super = n_blocks / 8;
  const __m256i table = x86::iq4_table();
  const __m256i low_shift = _mm256_setr_epi32(0, 8, 16, 24, 4, 12, 20, 28);  // 4 j, j in lane order
  const __m256i high_shift = _mm256_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14);   // 2 j
  __m256 acc = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockIQ4_XS& b = row[sb];
    prefetch_bytes(reinterpret_cast<const char*>(&b) + kDecodePrefetchBytes, sizeof(b));
    uint32_t low;
    std::memcpy(&low, b.scales_l, 4);
    const __m256i lo = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)), low_shift),
                                        _mm256_set1_epi32(0x0F));
    const __m256i hi =
        _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(b.scales_h), high_shift), _mm256_set1_epi32(3));
    const __m256i ls = _mm256_sub_epi32(_mm256_or_si256(lo, _mm256_slli_epi32(hi, 4)), _mm256_set1_epi32(32));
    const __m256 scale = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(ls), _mm256_set1_ps(half(b.d))),
                                       _mm256_loadu_ps(t.paired.d + 8 * sb));
    const auto pair = [&](int i) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * i)); };
    const __m256i dots = x86::iq4_dots8(pair, t.paired.q + sb * 8 * 32, table);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), scale, acc);
  }
  return hsum(acc);
}

}  // namespace llmpack::kernels::avx2
