// codebook_least_error (kernels.h) on AVX2: 8 candidates a step, one per
// lane. Each element's weighted error at each of the 8 levels is computed
// once into a vector (w (t - s level)^2, the reference's operations in its
// order); a candidate's term for element j is then that vector permuted by
// its code (vpermps), and the terms add up lane by lane in the reference's
// order, so every candidate's error has the reference's bits. Built with
// -ffp-contract=off (CMakeLists.txt): a fused multiply-add would round
// differently from the reference's product and difference.
#include <immintrin.h>

#include <cmath>

#include "kernels/x86/avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

template <int kDim>
int least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  const __m256 scaled_levels = _mm256_mul_ps(_mm256_set1_ps(s), _mm256_loadu_ps(c.levels));
  __m256 at_level[kDim];  // lane l: element j's error at level l
  for (int j = 0; j < kDim; ++j) {
    const __m256 r = _mm256_sub_ps(_mm256_set1_ps(t[j]), scaled_levels);
    at_level[j] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[j]), r), r);
  }
  const __m256 inf = _mm256_set1_ps(INFINITY);
  __m256 best = inf;
  __m256i best_at = _mm256_setzero_si256(), at = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const uint8_t* codes = c.lane_codes;
  for (int b = 0; b < c.n; b += 8, codes += 8 * kDim) {
    __m256 e = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int j = 0; j < kDim; ++j) {
      const __m256i code = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 8 * j)));
      e = _mm256_add_ps(e, _mm256_permutevar8x32_ps(at_level[j], code));
    }
    // lanes past the last candidate (the block's padding) never win
    const __m256i past = _mm256_cmpgt_epi32(at, _mm256_set1_epi32(c.n - 1));
    e = _mm256_blendv_ps(e, inf, _mm256_castsi256_ps(past));
    const __m256 less = _mm256_cmp_ps(e, best, _CMP_LT_OQ);  // false for NaN, as the reference's <
    best = _mm256_blendv_ps(best, e, less);
    best_at = _mm256_blendv_epi8(best_at, at, _mm256_castps_si256(less));
    at = _mm256_add_epi32(at, _mm256_set1_epi32(8));
  }
  // Each lane holds its first candidate of least error; of the lanes' least
  // value, the lowest candidate is the reference's first.
  alignas(32) float lane_err[8];
  alignas(32) int lane_at[8];
  _mm256_store_ps(lane_err, best);
  _mm256_store_si256(reinterpret_cast<__m256i*>(lane_at), best_at);
  int first = 0;
  float least = INFINITY;
  for (int l = 0; l < 8; ++l) {
    if (lane_err[l] < least || (lane_err[l] == least && least < INFINITY && lane_at[l] < first))
      least = lane_err[l], first = lane_at[l];
  }
  *err = least;
  return first;
}

}  // namespace

int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  return c.dim == 4 ? least_error<4>(c, t, w, s, err) : least_error<8>(c, t, w, s, err);
}

}  // namespace llmpack::kernels::avx2
