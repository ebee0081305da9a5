// e^x on 16 floats for the AVX-512 attention kernels (prefill tiles and decode
// softmax). Include only from *_avx512.cc files: the function sits in an
// unnamed namespace so each including file gets its own copy built with its
// own flags.
#pragma once

#include <immintrin.h>

namespace llmpack::kernels::avx512 {
namespace {  // NOLINT(build/namespaces): a copy per file, see above

// e^x for x <= 0 (scores minus their running max): 2^n * p(r), r = x - n ln 2,
// with |r| <= ln2 / 2 and a degree-6 polynomial; below -87 it is 0. The max,
// round and scale steps are written in their masked forms with every lane
// kept (the same instructions): inlined in some callers, GCC 12's plain forms
// pass an undefined vector that its own headers then report as used
// uninitialized.
inline __m512 exp512(__m512 x) {
  constexpr __mmask16 all = 0xFFFF;
  x = _mm512_mask_max_ps(x, all, x, _mm512_set1_ps(-87.3f));
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_mask_roundscale_ps(t, all, t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_mask_scalef_ps(p, all, p, n);  // p * 2^n
}

}  // namespace
}  // namespace llmpack::kernels::avx512
