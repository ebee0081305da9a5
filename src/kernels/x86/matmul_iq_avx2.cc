// AVX2 matmul of the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) against int8 activations. Several tokens: each row unpacked a
// chunk at a time (kernels/iq_unpack.h) into int8 weights with a scale per
// 16, then multiplied with every token, 4 tokens a pass sharing each weight
// load. One token (decode): each group of 32 weights is unpacked into
// registers and multiplied at once (x86/iq_decode_avx2.cc).
#include "kernels/iq_unpack.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

inline __m256i four_u64(const uint64_t (&v)[4]) {
  return _mm256_setr_epi64x(static_cast<long long>(v[0]), static_cast<long long>(v[1]), static_cast<long long>(v[2]),
                            static_cast<long long>(v[3]));
}

// The vector steps of kernels/iq_unpack.h's unpackers.
struct Avx2Unpack {
  static float half(uint16_t h) { return _cvtsh_ss(h); }
  static void put_signed(int8_t* q, const uint64_t (&mag)[4], const uint64_t (&neg)[4]) {
    const __m256i m = four_u64(mag), n = four_u64(neg);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_sub_epi8(_mm256_xor_si256(m, n), n));
  }
  // 8 g per byte: a 16-bit shift by 3 less the bits it carried into the next byte.
  static void put_iq1(int8_t* q, const uint64_t (&grid)[4], const uint64_t (&delta)[4]) {
    const __m256i high5 = _mm256_set1_epi8(static_cast<char>(0xF8));
    const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(four_u64(grid), 3), high5);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), _mm256_add_epi8(g8, four_u64(delta)));
  }
};

// The int32 sums of one block: lanes 0..3 over weights 0..15, 4..7 over 16..31.
inline __m256i iq_block_dot(__m256i abs_w, __m256i w, const int8_t* a) {
  const __m256i signed_a = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)), w);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_a), _mm256_set1_epi16(1));
}

// Sum over the chunk's n_blocks blocks (starting at activation block b0) for
// kTokens tokens t0.. at once; acts of token t are act[t * n_sub ..].
template <int kTokens>
void iq_dot_chunk(const IqUnpacked& u, int64_t n_blocks, const ActBlock* act, int64_t n_sub, int64_t b0, int64_t t0,
               float* sums) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  const __m256i spread = _mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * b));
    const __m256i abs_w = _mm256_abs_epi8(w);
    // [s0 x 4, s1 x 4]: block b's two scales over the lanes its dot lands in
    const __m128 pair = _mm_castpd_ps(_mm_load_sd(reinterpret_cast<const double*>(u.scale + 2 * b)));
    const __m256 scale = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(pair), spread);
    for (int t = 0; t < kTokens; ++t) {
      const ActBlock& a = act[(t0 + t) * n_sub + b0 + b];
      const __m256 dots = _mm256_cvtepi32_ps(iq_block_dot(abs_w, w, a.q));
      acc[t] = _mm256_fmadd_ps(dots, _mm256_mul_ps(scale, _mm256_set1_ps(a.d)), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) sums[t] = hsum(acc[t]);
}

}  // namespace

bool iq_supports(DType dtype) { return is_codebook_type(dtype); }

void matmul_rows_iq(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end) {
  const int64_t n_sub = w.cols / 32;
  if (n_tokens < kIqRegisterDecodeBelow) {
    for (int64_t t = 0; t < n_tokens; ++t) iq_decode_rows(w, token_acts(act, n_tokens, n_sub, t), y + t * w.rows,
                                                         row_begin, row_end);
    return;
  }
  iq_rows_by_chunks<Avx2Unpack>(
      w, n_tokens, y, row_begin, row_end,
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        iq_dot_chunk<kIqTokenPass>(u, n_blocks, act, n_sub, b0, t, sums);
      },
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        iq_dot_chunk<1>(u, n_blocks, act, n_sub, b0, t, sums);
      });
}

}  // namespace llmpack::kernels::avx2
