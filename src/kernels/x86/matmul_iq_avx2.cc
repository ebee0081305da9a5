// AVX2 matmul of the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) against int8 activations. Several tokens: each row unpacked a
// chunk at a time (kernels/iq_unpack.h) into int8 weights with a scale per
// 16, then multiplied with every token, 4 tokens a pass sharing each weight
// load. One token (decode): each group of 32 weights is unpacked into
// registers and multiplied at once (x86/iq_decode_avx2.cc).
#include <algorithm>
#include <iterator>

#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/iq_unpack_x86.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

// The int32 sums of one block, each pair of weights' products times its
// integer scale: lanes 0..3 over weights 0..15, 4..7 over 16..31. The
// activations are unsigned bytes a + 128 (no sign step; |w| <= 62, so a
// pair's products, at most 2 x 255 x 62, fit vpmaddubsw's int16).
inline __m256i iq_block_dot(__m256i w, __m256i scales16, const int8_t* a_offset) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a_offset));
  return _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), scales16);
}

// Sum over the chunk's n_blocks blocks (whole super-blocks, from the row's
// super-block s0) for kTokens tokens t0.. at once; token t's activations are
// acts[t * n_super ..], a scale per 256, offset to unsigned bytes. The
// integer scales join the integer sums, and the sums stay integer over a
// super-block (starting from the offset's correction): a block costs each
// token two multiplies and an add, and the float steps come once per
// super-block and token.
template <int kTokens>
void iq_dot_chunk(const IqUnpacked& u, int64_t n_blocks, const ActSuper* acts, int64_t n_super, int64_t s0,
                  int64_t t0, float* sums) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_blocks / 8; ++sb) {
    const ActSuper* a[kTokens];
    __m256i part[kTokens];
    const __m256i correction = _mm256_setr_epi32(iq_offset_correction(u, sb), 0, 0, 0, 0, 0, 0, 0);
    for (int t = 0; t < kTokens; ++t) {
      a[t] = acts + (t0 + t) * n_super + s0 + sb;
      part[t] = correction;
    }
    for (int j = 0; j < 8; ++j) {
      const int64_t b = 8 * sb + j;
      const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * b));
      const __m256i scales16 = iq_block_scales16(u, b);
      for (int t = 0; t < kTokens; ++t)
        part[t] = _mm256_add_epi32(part[t], iq_block_dot(w, scales16, a[t]->q + 32 * j));
    }
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(part[t]), _mm256_set1_ps(u.factor[sb] * a[t]->d), acc[t]);
  }
  if constexpr (kTokens == 4) {
    // the four reductions share their steps: pairs of tokens added in lanes,
    // then the 128-bit halves
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(acc[0], acc[1]), _mm256_hadd_ps(acc[2], acc[3]));
    _mm_storeu_ps(sums, _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  } else {
    for (int t = 0; t < kTokens; ++t) sums[t] = hsum(acc[t]);
  }
}

}  // namespace

bool iq_supports(DType dtype) { return is_codebook_type(dtype); }

void quantize_activations_super(const float* x, int64_t cols, bool offset, ActSuper* out) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i flip = _mm256_set1_epi8(offset ? static_cast<char>(0x80) : 0);  // a + 128 as a byte: a ^ 0x80
  for (int64_t s = 0; s < cols / kQKK; ++s, x += kQKK) {
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < kQKK / 8; ++i)
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, _mm256_loadu_ps(x + 8 * i)));
    const float m = hmax(amax);
    const float d = m / 127.0f;
    const __m256 id = _mm256_set1_ps(d > 0.0f ? 127.0f / m : 0.0f);
    for (int g = 0; g < kQKK / 32; ++g) {
      __m256i q[4];
      for (int i = 0; i < 4; ++i)  // round to nearest even (MXCSR default)
        q[i] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * g + 8 * i), id));
      const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
      // packs interleave 128-bit lanes; this puts the 4-element groups back in order
      const __m256i ordered = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[s].q + 32 * g), _mm256_xor_si256(ordered, flip));
    }
    out[s].d = d;
    std::fill(std::begin(out[s].pad), std::end(out[s].pad), 0);
  }
}

void matmul_rows_iq(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end) {
  const ActSuper* acts = super_acts(act, n_tokens, w.cols / 32);
  const int64_t n_super = w.cols / kQKK;
  if (n_tokens < kIqRegisterTokensBelow) return iq_decode_rows(w, acts, n_tokens, y, row_begin, row_end);
  iq_prefill_rows(w, n_tokens, y, row_begin, row_end,
                  [&](auto tokens, const IqUnpacked& u, int64_t n_blocks, int64_t s0, int64_t t, float* sums) {
                    iq_dot_chunk<decltype(tokens)::value>(u, n_blocks, acts, n_super, s0, t, sums);
                  });
}

}  // namespace llmpack::kernels::avx2
