// AVX-512 prefill of the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M) below kCodebookPackedMinTokens tokens (from there the
// block types' packed GEMM takes them, x86/matmul_packed_avx512.cc): rows
// unpacked a chunk at a time as on the AVX2 path (kernels/iq_unpack.h,
// x86/iq_unpack_x86.h), then 64 weights a step: the
// unsigned activation bytes a + 128 times the signed weights (vpmaddubsw,
// pairs in int16), and the pairs times their group's integer scale added
// into int32 lanes by one vpdpwssd. Per 64 weights and token that is two
// instructions where the AVX2 kernel spends six on two blocks of 32. Decode
// (fewer than kIqRegisterDecodeBelow tokens) takes the VBMI kernel where
// iq_vbmi_decode_supports (x86/iq_decode_vbmi_avx512.cc), else stays on the
// AVX2 register kernel; so do 4 to kIqVbmiDecodeBelow - 1 tokens of the
// types it has, where the codebook decode is on (avx512_codebook_decode_in_use).
#include "kernels/kernels.h"
#include "kernels/x86/avx512_internal.h"
#include "kernels/x86/iq_unpack_x86.h"

namespace llmpack::kernels::avx512 {
namespace {

using avx2::ActSuper;

// vpermw indices putting group 4k + g's scale (the low half of int32 element
// 4k + g of a super-block's 16 scales) in every int16 of 128-bit lane g: the
// factors of the 64 weights 64k..64k+63.
inline __m512i group_scale_index(int k) {
  alignas(64) int16_t idx[32];
  for (int i = 0; i < 32; ++i) idx[i] = static_cast<int16_t>(2 * (4 * k + i / 8));
  return _mm512_load_si512(idx);
}

// Sums over the chunk's n_blocks blocks (whole super-blocks, from the row's
// super-block s0) for kTokens tokens t0.. at once, as avx2's iq_dot_chunk:
// integer over a super-block (from the offset's correction), one float step
// per super-block and token.
template <int kTokens>
void iq_dot_chunk(const IqUnpacked& u, int64_t n_blocks, const ActSuper* acts, int64_t n_super, int64_t s0,
                  int64_t t0, float* sums) {
  const __m512i index[4] = {group_scale_index(0), group_scale_index(1), group_scale_index(2), group_scale_index(3)};
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_blocks / 8; ++sb) {
    const ActSuper* a[kTokens];
    __m512i part[kTokens];
    const __m512i correction = _mm512_maskz_set1_epi32(1, iq_offset_correction(u, sb));
    for (int t = 0; t < kTokens; ++t) {
      a[t] = acts + (t0 + t) * n_super + s0 + sb;
      part[t] = correction;
    }
    const __m512i scales = _mm512_load_si512(u.iscale + 16 * sb);  // 16 int32, one per 16 weights
    for (int k = 0; k < 4; ++k) {
      const __m512i w = _mm512_load_si512(u.q + kQKK * sb + 64 * k);
      const __m512i scales16 = _mm512_permutexvar_epi16(index[k], scales);
      for (int t = 0; t < kTokens; ++t) {
        const __m512i x = _mm512_loadu_si512(a[t]->q + 64 * k);
        part[t] = _mm512_dpwssd_epi32(part[t], _mm512_maddubs_epi16(x, w), scales16);
      }
    }
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(part[t]), _mm512_set1_ps(u.factor[sb] * a[t]->d), acc[t]);
  }
  for (int t = 0; t < kTokens; ++t) sums[t] = _mm512_reduce_add_ps(acc[t]);
}

}  // namespace

bool iq_supports(DType dtype, int64_t n_tokens) {
  if (n_tokens < avx2::kIqRegisterDecodeBelow) return iq_vbmi_decode_supports(dtype);
  return is_codebook_type(dtype) && n_tokens < kCodebookPackedMinTokens;  // then the packed GEMM
}

void matmul_rows_iq(const WeightMatrix& w, const avx2::ActBlock* act, int64_t n_tokens, float* y,
                    int64_t row_begin, int64_t row_end) {
  const ActSuper* acts = avx2::super_acts(act, n_tokens, w.cols / 32);
  const int64_t n_super = w.cols / kQKK;
  if (n_tokens < avx2::kIqRegisterDecodeBelow ||
      (n_tokens < kIqVbmiDecodeBelow && iq_vbmi_decode_supports(w.dtype) && avx512_codebook_decode_in_use()))
    return iq_vbmi_decode_rows(w, acts, n_tokens, y, row_begin, row_end);
  iq_prefill_rows(w, n_tokens, y, row_begin, row_end,
                  [&](auto tokens, const IqUnpacked& u, int64_t n_blocks, int64_t s0, int64_t t, float* sums) {
                    iq_dot_chunk<decltype(tokens)::value>(u, n_blocks, acts, n_super, s0, t, sums);
                  });
}

}  // namespace llmpack::kernels::avx512
