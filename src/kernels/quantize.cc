// Quantizers of the GGUF block types. Non-finite inputs are not expected
// (weights of a model); they give unspecified but memory-safe output.
#include "kernels/quantize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "core/half.h"
#include "kernels/grouped_blocks.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels {
namespace {

// v rounded to the nearest integer (ties to even, as std::nearbyint under
// the default rounding mode) and clamped to [lo, hi], in floats and without
// branches, so that the scale searches' loops (thousands of calls a block)
// vectorize: adding 1.5 * 2^23 puts a |v| < 2^22 where a float's step is 1,
// so that add rounds it and the subtraction is exact; a larger |v| lies far
// outside [lo, hi] and clamps whatever the add made of it. NaN stays NaN.
float round_clamped(float v, float lo, float hi) {
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23
  const float r = (v + kRound) - kRound;
  return std::min(std::max(r, lo), hi);
}

// round_clamped as an int, NaN -> lo: inline instead of libm's nearbyint,
// which the x86-64 baseline cannot inline.
int clamp_round(float v, int lo, int hi) {
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
FitLanes operator*(float v, const FitLanes& x) { return {v * x.a, v * x.b}; }

FitLanes load_lanes(const float* x) {
  FitLanes v;
  std::memcpy(&v.a, x, sizeof v.a);
  std::memcpy(&v.b, x + 4, sizeof v.b);
  return v;
}

// round_clamped of each lane (the same two steps, then max and min as
// std::max(r, lo) and std::min(r, hi) take them: NaN stays NaN).
Float4 round_clamped4(Float4 v, float lo, float hi) {
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
FitLanes round_clamped_lanes(const FitLanes& v, float lo, float hi) {
  return {round_clamped4(v.a, lo, hi), round_clamped4(v.b, lo, hi)};
}

double fit_lanes_total(const FitLanes& s) {
  typedef double Double2 __attribute__((vector_size(16)));
  const Double2 lo = Double2{s[0], s[1]} + Double2{s[4], s[5]}, hi = Double2{s[2], s[3]} + Double2{s[6], s[7]};
  return (lo[0] + lo[1]) + (hi[0] + hi[1]);  // (s0 + s4) + (s1 + s5) + ((s2 + s6) + (s3 + s7))
}

// llama.cpp's rounding in its Q8_0 quantizer, roundf: halves away from zero.
// Exact halves are common in F16 and BF16 weights (their few mantissa bits),
// so rounding them as llama-quantize does keeps the files' bytes equal to
// its (about 0.5% of blocks differed with halves to even). |v| < 2^31.
int round_half_away(float v) {
  int t = static_cast<int>(v);                       // toward zero
  const float frac = v - static_cast<float>(t);      // exact for |v| < 2^23
  t += (frac >= 0.5f) - (frac <= -0.5f);
  return t;
}

// llama.cpp's level for the offset types (Q4_0, Q5_0, Q4_1, Q5_1): the float
// sum v = x / d + offset + 0.5 truncated, capped at `top` (as its
// `MIN(top, (int8_t)(v))`: halves go up); NaN -> 0.
int level_half_up(float v, int top) {
  if (!(v >= 0.0f)) return 0;
  return v >= static_cast<float>(top) ? top : static_cast<int>(v);
}

void quantize_q8_0(const float* x, int64_t n_blocks, BlockQ8_0* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) {
      const float v = x[j] * id;  // within [-127, 127] (NaN: 0)
      out[i].qs[j] = static_cast<int8_t>(v == v ? std::clamp(round_half_away(v), -127, 127) : 0);
    }
  }
}

// d = (signed value of largest magnitude) / -8, so that element maps to q = 0
// and the 16 levels cover [-8d, 7d].
// The value of largest magnitude among x[0..n), with its sign.
float signed_max(const float* x, int n) {
  float amax = 0.0f, vmax = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      vmax = x[j];
    }
  }
  return vmax;
}

void quantize_q4_0(const float* x, int64_t n_blocks, BlockQ4_0* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    const float d = signed_max(x, kQK) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int q0 = level_half_up(x[j] * id + 8.5f, 15);
      const int q1 = level_half_up(x[j + kQK / 2] * id + 8.5f, 15);
      out[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

// Sets the 5-bit quant of element j (0..31) of a Q5_0 / Q5_1 block whose qs
// and qh start zeroed.
void put_q5(uint8_t* qs, uint8_t* qh, int j, int q) {
  qs[j % (kQK / 2)] |= static_cast<uint8_t>((q & 0x0F) << (j < kQK / 2 ? 0 : 4));
  qh[j / 8] |= static_cast<uint8_t>(((q >> 4) & 1) << (j % 8));
}

// As Q4_0 with 32 levels: d = (signed value of largest magnitude) / -16, so
// that element maps to q = 0 and the levels cover [-16d, 15d].
void quantize_q5_0(const float* x, int64_t n_blocks, BlockQ5_0* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    const float d = signed_max(x, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i] = BlockQ5_0{};
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) put_q5(out[i].qs, out[i].qh, j, level_half_up(x[j] * id + 16.5f, 31));
  }
}

// Q4_1 and Q5_1: value = q * d + m with m the block's minimum and
// d = (max - min) / top (15 or 31 levels).
template <class Block>
void quantize_with_min(const float* x, int64_t n_blocks, Block* out) {
  constexpr bool kFifthBit = kBlockHasQh<Block>;
  constexpr int kTop = kFifthBit ? 31 : 15;
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    const auto [lo, hi] = std::minmax_element(x, x + kQK);
    const float d = (*hi - *lo) / static_cast<float>(kTop);
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    out[i] = Block{};
    out[i].d = f32_to_f16(d);
    out[i].m = f32_to_f16(*lo);
    for (int j = 0; j < kQK; ++j) {
      const int q = level_half_up((x[j] - *lo) * id + 0.5f, kTop);
      if constexpr (kFifthBit)
        put_q5(out[i].qs, out[i].qh, j, q);
      else
        out[i].qs[j % (kQK / 2)] |= static_cast<uint8_t>(q << (j < kQK / 2 ? 0 : 4));
    }
  }
}

// One candidate scale of fit_scale_min: its refit and the refit's error.
struct ScaleCandidate {
  float s = 0, inv_s = 0;      // the scale tried
  FitLanes lq{}, lqq{}, lqx{};  // sums of q, q^2 and q x over the sub-block, by lane
  float fs = 0, fm = 0, inv_fs = 0;  // the least-squares refit
  FitLanes lerr{};              // its squared error, by lane

  // Lanes i..i + kFitLanes - 1: the levels the scale tried picks, into the sums.
  void add_levels(const float* x, float lo, float levels) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes((v - lo) * inv_s, 0.0f, levels);
    lq += q, lqq += q * q, lqx += q * v;
  }
  // The refit of (scale, min) for those levels (the sums of q and q^2 are
  // integers, exact in floats); fs <= 0 leaves no candidate.
  void refit(int n, double sx, float lo) {
    const double sq = fit_lanes_total(lq), sqq = fit_lanes_total(lqq), sqx = fit_lanes_total(lqx);
    const double det = n * sqq - sq * sq;
    fs = s, fm = -lo;
    if (det > 0) {
      fs = static_cast<float>((n * sqx - sq * sx) / det);
      fm = static_cast<float>(-(sx * sqq - sq * sqx) / det);
    }
    if (fm < 0.0f) fm = 0.0f;  // the format subtracts a non-negative min
    inv_fs = fs > 0.0f ? 1.0f / fs : 0.0f;
  }
  void add_error(const float* x, float levels) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes((v + fm) * inv_fs, 0.0f, levels);
    const FitLanes e = fs * q - fm - v;
    lerr += e * e;
  }
};

// Best (scale, min) for x[n] ~ scale * q - min, q in 0..top (15 for Q4_K,
// 31 for Q5_K, 3 for Q2_K), min >= 0: tries scales around (max - min) / top
// with min fixed at -min(x, 0), refits both by least squares for the levels
// q each picks, and keeps the refit with the least squared error.
// Every candidate goes through each step before any goes to the next: each
// one's arithmetic is what it would be alone, so the result is too, but the
// candidates' chains of dependent steps (a division, the lane sums and their
// totals, the refit's divisions, the error pass) overlap, where one candidate
// at a time waited on each (the search was bound by those latencies).
void fit_scale_min(const float* x, int n, int top, float* scale, float* min) {
  const float levels = static_cast<float>(top);
  float lo = 0.0f, hi = 0.0f;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  *min = -lo;
  if (hi <= lo) {
    *scale = 0.0f;
    return;
  }
  float best_err = INFINITY;
  float best_scale = (hi - lo) / levels, best_min = -lo;
  double sx = 0;
  for (int i = 0; i < n; ++i) sx += x[i];
  constexpr int kFirst = -4, kLast = 12;  // scales (max - min) / (top (1 + k / 60))
  constexpr int kCount = kLast - kFirst + 1;
  ScaleCandidate c[kCount];
  for (int k = 0; k < kCount; ++k) {
    c[k].s = (hi - lo) / (levels * (1.0f + static_cast<float>(k + kFirst) / 60.0f));
    c[k].inv_s = 1.0f / c[k].s;
  }
  for (int i = 0; i < n; i += kFitLanes)
    for (ScaleCandidate& cand : c) cand.add_levels(x + i, lo, levels);
  for (ScaleCandidate& cand : c) cand.refit(n, sx, lo);
  for (int i = 0; i < n; i += kFitLanes)
    for (ScaleCandidate& cand : c) cand.add_error(x + i, levels);
  for (const ScaleCandidate& cand : c) {  // in k order
    if (cand.fs <= 0.0f) continue;
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = static_cast<float>(err), best_scale = cand.fs, best_min = cand.fm;
  }
  *scale = best_scale;
  *min = best_min;
}

// Q4_K, and Q5_K (its fifth bit of element 32j + l at bit j of qh[l]).
template <class Block>
void quantize_k45(const float* x, int64_t n_blocks, Block* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  constexpr int kTop = kFifthBit ? 31 : 15;
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    float scales[8], mins[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      fit_scale_min(x + 32 * j, 32, kTop, &scales[j], &mins[j]);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    out[i] = Block{};
    out[i].d = f32_to_f16(d);
    out[i].dmin = f32_to_f16(dmin);
    const float dq = f16_to_f32(out[i].d), dminq = f16_to_f32(out[i].dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) {
      sc[j] = static_cast<uint8_t>(dq > 0 ? clamp_round(scales[j] / dq, 0, 63) : 0);
      mn[j] = static_cast<uint8_t>(dminq > 0 ? clamp_round(mins[j] / dminq, 0, 63) : 0);
    }
    pack_q4k_scales(sc, mn, out[i].scales);
    uint8_t q[kQKK];
    for (int j = 0; j < 8; ++j) {
      const float s = dq * sc[j], m = dminq * mn[j];
      for (int l = 0; l < 32; ++l)
        q[32 * j + l] = static_cast<uint8_t>(s > 0 ? clamp_round((x[32 * j + l] + m) / s, 0, kTop) : 0);
    }
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        out[i].qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0x0F) | (q[64 * c + 32 + l] & 0x0F) << 4);
    if constexpr (kFifthBit)
      for (int j = 0; j < 8; ++j)
        for (int l = 0; l < 32; ++l) out[i].qh[l] |= static_cast<uint8_t>((q[32 * j + l] >> 4) << j);
  }
}

// One candidate scale of fit_scale_signed: its least-squares refit and error.
struct SignedCandidate {
  float s = 0, inv_s = 0;  // the scale tried
  FitLanes lqx{}, lqq{};   // sums of q x and q^2, by lane
  float fs = 0, inv_fs = 0;  // the refit
  FitLanes lerr{};         // its squared error, by lane

  void add_levels(const float* x, float qlo, float qhi) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes(v * inv_s, qlo, qhi);
    lqx += q * v, lqq += q * q;
  }
  void refit() {
    const double sqx = fit_lanes_total(lqx), sqq = fit_lanes_total(lqq);
    fs = sqq > 0 ? static_cast<float>(sqx / sqq) : s;
    inv_fs = 1.0f / fs;
  }
  void add_error(const float* x, float qlo, float qhi) {
    const FitLanes v = load_lanes(x);
    const FitLanes e = fs * round_clamped_lanes(v * inv_fs, qlo, qhi) - v;
    lerr += e * e;
  }
};

// Best scale for x[n] ~ scale * q, q in lo..hi (lo < 0 < hi; the value of
// largest magnitude maps to lo): candidates (signed max) / (lo + step k),
// each refit by least squares for its levels. Q6_K: -32..31, Q3_K: -4..3.
// All candidates step by step together, as in fit_scale_min (the same result).
float fit_scale_signed(const float* x, int n, int lo, int hi, float step) {
  const float vmax = signed_max(x, n);
  if (vmax == 0.0f) return 0.0f;
  float best = vmax / static_cast<float>(lo);
  double best_err = INFINITY;
  const float qlo = static_cast<float>(lo), qhi = static_cast<float>(hi);
  constexpr int kFirst = -6, kLast = 6;
  constexpr int kCount = kLast - kFirst + 1;
  SignedCandidate c[kCount];
  for (int k = 0; k < kCount; ++k) {
    c[k].s = vmax / (qlo + step * static_cast<float>(k + kFirst));
    c[k].inv_s = 1.0f / c[k].s;
  }
  for (int i = 0; i < n; i += kFitLanes)
    for (SignedCandidate& cand : c) cand.add_levels(x + i, qlo, qhi);
  for (SignedCandidate& cand : c) cand.refit();
  for (int i = 0; i < n; i += kFitLanes)
    for (SignedCandidate& cand : c) cand.add_error(x + i, qlo, qhi);
  for (const SignedCandidate& cand : c) {  // in k order
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = err, best = cand.fs;
  }
  return best;
}

float fit_scale_q6(const float* x, int n) { return fit_scale_signed(x, n, -32, 31, 0.25f); }

void quantize_q6_k(const float* x, int64_t n_blocks, BlockQ6_K* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    float scales[16], amax = 0.0f;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_scale_q6(x + 16 * s, 16);
      amax = std::max(amax, std::fabs(scales[s]));
    }
    out[i].d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(out[i].d);
    uint8_t q[kQKK];
    for (int s = 0; s < 16; ++s) {
      out[i].scales[s] = static_cast<int8_t>(d > 0 ? clamp_round(scales[s] / d, -127, 127) : 0);
      const float step = d * out[i].scales[s];
      for (int l = 0; l < 16; ++l)
        q[16 * s + l] = static_cast<uint8_t>(
            (step != 0.0f ? clamp_round(x[16 * s + l] / step, -32, 31) : 0) + 32);
    }
    std::memset(out[i].qh, 0, sizeof(out[i].qh));
    for (int h = 0; h < 2; ++h) {
      const uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        out[i].ql[64 * h + l] = static_cast<uint8_t>((qq[l] & 0x0F) | ((qq[l + 64] & 0x0F) << 4));
        out[i].ql[64 * h + 32 + l] =
            static_cast<uint8_t>((qq[l + 32] & 0x0F) | ((qq[l + 96] & 0x0F) << 4));
        out[i].qh[32 * h + l] = static_cast<uint8_t>((qq[l] >> 4) | ((qq[l + 32] >> 4) << 2) |
                                                     ((qq[l + 64] >> 4) << 4) | ((qq[l + 96] >> 4) << 6));
      }
    }
  }
}

// Q2_K and Q3_K store element 128n + 32k + l's low 2 bits at bits 2k, 2k + 1
// of qs[32n + l]; q[256] holds the quants (0..3, or 0..7 for Q3_K).
void pack_low_bits(const uint8_t* q, uint8_t* qs) {
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = q + 128 * n + l;
      qs[32 * n + l] = static_cast<uint8_t>((e[0] & 3) | (e[32] & 3) << 2 | (e[64] & 3) << 4 | (e[96] & 3) << 6);
    }
}

// Q2_K: each sub-block of 16 fitted as scale * q - min (q in 0..3), the 16
// scales and mins then quantized to 4 bits against d and dmin.
void quantize_q2_k(const float* x, int64_t n_blocks, BlockQ2_K* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    float scales[16], mins[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 16; ++s) {
      fit_scale_min(x + 16 * s, 16, 3, &scales[s], &mins[s]);
      max_scale = std::max(max_scale, scales[s]);
      max_min = std::max(max_min, mins[s]);
    }
    out[i].d = f32_to_f16(max_scale / 15.0f);
    out[i].dmin = f32_to_f16(max_min / 15.0f);
    const float d = f16_to_f32(out[i].d), dmin = f16_to_f32(out[i].dmin);
    uint8_t q[kQKK];
    for (int s = 0; s < 16; ++s) {
      const int sc = d > 0 ? clamp_round(scales[s] / d, 0, 15) : 0;
      const int mn = dmin > 0 ? clamp_round(mins[s] / dmin, 0, 15) : 0;
      out[i].scales[s] = static_cast<uint8_t>(sc | mn << 4);
      const float step = d * sc, m = dmin * mn;
      for (int l = 0; l < 16; ++l)
        q[16 * s + l] = static_cast<uint8_t>(step > 0 ? clamp_round((x[16 * s + l] + m) / step, 0, 3) : 0);
    }
    pack_low_bits(q, out[i].qs);
  }
}

// Q3_K: each sub-block of 16 fitted as scale * q (q in -4..3), the 16 signed
// scales then quantized to 6 bits (scale - 32 in -32..31) against d.
void quantize_q3_k(const float* x, int64_t n_blocks, BlockQ3_K* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    float scales[16];
    for (int s = 0; s < 16; ++s) scales[s] = fit_scale_signed(x + 16 * s, 16, -4, 3, 0.125f);
    out[i].d = f32_to_f16(signed_max(scales, 16) / -32.0f);
    const float d = f16_to_f32(out[i].d);
    uint8_t sc[16], q[kQKK];
    for (int s = 0; s < 16; ++s) {
      const int scale = d != 0.0f ? clamp_round(scales[s] / d, -32, 31) : 0;
      sc[s] = static_cast<uint8_t>(scale + 32);
      const float step = d * static_cast<float>(scale);
      for (int l = 0; l < 16; ++l)
        q[16 * s + l] = static_cast<uint8_t>((step != 0.0f ? clamp_round(x[16 * s + l] / step, -4, 3) : 0) + 4);
    }
    pack_q3k_scales(sc, out[i].scales);
    std::memset(out[i].hmask, 0, sizeof(out[i].hmask));
    for (int e = 0; e < kQKK; ++e)  // e = 128n + 32k + l: bit 4n + k of hmask[l]
      out[i].hmask[e % 32] |= static_cast<uint8_t>((q[e] >> 2) << (e / 32));
    pack_low_bits(q, out[i].qs);
  }
}

// The midpoints between neighbouring IQ4 grid values (the grid ascends).
constexpr std::array<float, 15> iq4_midpoints() {
  std::array<float, 15> mid{};
  for (int k = 0; k < 15; ++k) mid[k] = (kIQ4Values[k] + kIQ4Values[k + 1]) / 2.0f;
  return mid;
}
constexpr std::array<float, 15> kIQ4Midpoints = iq4_midpoints();

// The index of the IQ4 grid value nearest v, the lower one of two at equal
// distance (0 for NaN): the number of midpoints below v. The same index as a
// scan of the 16 distances for every float of magnitude under 2^20 (checked
// for all of them), and branch-free, so the scale fit's loops over 32 values
// (about a thousand calls a block) vectorize: 1.3-2.5x faster there.
int nearest_iq4(float v) {
  int index = 0;
  for (float mid : kIQ4Midpoints) index += v > mid;
  return index;
}

// kIQ4Values[nearest_iq4(v)] of each lane without a table lookup: the grid's
// first value plus the step to each next value whose midpoint lies below v
// (integer steps: exact).
Float4 nearest_iq4_value4(Float4 v) {
  const float first = static_cast<float>(kIQ4Values[0]);
  Float4 value = {first, first, first, first};
  for (int k = 0; k < 15; ++k) {
    const float mid = kIQ4Midpoints[k], step = static_cast<float>(kIQ4Values[k + 1] - kIQ4Values[k]);
    const Float4 vmid = {mid, mid, mid, mid}, vstep = {step, step, step, step}, zero = {};
    value += v > vmid ? vstep : zero;
  }
  return value;
}
FitLanes nearest_iq4_lanes(const FitLanes& v) { return {nearest_iq4_value4(v.a), nearest_iq4_value4(v.b)}; }

// One candidate scale of fit_scale_iq4: its least-squares refit and error.
struct IQ4Candidate {
  float s = 0, inv_s = 0;    // the scale tried
  FitLanes lxv{}, lvv{};     // sums of v x and v^2 (v the grid value picked), by lane
  float fs = 0, inv_fs = 0;  // the refit
  FitLanes lerr{};           // its squared error, by lane

  void add_levels(const float* x) {
    const FitLanes xv = load_lanes(x), v = nearest_iq4_lanes(xv * inv_s);
    lxv += v * xv, lvv += v * v;
  }
  void refit() {
    const double sxv = fit_lanes_total(lxv), svv = fit_lanes_total(lvv);
    fs = svv > 0 ? static_cast<float>(sxv / svv) : s;
    inv_fs = 1.0f / fs;
  }
  void add_error(const float* x) {
    const FitLanes xv = load_lanes(x), e = fs * nearest_iq4_lanes(xv * inv_fs) - xv;
    lerr += e * e;
  }
};

// Best d for x[32] ~ d * kIQ4Values[index]: candidates mapping the value of
// largest magnitude to around -127 (the grid's widest end), each refit by
// least squares for the indices it picks; all candidates step by step
// together, as in fit_scale_min (the same result as one at a time).
float fit_scale_iq4(const float* x) {
  const float vmax = signed_max(x, kQK);
  if (vmax == 0.0f) return 0.0f;
  float best = vmax / -127.0f;
  double best_err = INFINITY;
  constexpr int kFirst = -8, kCount = 17;
  IQ4Candidate c[kCount];
  for (int k = 0; k < kCount; ++k) {
    c[k].s = vmax / (-127.0f + 2.0f * static_cast<float>(k + kFirst));
    c[k].inv_s = 1.0f / c[k].s;
  }
  for (int i = 0; i < kQK; i += kFitLanes)
    for (IQ4Candidate& cand : c) cand.add_levels(x + i);
  for (IQ4Candidate& cand : c) cand.refit();
  for (int i = 0; i < kQK; i += kFitLanes)
    for (IQ4Candidate& cand : c) cand.add_error(x + i);
  for (const IQ4Candidate& cand : c) {  // in k order
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = err, best = cand.fs;
  }
  return best;
}

// The 16 index bytes of 32 elements at step d (Q4_0's nibble order).
void put_iq4_indices(const float* x, float d, uint8_t* qs) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>(nearest_iq4(x[j] * id) | nearest_iq4(x[j + kQK / 2] * id) << 4);
}

void quantize_iq4_nl(const float* x, int64_t n_blocks, BlockIQ4_NL* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    out[i].d = f32_to_f16(fit_scale_iq4(x));
    put_iq4_indices(x, f16_to_f32(out[i].d), out[i].qs);
  }
}

// IQ4_XS: each sub-block of 32 fitted as IQ4_NL, the 8 signed scales then
// quantized to 6 bits (scale - 32 in -32..31) against d.
void quantize_iq4_xs(const float* x, int64_t n_blocks, BlockIQ4_XS* out) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    float scales[8];
    for (int j = 0; j < 8; ++j) scales[j] = fit_scale_iq4(x + 32 * j);
    out[i] = BlockIQ4_XS{};
    out[i].d = f32_to_f16(signed_max(scales, 8) / -32.0f);
    const float d = f16_to_f32(out[i].d);
    for (int j = 0; j < 8; ++j) {
      const int ls = (d != 0.0f ? clamp_round(scales[j] / d, -32, 31) : 0) + 32;
      out[i].scales_l[j / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (j % 2)));
      out[i].scales_h = static_cast<uint16_t>(out[i].scales_h | (ls >> 4) << (2 * j));
      put_iq4_indices(x + 32 * j, d * static_cast<float>(ls - 32), out[i].qs + 16 * j);
    }
  }
}

}  // namespace

bool quantize_supports(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

size_t quantize_row(DType dtype, const float* src, int64_t n, void* dst) {
  if (const DType plain = plain_type(dtype); plain != dtype) {
    const auto info = dtype_info(plain);
    if (!info || n < 0 || n % info->block_elems != 0) return 0;
    std::vector<uint8_t> row(static_cast<size_t>(row_bytes(*info, n)));
    const size_t bytes = quantize_row(plain, src, n, row.data());
    group_blocks(plain, row.data(), n / info->block_elems, dst);
    return bytes;
  }
  const auto info = dtype_info(dtype);
  if (!quantize_supports(dtype) || !info || n < 0 || n % info->block_elems != 0) return 0;
  const int64_t n_blocks = n / info->block_elems;
  auto* bytes = static_cast<uint8_t*>(dst);
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      break;
    case DType::kF16:
    case DType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = dtype == DType::kF16 ? f32_to_f16(src[i]) : f32_to_bf16(src[i]);
        std::memcpy(bytes + 2 * i, &h, 2);
      }
      break;
    case DType::kQ8_0:
      quantize_q8_0(src, n_blocks, static_cast<BlockQ8_0*>(dst));
      break;
    case DType::kQ4_0:
      quantize_q4_0(src, n_blocks, static_cast<BlockQ4_0*>(dst));
      break;
    case DType::kQ5_0:
      quantize_q5_0(src, n_blocks, static_cast<BlockQ5_0*>(dst));
      break;
    case DType::kQ5_1:
      quantize_with_min(src, n_blocks, static_cast<BlockQ5_1*>(dst));
      break;
    case DType::kQ4_1:
      quantize_with_min(src, n_blocks, static_cast<BlockQ4_1*>(dst));
      break;
    case DType::kQ4_K:
      quantize_k45(src, n_blocks, static_cast<BlockQ4_K*>(dst));
      break;
    case DType::kQ5_K:
      quantize_k45(src, n_blocks, static_cast<BlockQ5_K*>(dst));
      break;
    case DType::kQ6_K:
      quantize_q6_k(src, n_blocks, static_cast<BlockQ6_K*>(dst));
      break;
    case DType::kQ2_K:
      quantize_q2_k(src, n_blocks, static_cast<BlockQ2_K*>(dst));
      break;
    case DType::kQ3_K:
      quantize_q3_k(src, n_blocks, static_cast<BlockQ3_K*>(dst));
      break;
    case DType::kIQ4_NL:
      quantize_iq4_nl(src, n_blocks, static_cast<BlockIQ4_NL*>(dst));
      break;
    case DType::kIQ4_XS:
      quantize_iq4_xs(src, n_blocks, static_cast<BlockIQ4_XS*>(dst));
      break;
    default:
      return 0;
  }
  return static_cast<size_t>(row_bytes(*info, n));
}

}  // namespace llmpack::kernels
