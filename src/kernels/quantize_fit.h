// The scale searches' shared pieces (quantize.cc, quantize_iq4.cc): eight
// running sums in two 4-float vectors, branch-free rounding, and the weights
// an importance matrix gives a search. Internal to the quantizers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kernels/iq_blocks.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::fit {

// v rounded to the nearest integer (ties to even, as std::nearbyint under
// the default rounding mode) and clamped to [lo, hi], in floats and without
// branches, so that the scale searches' loops (thousands of calls a block)
// vectorize: adding 1.5 * 2^23 puts a |v| < 2^22 where a float's step is 1,
// so that add rounds it and the subtraction is exact; a larger |v| lies far
// outside [lo, hi] and clamps whatever the add made of it. NaN stays NaN.
inline float round_clamped(float v, float lo, float hi) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float r = (v + kRound) - kRound;
  return std::min(std::max(r, lo), hi);
}

// round_clamped as an int, NaN -> lo: inline instead of libm's nearbyint,
// which the x86-64 baseline cannot inline.
inline int clamp_round(float v, int lo, int hi) {
  if (std::isnan(v)) return lo;
  return static_cast<int>(round_clamped(v, static_cast<float>(lo), static_cast<float>(hi)));
}

// The searches sum over a sub-block (16 or 32 values) in kFitLanes running sums,
// element i into sum i % kFitLanes, added up in a fixed order at the end: the
// result does not depend on whether, or how wide, the machine's vectors are.
// The sums are GCC's and Clang's vector extension (the baseline's SIMD on
// every target: two SSE2 or NEON registers), element for element the scalar
// arithmetic (no contraction: the baseline has no FMA), so the bytes equal a
// loop over the lanes one at a time; written as loops, GCC kept most scalar.
constexpr int kFitLanes = 8;
typedef float Float4 __attribute__((vector_size(16)));

// Eight lanes as two 4-float vectors (an 8-float vector type without AVX
// went through memory and ran at half the scalar loop's speed).
struct FitLanes {
  Float4 a{}, b{};  // lanes 0-3, 4-7
  float operator[](int l) const { return l < 4 ? a[l] : b[l - 4]; }
  FitLanes operator+(const FitLanes& o) const { return {a + o.a, b + o.b}; }
  FitLanes operator-(const FitLanes& o) const { return {a - o.a, b - o.b}; }
  FitLanes operator*(const FitLanes& o) const { return {a * o.a, b * o.b}; }
  FitLanes operator+(float v) const { return {a + v, b + v}; }
  FitLanes operator-(float v) const { return {a - v, b - v}; }
  FitLanes operator*(float v) const { return {a * v, b * v}; }
  FitLanes& operator+=(const FitLanes& o) { return *this = *this + o; }
};
inline FitLanes operator*(float v, const FitLanes& x) { return {v * x.a, v * x.b}; }

inline FitLanes load_lanes(const float* x) {
  FitLanes v;
  std::memcpy(&v.a, x, sizeof v.a);
  std::memcpy(&v.b, x + 4, sizeof v.b);
  return v;
}

// round_clamped of each lane (the same two steps, then max and min as
// std::max(r, lo) and std::min(r, hi) take them: NaN stays NaN).
inline Float4 round_clamped4(Float4 v, float lo, float hi) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const Float4 r = (v + kRound) - kRound, vlo = {lo, lo, lo, lo}, vhi = {hi, hi, hi, hi};
#if defined(__SSE2__)
  // maxps(a, b) is a > b ? a : b and minps(a, b) a < b ? a : b (b when
  // either is NaN): the selects below in one instruction each, where GCC
  // spent four on each select.
  return _mm_min_ps(vhi, _mm_max_ps(vlo, r));
#else
  const Float4 m = vlo > r ? vlo : r;
  return vhi < m ? vhi : m;
#endif
}
inline FitLanes round_clamped_lanes(const FitLanes& v, float lo, float hi) {
  return {round_clamped4(v.a, lo, hi), round_clamped4(v.b, lo, hi)};
}

inline double fit_lanes_total(const FitLanes& s) {
  typedef double Double2 __attribute__((vector_size(16)));
  const Double2 lo = Double2{s[0], s[1]} + Double2{s[4], s[5]}, hi = Double2{s[2], s[3]} + Double2{s[6], s[7]};
  return (lo[0] + lo[1]) + (hi[0] + hi[1]);  // (s0 + s4) + (s1 + s5) + ((s2 + s6) + (s3 + s7))
}

// The weights of a search over x[n] whose columns have importances
// imp[offset..offset + n) (mean squared activations from an imatrix), into
// w[n]; nullptr (an unweighted search) without importances or where they are
// all zero. An element's weight is its column's importance times
// sqrt(mean(x^2) + x^2): the activations say which columns' errors reach the
// output, the magnitude term keeps the block's large weights close (as
// llama.cpp weights its searches). Importances are floored at 1e-6 of the
// block's largest, so no element is free to take any value.
inline const float* search_weights(const float* x, const float* imp, int64_t offset, int n, float* w) {
  if (imp == nullptr) return nullptr;
  imp += offset;
  float top = 0.0f, sum_sq = 0.0f;
  for (int j = 0; j < n; ++j) top = std::max(top, imp[j]), sum_sq += x[j] * x[j];
  if (!(top > 0.0f)) return nullptr;
  const float sigma2 = sum_sq / static_cast<float>(n), floor = 1e-6f * top;
  for (int j = 0; j < n; ++j) w[j] = std::max(imp[j], floor) * std::sqrt(sigma2 + x[j] * x[j]);
  return w;
}

// The value of largest magnitude among x[0..n), with its sign.
inline float signed_max(const float* x, int n) {
  float amax = 0.0f, vmax = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  return vmax;
}

// IQ4_NL and IQ4_XS (quantize_iq4.cc); imp as quantize_row's importance.
void quantize_iq4_nl(const float* x, const float* imp, int64_t n_blocks, BlockIQ4_NL* out);
void quantize_iq4_xs(const float* x, const float* imp, int64_t n_blocks, BlockIQ4_XS* out);

// The codebook types (quantize_codebook.cc); imp as quantize_row's importance.
void quantize_iq2_xxs(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_XXS* out);
void quantize_iq2_xs(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_XS* out);
void quantize_iq2_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_S* out);
void quantize_iq3_xxs(const float* x, const float* imp, int64_t n_blocks, BlockIQ3_XXS* out);
void quantize_iq3_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ3_S* out);
void quantize_iq1_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ1_S* out);
void quantize_iq1_m(const float* x, const float* imp, int64_t n_blocks, BlockIQ1_M* out);

}  // namespace llmpack::kernels::fit
