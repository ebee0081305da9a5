// A Q4_K super-block's 8 scales and 8 mins (6 bits each, packed into 12
// bytes; layout in quant_blocks.h) unpacked with byte shuffles instead of
// scalar shifts, for the AVX2 and AVX-512 decode kernels.
//
// Include only from ISA-flagged files (*_avx2.cc, *_avx512.cc). The function
// sits in an unnamed namespace on purpose: each including file gets its own
// copy built with its own flags (one inline function with external linkage
// could be the AVX-512 copy the linker keeps for the AVX2 callers).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace llmpack::kernels::x86 {
namespace {  // NOLINT(build/namespaces): a copy per ISA, see above

// Bytes [sc0..sc7, m0..m7] of the packed scales (reads 16 bytes from
// `packed`; inside a block, whose scales are followed by the quants).
//   j < 4:  sc_j = b[j] & 63,                          m_j = b[j + 4] & 63
//   j >= 4: sc_j = (b[j + 4] & 15) | (b[j - 4] >> 6) << 4, m_j = (b[j + 4] >> 4) | (b[j] >> 6) << 4
inline __m128i q4k_scale_min_bytes(const uint8_t* packed) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  // groups of 4 lanes: sc0-3, sc4-7, m0-3, m4-7
  const __m128i low_src = _mm_shuffle_epi8(b, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  const __m128i high_src = _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  // m4-7 take the high nibbles of b[8..11]: the 4th group shifted right by 4
  const __m128i low_bits = _mm_and_si128(_mm_blend_epi32(low_src, _mm_srli_epi16(low_src, 4), 0x8),
                                         _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15));
  // (x >> 6) << 4 per byte: the 16-bit shift's spill-over from the next byte is masked off
  const __m128i high_bits = _mm_and_si128(_mm_srli_epi16(high_src, 2), _mm_set1_epi8(0x30));
  return _mm_or_si128(low_bits, high_bits);
}

}  // namespace
}  // namespace llmpack::kernels::x86
