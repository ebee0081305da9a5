// KV cache rows in f16 and q8_0 on AVX2 + F16C: a decode token writes one row
// per layer, a prefill chunk one per token and layer, so the conversion runs
// as often as the rmsnorms do (done one element at a time it cost a stories110M
// prefill about a fifth of its time, docs/PERFORMANCE.md section 47).
#include "core/half.h"
#include "kernels/q8_0_row.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

// One BlockQ8_0 from 32 floats (the reference's arithmetic: amax / 127, then
// x * (1 / d) rounded to nearest even by the default rounding mode, as
// nearbyint rounds).
void quantize_block_q8_0(const float* x, BlockQ8_0* out) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int j = 0; j < 4; ++j) {
    v[j] = _mm256_loadu_ps(x + 8 * j);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[j]));
  }
  const float d = hmax(amax) / 127.0f;
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  out->d = f32_to_f16(d);
  const __m256 scale = _mm256_set1_ps(inv);
  const __m256i lo = _mm256_set1_epi32(-127), hi = _mm256_set1_epi32(127);
  __m256i q[4];
  for (int j = 0; j < 4; ++j)
    q[j] = _mm256_min_epi32(hi, _mm256_max_epi32(lo, _mm256_cvtps_epi32(_mm256_mul_ps(v[j], scale))));
  // packs work within 128-bit lanes: the bytes come out as dwords 0 4 1 5 2 6 3 7.
  const __m256i words01 = _mm256_packs_epi32(q[0], q[1]), words23 = _mm256_packs_epi32(q[2], q[3]);
  const __m256i bytes = _mm256_packs_epi16(words01, words23);
  const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out->qs), ordered);
}

}  // namespace

void convert_to_f16(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void quantize_row_q8_0(const float* x, int64_t n, void* out) {
  quantize_q8_0_blocks(x, n, out, quantize_block_q8_0);
}

}  // namespace llmpack::kernels::avx2
