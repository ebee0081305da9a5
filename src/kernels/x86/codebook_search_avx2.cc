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
#include <cstdint>

#include "kernels/x86/avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

// The errors of the 8 candidates of the block at `codes`.
template <int kDim>
inline __m256 block_errors(const __m256* at_level, const uint8_t* codes) {
  __m256 e = _mm256_setzero_ps();
#pragma GCC unroll 8
  for (int j = 0; j < kDim; ++j) {
    const __m256i code = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(codes + 8 * j)));
    e = _mm256_add_ps(e, _mm256_permutevar8x32_ps(at_level[j], code));
  }
  return e;
}

template <int kDim>
int least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  const __m256 scaled_levels = _mm256_mul_ps(_mm256_set1_ps(s), _mm256_loadu_ps(c.levels));
  __m256 at_level[kDim];  // lane l: element j's error at level l
  for (int j = 0; j < kDim; ++j) {
    const __m256 r = _mm256_sub_ps(_mm256_set1_ps(t[j]), scaled_levels);
    at_level[j] = _mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(w[j]), r), r);
  }
  // Per lane, the first candidate of least error so far (< is false for NaN,
  // as the reference's): its error and its index.
  __m256 best = _mm256_set1_ps(INFINITY);
  __m256i best_at = _mm256_setzero_si256(), at = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const auto keep = [&](__m256 e) {
    const __m256 less = _mm256_cmp_ps(e, best, _CMP_LT_OQ);
    best = _mm256_blendv_ps(best, e, less);
    best_at = _mm256_blendv_epi8(best_at, at, _mm256_castps_si256(less));
  };
  const uint8_t* codes = c.lane_codes;
  const int whole = c.n / 8 * 8;
  for (int b = 0; b < whole; b += 8, codes += c.stride) {
    keep(block_errors<kDim>(at_level, codes));
    at = _mm256_add_epi32(at, _mm256_set1_epi32(8));
  }
  if (whole < c.n) {  // the padding lanes of the last block never win
    const __m256i past = _mm256_cmpgt_epi32(at, _mm256_set1_epi32(c.n - 1));
    keep(_mm256_blendv_ps(block_errors<kDim>(at_level, codes), _mm256_set1_ps(INFINITY), _mm256_castsi256_ps(past)));
  }
  // The least of the lanes' errors, then the lowest candidate holding it: the
  // reference's first. (An error is never -0, as every sum starts from +0, so
  // the lanes equal to the least hold its very bits.)
  __m256 least = _mm256_min_ps(best, _mm256_permute2f128_ps(best, best, 1));
  least = _mm256_min_ps(least, _mm256_shuffle_ps(least, least, 0x4E));
  least = _mm256_min_ps(least, _mm256_shuffle_ps(least, least, 0xB1));
  *err = _mm256_cvtss_f32(least);
  if (!(*err < INFINITY)) return 0;
  const __m256 holds = _mm256_cmp_ps(best, least, _CMP_EQ_OQ);
  __m256i first = _mm256_blendv_epi8(_mm256_set1_epi32(INT32_MAX), best_at, _mm256_castps_si256(holds));
  first = _mm256_min_epi32(first, _mm256_permute2x128_si256(first, first, 1));
  first = _mm256_min_epi32(first, _mm256_shuffle_epi32(first, 0x4E));
  first = _mm256_min_epi32(first, _mm256_shuffle_epi32(first, 0xB1));
  return _mm256_cvtsi256_si32(first);
}

}  // namespace

int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  return c.dim == 4 ? least_error<4>(c, t, w, s, err) : least_error<8>(c, t, w, s, err);
}

}  // namespace llmpack::kernels::avx2
