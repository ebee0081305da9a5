#include "kernels/x86/rope_x86.h"

#include <immintrin.h>

// AVX2 without FMA, by function attribute rather than the -mfma of the
// *_avx2.cc files: the compiler must not fuse x0 * c - x1 * s into one
// rounding, or the result would differ from the reference's.
#define LLMPACK_AVX2_NO_FMA __attribute__((target("avx2")))

namespace llmpack::kernels::avx2 {
namespace {

// x0 * c - x1 * s and x0 * s + x1 * c, element by element, as the reference.
LLMPACK_AVX2_NO_FMA void rotate_scalar(float* a, float* b, float c, float s) {
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x0 * s + x1 * c;
}

// (x[i], x[i + half]) for i < half: 8 pairs per step, both halves contiguous.
LLMPACK_AVX2_NO_FMA void rotate_halves(float* x, const float* cos, const float* sin, int64_t half) {
  int64_t i = 0;
  for (; i + 8 <= half; i += 8) {
    const __m256 lo = _mm256_loadu_ps(x + i), hi = _mm256_loadu_ps(x + half + i);
    const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
    _mm256_storeu_ps(x + i, _mm256_sub_ps(_mm256_mul_ps(lo, c), _mm256_mul_ps(hi, s)));
    _mm256_storeu_ps(x + half + i, _mm256_add_ps(_mm256_mul_ps(lo, s), _mm256_mul_ps(hi, c)));
  }
  for (; i < half; ++i) rotate_scalar(x + i, x + half + i, cos[i], sin[i]);
}

// (x[2i], x[2i+1]): 4 pairs per step. With v = x, w = v with each pair
// swapped, cc / ss = each pair's cos / sin twice: even lanes v*cc - w*ss,
// odd lanes v*cc + w*ss (vaddsubps), i.e. x1*c + x0*s: the same two rounded
// products as the reference, added in the other order (addition commutes).
LLMPACK_AVX2_NO_FMA void rotate_adjacent(float* x, const float* cos, const float* sin, int64_t half) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  int64_t i = 0;
  for (; i + 4 <= half; i += 4) {
    const __m256 v = _mm256_loadu_ps(x + 2 * i);
    const __m256 w = _mm256_permute_ps(v, 0xB1);  // [1, 0, 3, 2] in each 128-bit lane
    const __m256 cc = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
    const __m256 ss = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup);
    _mm256_storeu_ps(x + 2 * i, _mm256_addsub_ps(_mm256_mul_ps(v, cc), _mm256_mul_ps(w, ss)));
  }
  for (; i < half; ++i) rotate_scalar(x + 2 * i, x + 2 * i + 1, cos[i], sin[i]);
}

}  // namespace

LLMPACK_AVX2_NO_FMA void rope_rotate(float* x, const float* cos, const float* sin, int64_t half, bool adjacent) {
  if (adjacent) return rotate_adjacent(x, cos, sin, half);
  rotate_halves(x, cos, sin, half);
}

}  // namespace llmpack::kernels::avx2
