// AVX2 decode (1 to 3 tokens) of IQ4_XS, one weight row against one token's
// activations (int8 blocks of 32, as matmul_quant_avx2.cc prepares them, and
// their paired copy). IQ4_NL, Q2_K and Q3_K decode in matmul_quant_avx2.cc,
// beside the Q4_0 and Q6_K loops they share.
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/lowbit_quants.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

inline float half(uint16_t h) { return _cvtsh_ss(h); }

}  // namespace

// IQ4_XS: units 2i, 2i + 1 of a super-block are the 32 bytes qs[32i..], the
// paired activations' layout, so x86::iq4_dots8 takes them with one load; the
// 8 6-bit scales are unpacked as one vector in the dots' lane order
// (x86::iq4xs_scales8), and one convert and FMA with d * (scale - 32) * a.d
// serve the super-block.
float iq4xs_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  const auto* row = reinterpret_cast<const BlockIQ4_XS*>(row_bytes);
  const int64_t n_super = n_blocks / 8;
  const __m256i table = x86::iq4_table();
  __m256 acc = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockIQ4_XS& b = row[sb];
    prefetch_bytes(reinterpret_cast<const char*>(&b) + kDecodePrefetchBytes, sizeof(b));
    const __m256i ls = x86::iq4xs_scales8(b);
    const __m256 scale = _mm256_mul_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(ls), _mm256_set1_ps(half(b.d))),
                                       _mm256_loadu_ps(t.paired.d + 8 * sb));
    const auto pair = [&](int i) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * i)); };
    const __m256i dots = x86::iq4_dots8(pair, t.paired.q + sb * 8 * 32, table);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), scale, acc);
  }
  return hsum(acc);
}

}  // namespace llmpack::kernels::avx2
