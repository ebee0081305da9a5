// Inline AVX2 helpers shared by the *_avx2.cc files. Include only from files
// compiled with -mavx2 -mfma -mf16c.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace llmpack::kernels::avx2 {

// Decode streams each weight row once. The hardware prefetcher alone kept one
// core at about 65% of its read bandwidth on this project's dev machine, so the
// decode loops also prefetch kDecodePrefetchBytes ahead of where they read
// (measured: 1B F16 decode 1 thread +35%, 2 threads +10%; docs/PERFORMANCE.md).
// 4 KiB rather than 1 KiB: on the ANCHORS machine kind (Zen 3, 2.45 GHz) the
// longer lead read faster in every alternated kernel pass (section 10). The
// quantized loops keep it (without it they read 0.78-0.90x, section 16; on a
// Zen 5, 1 KiB read 0.81-0.92x of 4 KiB, section 19). The float decode does
// not use it: short rows one at a time take no prefetch (1.04-1.12x faster
// on that machine kind, section 16, and on a Zen 5 too), and the 8-row tiles
// take kernels::float_decode_prefetch(), which depends on the CPU.
constexpr int64_t kDecodePrefetchBytes = 4096;

// Prefetches the cache lines of [p, p + bytes) (prefetches never fault, so p
// may run past the end of the weights).
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(c + off, _MM_HINT_T0);
}

inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

inline float hmax(__m256 v) {
  __m128 lo = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_max_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// exp(x) to about 2 ulp over [-87.3, 88.3] (inputs are clamped to that range):
// x = n ln2 + r with |r| <= ln2/2, exp(r) by a degree-6 polynomial, times 2^n.
inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(
      _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

}  // namespace llmpack::kernels::avx2
