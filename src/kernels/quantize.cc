// Quantizers of the GGUF block types. Non-finite inputs are not expected
// (weights of a model); they give unspecified but memory-safe output.
#include "kernels/quantize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/half.h"
#include "kernels/grouped_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_fit.h"

namespace llmpack::kernels {
namespace {

using namespace fit;  // NOLINT: the searches' pieces, shared with quantize_iq4.cc

// A Q4_0 or Q5_0 block with search weights w[32] (from importances): its
// scale searched (below) instead of the reference's (signed max) / -8 or -16.
template <class Block>
void quantize_block_searched(const float* x, const float* w, Block* out);

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
// and the 16 levels cover [-8d, 7d]; a block with importances is searched.
void quantize_q4_0(const float* x, const float* imp, int64_t n_blocks, BlockQ4_0* out) {
  float w[kQK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    if (const float* wb = search_weights(x, imp, i * kQK, kQK, w)) {
      quantize_block_searched(x, wb, &out[i]);
      continue;
    }
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
void quantize_q5_0(const float* x, const float* imp, int64_t n_blocks, BlockQ5_0* out) {
  float w[kQK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    if (const float* wb = search_weights(x, imp, i * kQK, kQK, w)) {
      quantize_block_searched(x, wb, &out[i]);
      continue;
    }
    const float d = signed_max(x, kQK) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    out[i] = BlockQ5_0{};
    out[i].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) put_q5(out[i].qs, out[i].qh, j, level_half_up(x[j] * id + 16.5f, 31));
  }
}

// Stores the levels q[32] (0..15, or 0..31 with the fifth bit) into a Q4_1 or
// Q5_1 block whose quants start zeroed.
template <class Block>
void put_min_block_levels(const uint8_t* q, Block* out) {
  for (int j = 0; j < kQK; ++j) {
    if constexpr (kBlockHasQh<Block>)
      put_q5(out->qs, out->qh, j, q[j]);
    else
      out->qs[j % (kQK / 2)] |= static_cast<uint8_t>(q[j] << (j < kQK / 2 ? 0 : 4));
  }
}

// A Q4_1 or Q5_1 block with search weights w[32]: its scale and minimum
// searched as a Q4_K sub-block's (fit_scale_min, below).
template <class Block>
void quantize_min_block_searched(const float* x, const float* w, Block* out);

// Q4_1 and Q5_1: value = q * d + m with m the block's minimum and
// d = (max - min) / top (15 or 31 levels); a block with importances is
// searched.
template <class Block>
void quantize_with_min(const float* x, const float* imp, int64_t n_blocks, Block* out) {
  constexpr int kTop = kBlockHasQh<Block> ? 31 : 15;
  float w[kQK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    if (const float* wb = search_weights(x, imp, i * kQK, kQK, w)) {
      quantize_min_block_searched(x, wb, &out[i]);
      continue;
    }
    const auto [lo, hi] = std::minmax_element(x, x + kQK);
    const float d = (*hi - *lo) / static_cast<float>(kTop);
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    out[i] = Block{};
    out[i].d = f32_to_f16(d);
    out[i].m = f32_to_f16(*lo);
    uint8_t q[kQK];
    for (int j = 0; j < kQK; ++j) q[j] = static_cast<uint8_t>(level_half_up((x[j] - *lo) * id + 0.5f, kTop));
    put_min_block_levels(q, &out[i]);
  }
}

// One candidate scale of fit_scale_min: its refit and the refit's error.
struct ScaleCandidate {
  float s = 0, inv_s = 0;      // the scale tried
  FitLanes lq{}, lqq{}, lqx{};  // sums of q, q^2 and q x over the sub-block, by lane
  float fs = 0, fm = 0, inv_fs = 0;  // the least-squares refit
  FitLanes lerr{};              // its squared error, by lane

  // Lanes i..i + kFitLanes - 1: the levels the scale tried picks, into the
  // sums (each term times the lane's weight w when kWeighted).
  template <bool kWeighted>
  void add_levels(const float* x, const float* w, float lo, float levels) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes((v - lo) * inv_s, 0.0f, levels);
    if constexpr (kWeighted) {
      const FitLanes wq = load_lanes(w) * q;
      lq += wq, lqq += wq * q, lqx += wq * v;
    } else {
      lq += q, lqq += q * q, lqx += q * v;
    }
  }
  // The refit of (scale, min) for those levels by (weighted) least squares:
  // sw the sum of the weights (n unweighted), swx of w x; unweighted, the
  // sums of q and q^2 are integers, exact in floats. fs <= 0 leaves no candidate.
  void refit(double sw, double swx, float lo) {
    const double sq = fit_lanes_total(lq), sqq = fit_lanes_total(lqq), sqx = fit_lanes_total(lqx);
    const double det = sw * sqq - sq * sq;
    fs = s, fm = -lo;
    if (det > 0) {
      fs = static_cast<float>((sw * sqx - sq * swx) / det);
      fm = static_cast<float>(-(swx * sqq - sq * sqx) / det);
    }
    if (fm < 0.0f) fm = 0.0f;  // the format subtracts a non-negative min
    inv_fs = fs > 0.0f ? 1.0f / fs : 0.0f;
  }
  template <bool kWeighted>
  void add_error(const float* x, const float* w, float levels) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes((v + fm) * inv_fs, 0.0f, levels);
    const FitLanes e = fs * q - fm - v;
    if constexpr (kWeighted)
      lerr += load_lanes(w) * e * e;
    else
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
// With weights w[n] (importance), the least squares and the error are
// weighted: sum of w (scale q - min - x)^2.
template <bool kWeighted>
void fit_scale_min_impl(const float* x, const float* w, int n, int top, float* scale, float* min) {
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
  double sw = n, swx = 0;
  if constexpr (kWeighted) {
    sw = 0;
    for (int i = 0; i < n; ++i) sw += w[i], swx += w[i] * x[i];
  } else {
    for (int i = 0; i < n; ++i) swx += x[i];
  }
  constexpr int kFirst = -4, kLast = 12;  // scales (max - min) / (top (1 + k / 60))
  constexpr int kCount = kLast - kFirst + 1;
  ScaleCandidate c[kCount];
  for (int k = 0; k < kCount; ++k) {
    c[k].s = (hi - lo) / (levels * (1.0f + static_cast<float>(k + kFirst) / 60.0f));
    c[k].inv_s = 1.0f / c[k].s;
  }
  for (int i = 0; i < n; i += kFitLanes)
    for (ScaleCandidate& cand : c) cand.add_levels<kWeighted>(x + i, w + i, lo, levels);
  for (ScaleCandidate& cand : c) cand.refit(sw, swx, lo);
  for (int i = 0; i < n; i += kFitLanes)
    for (ScaleCandidate& cand : c) cand.add_error<kWeighted>(x + i, w + i, levels);
  for (const ScaleCandidate& cand : c) {  // in k order
    if (cand.fs <= 0.0f) continue;
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = static_cast<float>(err), best_scale = cand.fs, best_min = cand.fm;
  }
  *scale = best_scale;
  *min = best_min;
}

// w == nullptr: unweighted.
void fit_scale_min(const float* x, const float* w, int n, int top, float* scale, float* min) {
  if (w != nullptr)
    fit_scale_min_impl<true>(x, w, n, top, scale, min);
  else
    fit_scale_min_impl<false>(x, x, n, top, scale, min);  // w unread
}

// The levels of x[i..i + 8) ~ s q - m, q in 0..top (s >= 0): round((x + m) inv_s),
// inv_s = 1 / s (0 where s is 0: every level 0). The block's final pass and
// the code search below pick the same levels.
FitLanes min_levels(const float* x, float m, float inv_s, float top) {
  return round_clamped_lanes((load_lanes(x) + m) * inv_s, 0.0f, top);
}
float inverse_or_zero(float s) { return s != 0.0f ? 1.0f / s : 0.0f; }

// floor(v) clamped to lo..hi as an int; NaN -> lo (weights are finite, but no
// input may make the conversion undefined).
int floor_clamped(float v, int lo, int hi) {
  const float f = std::floor(v);
  if (!(f >= static_cast<float>(lo))) return lo;
  return f >= static_cast<float>(hi) ? hi : static_cast<int>(f);
}

// The (w-weighted) squared error of x[n] at those levels (n a multiple of 8).
float min_code_error(const float* x, const float* w, int n, int top, float s, float m) {
  const float inv_s = inverse_or_zero(s), levels = static_cast<float>(top);
  FitLanes e{};
  for (int i = 0; i < n; i += kFitLanes) {
    const FitLanes r = s * min_levels(x + i, m, inv_s, levels) - m - load_lanes(x + i);
    e += w ? load_lanes(w + i) * r * r : r * r;
  }
  return static_cast<float>(fit_lanes_total(e));
}

// Writes those levels of x[n] into q[n].
void put_min_levels(const float* x, int n, int top, float s, float m, uint8_t* q) {
  const float inv_s = inverse_or_zero(s), levels = static_cast<float>(top);
  for (int i = 0; i < n; i += kFitLanes) {
    const FitLanes v = min_levels(x + i, m, inv_s, levels);
    for (int l = 0; l < kFitLanes; ++l) q[i + l] = static_cast<uint8_t>(v[l] == v[l] ? v[l] : 0.0f);  // NaN: 0
  }
}

template <class Block>
void quantize_min_block_searched(const float* x, const float* w, Block* out) {
  constexpr int kTop = kBlockHasQh<Block> ? 31 : 15;
  float scale = 0.0f, min = 0.0f;  // x ~ scale q - min, min >= 0
  fit_scale_min(x, w, kQK, kTop, &scale, &min);
  *out = Block{};
  out->d = f32_to_f16(scale);
  out->m = f32_to_f16(-min);
  uint8_t q[kQK];
  put_min_levels(x, kQK, kTop, f16_to_f32(out->d), -f16_to_f32(out->m), q);
  put_min_block_levels(q, out);
}

// A sub-block's scale and min codes against the super-block's d and dmin:
// of the codes either side of scale / d and min / dmin, the pair whose
// levels give x[n] the least error (rounding each alone, as before, ignored
// how the two errors meet, and the weights; 2-8% less KLD, section 76).
void pick_min_codes(const float* x, const float* w, int n, int top, float d, float dmin, float scale, float min,
                    int max_code, uint8_t* sc, uint8_t* mn) {
  const int s_lo = d > 0 ? floor_clamped(scale / d, 0, max_code) : 0;
  const int m_lo = dmin > 0 ? floor_clamped(min / dmin, 0, max_code) : 0;
  *sc = static_cast<uint8_t>(s_lo), *mn = static_cast<uint8_t>(m_lo);
  float best = INFINITY;
  for (int s = s_lo; s <= std::min(s_lo + 1, max_code); ++s)
    for (int m = m_lo; m <= std::min(m_lo + 1, max_code); ++m) {
      const float e = min_code_error(x, w, n, top, d * static_cast<float>(s), dmin * static_cast<float>(m));
      if (e < best) best = e, *sc = static_cast<uint8_t>(s), *mn = static_cast<uint8_t>(m);
    }
}

// The levels of x[i..i + 8) ~ step q, q in lo..hi: round(x / step), as a
// multiplication by inv_step = 1 / step (0 where step is 0).
FitLanes signed_levels(const float* x, float inv_step, float lo, float hi) {
  return round_clamped_lanes(load_lanes(x) * inv_step, lo, hi);
}

// The (w-weighted) squared error of x[n] at those levels (n a multiple of 8).
float signed_code_error(const float* x, const float* w, int n, int lo, int hi, float step) {
  const float inv = inverse_or_zero(step), qlo = static_cast<float>(lo), qhi = static_cast<float>(hi);
  FitLanes e{};
  for (int i = 0; i < n; i += kFitLanes) {
    const FitLanes r = step * signed_levels(x + i, inv, qlo, qhi) - load_lanes(x + i);
    e += w ? load_lanes(w + i) * r * r : r * r;
  }
  return static_cast<float>(fit_lanes_total(e));
}

// Writes those levels of x[n], plus `offset`, into q[n].
void put_signed_levels(const float* x, int n, int lo, int hi, float step, int offset, uint8_t* q) {
  const float inv = inverse_or_zero(step), qlo = static_cast<float>(lo), qhi = static_cast<float>(hi);
  for (int i = 0; i < n; i += kFitLanes) {
    const FitLanes v = signed_levels(x + i, inv, qlo, qhi);
    for (int l = 0; l < kFitLanes; ++l)
      q[i + l] = static_cast<uint8_t>(static_cast<int>(v[l] == v[l] ? v[l] : qlo) + offset);  // NaN: lo
  }
}

// A sub-block's signed scale code (code_lo..code_hi) against d, for x[n] ~
// d code q with q in lo..hi: of the codes either side of scale / d, the one
// whose levels give the least error.
int pick_signed_code(const float* x, const float* w, int n, int lo, int hi, float d, float scale, int code_lo,
                     int code_hi) {
  if (d == 0.0f) return 0;
  const int c_lo = floor_clamped(scale / d, code_lo, code_hi);
  int best_code = c_lo;
  float best = INFINITY;
  for (int c = c_lo; c <= std::min(c_lo + 1, code_hi); ++c) {
    const float e = signed_code_error(x, w, n, lo, hi, d * static_cast<float>(c));
    if (e < best) best = e, best_code = c;
  }
  return best_code;
}

// Q4_K, and Q5_K (its fifth bit of element 32j + l at bit j of qh[l]).
template <class Block>
void quantize_k45(const float* x, const float* imp, int64_t n_blocks, Block* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  constexpr int kTop = kFifthBit ? 31 : 15;
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    const float* wb = search_weights(x, imp, i * kQKK, kQKK, w);
    float scales[8], mins[8];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; ++j) {
      fit_scale_min(x + 32 * j, wb ? wb + 32 * j : nullptr, 32, kTop, &scales[j], &mins[j]);
      max_scale = std::max(max_scale, scales[j]);
      max_min = std::max(max_min, mins[j]);
    }
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    out[i] = Block{};
    out[i].d = f32_to_f16(d);
    out[i].dmin = f32_to_f16(dmin);
    const float dq = f16_to_f32(out[i].d), dminq = f16_to_f32(out[i].dmin);
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j)
      pick_min_codes(x + 32 * j, wb ? wb + 32 * j : nullptr, 32, kTop, dq, dminq, scales[j], mins[j], 63, &sc[j],
                     &mn[j]);
    pack_q4k_scales(sc, mn, out[i].scales);
    uint8_t q[kQKK];
    for (int j = 0; j < 8; ++j) put_min_levels(x + 32 * j, 32, kTop, dq * sc[j], dminq * mn[j], q + 32 * j);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        out[i].qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0x0F) | (q[64 * c + 32 + l] & 0x0F) << 4);
    if constexpr (kFifthBit)
      for (int j = 0; j < 8; ++j)
        for (int l = 0; l < 32; ++l) out[i].qh[l] |= static_cast<uint8_t>((q[32 * j + l] >> 4) << j);
  }
}

// One candidate scale of fit_scale_signed: its least-squares refit and error
// (each term times the lane's weight when kWeighted).
struct SignedCandidate {
  float s = 0, inv_s = 0;  // the scale tried
  FitLanes lqx{}, lqq{};   // sums of (w) q x and (w) q^2, by lane
  float fs = 0, inv_fs = 0;  // the refit
  FitLanes lerr{};         // its (weighted) squared error, by lane

  template <bool kWeighted>
  void add_levels(const float* x, const float* w, float qlo, float qhi) {
    const FitLanes v = load_lanes(x);
    const FitLanes q = round_clamped_lanes(v * inv_s, qlo, qhi);
    if constexpr (kWeighted) {
      const FitLanes wq = load_lanes(w) * q;
      lqx += wq * v, lqq += wq * q;
    } else {
      lqx += q * v, lqq += q * q;
    }
  }
  void refit() {
    const double sqx = fit_lanes_total(lqx), sqq = fit_lanes_total(lqq);
    fs = sqq > 0 ? static_cast<float>(sqx / sqq) : s;
    inv_fs = 1.0f / fs;
  }
  template <bool kWeighted>
  void add_error(const float* x, const float* w, float qlo, float qhi) {
    const FitLanes v = load_lanes(x);
    const FitLanes e = fs * round_clamped_lanes(v * inv_fs, qlo, qhi) - v;
    if constexpr (kWeighted)
      lerr += load_lanes(w) * e * e;
    else
      lerr += e * e;
  }
};

// Best scale for x[n] ~ scale * q, q in lo..hi (lo < 0 < hi; the value of
// largest magnitude maps to lo): candidates (signed max) / (lo + step k),
// each refit by least squares for its levels. Q6_K: -32..31, Q3_K: -4..3.
// All candidates step by step together, as in fit_scale_min (the same result).
// With weights w[n], the least squares and the errors are weighted.
template <bool kWeighted>
float fit_scale_signed_impl(const float* x, const float* w, int n, int lo, int hi, float step) {
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
    for (SignedCandidate& cand : c) cand.add_levels<kWeighted>(x + i, w + i, qlo, qhi);
  for (SignedCandidate& cand : c) cand.refit();
  for (int i = 0; i < n; i += kFitLanes)
    for (SignedCandidate& cand : c) cand.add_error<kWeighted>(x + i, w + i, qlo, qhi);
  for (const SignedCandidate& cand : c) {  // in k order
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = err, best = cand.fs;
  }
  return best;
}

// w == nullptr: unweighted.
float fit_scale_signed(const float* x, const float* w, int n, int lo, int hi, float step) {
  return w != nullptr ? fit_scale_signed_impl<true>(x, w, n, lo, hi, step)
                      : fit_scale_signed_impl<false>(x, x, n, lo, hi, step);  // w unread
}

template <class Block>
void quantize_block_searched(const float* x, const float* w, Block* out) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
  constexpr int kLo = kQ5 ? -16 : -8, kHi = -kLo - 1;
  *out = Block{};
  out->d = f32_to_f16(fit_scale_signed(x, w, kQK, kLo, kHi, kQ5 ? 0.25f : 0.125f));
  const float d = f16_to_f32(out->d);
  for (int j = 0; j < kQK; ++j) {
    const int q = (d != 0.0f ? clamp_round(x[j] / d, kLo, kHi) : 0) - kLo;
    if constexpr (kQ5)
      put_q5(out->qs, out->qh, j, q);
    else
      out->qs[j % (kQK / 2)] |= static_cast<uint8_t>(q << (j < kQK / 2 ? 0 : 4));
  }
}

float fit_scale_q6(const float* x, const float* w, int n) { return fit_scale_signed(x, w, n, -32, 31, 0.25f); }

void quantize_q6_k(const float* x, const float* imp, int64_t n_blocks, BlockQ6_K* out) {
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    const float* wb = search_weights(x, imp, i * kQKK, kQKK, w);
    float scales[16], amax = 0.0f;
    for (int s = 0; s < 16; ++s) {
      scales[s] = fit_scale_q6(x + 16 * s, wb ? wb + 16 * s : nullptr, 16);
      amax = std::max(amax, std::fabs(scales[s]));
    }
    out[i].d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(out[i].d);
    uint8_t q[kQKK];
    for (int s = 0; s < 16; ++s) {
      out[i].scales[s] = static_cast<int8_t>(
          d > 0 ? pick_signed_code(x + 16 * s, wb ? wb + 16 * s : nullptr, 16, -32, 31, d, scales[s], -127, 127) : 0);
      put_signed_levels(x + 16 * s, 16, -32, 31, d * out[i].scales[s], 32, q + 16 * s);
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
void quantize_q2_k(const float* x, const float* imp, int64_t n_blocks, BlockQ2_K* out) {
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    const float* wb = search_weights(x, imp, i * kQKK, kQKK, w);
    float scales[16], mins[16], max_scale = 0.0f, max_min = 0.0f;
    for (int s = 0; s < 16; ++s) {
      fit_scale_min(x + 16 * s, wb ? wb + 16 * s : nullptr, 16, 3, &scales[s], &mins[s]);
      max_scale = std::max(max_scale, scales[s]);
      max_min = std::max(max_min, mins[s]);
    }
    out[i].d = f32_to_f16(max_scale / 15.0f);
    out[i].dmin = f32_to_f16(max_min / 15.0f);
    const float d = f16_to_f32(out[i].d), dmin = f16_to_f32(out[i].dmin);
    uint8_t q[kQKK];
    for (int s = 0; s < 16; ++s) {
      uint8_t sc = 0, mn = 0;
      pick_min_codes(x + 16 * s, wb ? wb + 16 * s : nullptr, 16, 3, d, dmin, scales[s], mins[s], 15, &sc, &mn);
      out[i].scales[s] = static_cast<uint8_t>(sc | mn << 4);
      put_min_levels(x + 16 * s, 16, 3, d * sc, dmin * mn, q + 16 * s);
    }
    pack_low_bits(q, out[i].qs);
  }
}

// Q3_K: each sub-block of 16 fitted as scale * q (q in -4..3), the 16 signed
// scales then quantized to 6 bits (scale - 32 in -32..31) against d.
void quantize_q3_k(const float* x, const float* imp, int64_t n_blocks, BlockQ3_K* out) {
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    const float* wb = search_weights(x, imp, i * kQKK, kQKK, w);
    float scales[16];
    for (int s = 0; s < 16; ++s)
      scales[s] = fit_scale_signed(x + 16 * s, wb ? wb + 16 * s : nullptr, 16, -4, 3, 0.125f);
    out[i].d = f32_to_f16(signed_max(scales, 16) / -32.0f);
    const float d = f16_to_f32(out[i].d);
    uint8_t sc[16], q[kQKK];
    for (int s = 0; s < 16; ++s) {
      const int scale = pick_signed_code(x + 16 * s, wb ? wb + 16 * s : nullptr, 16, -4, 3, d, scales[s], -32, 31);
      sc[s] = static_cast<uint8_t>(scale + 32);
      put_signed_levels(x + 16 * s, 16, -4, 3, d * static_cast<float>(scale), 4, q + 16 * s);
    }
    pack_q3k_scales(sc, out[i].scales);
    std::memset(out[i].hmask, 0, sizeof(out[i].hmask));
    for (int e = 0; e < kQKK; ++e)  // e = 128n + 32k + l: bit 4n + k of hmask[l]
      out[i].hmask[e % 32] |= static_cast<uint8_t>((q[e] >> 2) << (e / 32));
    pack_low_bits(q, out[i].qs);
  }
}


}  // namespace

bool quantize_supports(DType dtype) {
  if (is_codebook_type(dtype)) return true;  // quantize_codebook.cc
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

size_t quantize_row(DType dtype, const float* src, int64_t n, void* dst, const float* importance) {
  if (const DType plain = plain_type(dtype); plain != dtype) {
    const auto info = dtype_info(plain);
    if (!info || n < 0 || n % info->block_elems != 0) return 0;
    std::vector<uint8_t> row(static_cast<size_t>(row_bytes(*info, n)));
    const size_t bytes = quantize_row(plain, src, n, row.data(), importance);
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
      quantize_q4_0(src, importance, n_blocks, static_cast<BlockQ4_0*>(dst));
      break;
    case DType::kQ5_0:
      quantize_q5_0(src, importance, n_blocks, static_cast<BlockQ5_0*>(dst));
      break;
    case DType::kQ5_1:
      quantize_with_min(src, importance, n_blocks, static_cast<BlockQ5_1*>(dst));
      break;
    case DType::kQ4_1:
      quantize_with_min(src, importance, n_blocks, static_cast<BlockQ4_1*>(dst));
      break;
    case DType::kQ4_K:
      quantize_k45(src, importance, n_blocks, static_cast<BlockQ4_K*>(dst));
      break;
    case DType::kQ5_K:
      quantize_k45(src, importance, n_blocks, static_cast<BlockQ5_K*>(dst));
      break;
    case DType::kQ6_K:
      quantize_q6_k(src, importance, n_blocks, static_cast<BlockQ6_K*>(dst));
      break;
    case DType::kQ2_K:
      quantize_q2_k(src, importance, n_blocks, static_cast<BlockQ2_K*>(dst));
      break;
    case DType::kQ3_K:
      quantize_q3_k(src, importance, n_blocks, static_cast<BlockQ3_K*>(dst));
      break;
    case DType::kIQ4_NL:
      fit::quantize_iq4_nl(src, importance, n_blocks, static_cast<BlockIQ4_NL*>(dst));
      break;
    case DType::kIQ4_XS:
      fit::quantize_iq4_xs(src, importance, n_blocks, static_cast<BlockIQ4_XS*>(dst));
      break;
    case DType::kIQ2_XXS:
      fit::quantize_iq2_xxs(src, importance, n_blocks, static_cast<BlockIQ2_XXS*>(dst));
      break;
    case DType::kIQ2_XS:
      fit::quantize_iq2_xs(src, importance, n_blocks, static_cast<BlockIQ2_XS*>(dst));
      break;
    case DType::kIQ2_S:
      fit::quantize_iq2_s(src, importance, n_blocks, static_cast<BlockIQ2_S*>(dst));
      break;
    case DType::kIQ3_XXS:
      fit::quantize_iq3_xxs(src, importance, n_blocks, static_cast<BlockIQ3_XXS*>(dst));
      break;
    case DType::kIQ3_S:
      fit::quantize_iq3_s(src, importance, n_blocks, static_cast<BlockIQ3_S*>(dst));
      break;
    case DType::kIQ1_S:
      fit::quantize_iq1_s(src, importance, n_blocks, static_cast<BlockIQ1_S*>(dst));
      break;
    case DType::kIQ1_M:
      fit::quantize_iq1_m(src, importance, n_blocks, static_cast<BlockIQ1_M*>(dst));
      break;
    default:
      return 0;
  }
  return static_cast<size_t>(row_bytes(*info, n));
}

}  // namespace llmpack::kernels
