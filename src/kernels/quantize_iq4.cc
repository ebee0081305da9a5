// IQ4_NL and IQ4_XS: 32 elements a scale, each an index into the 16 values
// of a non-linear grid (kIQ4Values), the scale found by a least-squares search.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize_fit.h"

namespace llmpack::kernels::fit {
namespace {

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

// One candidate scale of fit_scale_iq4: its least-squares refit and error
// (each term times the lane's weight when kWeighted).
struct IQ4Candidate {
  float s = 0, inv_s = 0;    // the scale tried
  FitLanes lxv{}, lvv{};     // sums of (w) v x and (w) v^2 (v the grid value picked), by lane
  float fs = 0, inv_fs = 0;  // the refit
  FitLanes lerr{};           // its (weighted) squared error, by lane

  template <bool kWeighted>
  void add_levels(const float* x, const float* w) {
    const FitLanes xv = load_lanes(x), v = nearest_iq4_lanes(xv * inv_s);
    if constexpr (kWeighted) {
      const FitLanes wv = load_lanes(w) * v;
      lxv += wv * xv, lvv += wv * v;
    } else {
      lxv += v * xv, lvv += v * v;
    }
  }
  void refit() {
    const double sxv = fit_lanes_total(lxv), svv = fit_lanes_total(lvv);
    fs = svv > 0 ? static_cast<float>(sxv / svv) : s;
    inv_fs = 1.0f / fs;
  }
  template <bool kWeighted>
  void add_error(const float* x, const float* w) {
    const FitLanes xv = load_lanes(x), e = fs * nearest_iq4_lanes(xv * inv_fs) - xv;
    if constexpr (kWeighted)
      lerr += load_lanes(w) * e * e;
    else
      lerr += e * e;
  }
};

// Best d for x[32] ~ d * kIQ4Values[index]: candidates mapping the value of
// largest magnitude to around -127 (the grid's widest end), each refit by
// least squares for the indices it picks; all candidates step by step
// together, as in fit_scale_min (the same result as one at a time). With
// weights w[32], the least squares and the errors are weighted.
template <bool kWeighted>
float fit_scale_iq4_impl(const float* x, const float* w) {
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
    for (IQ4Candidate& cand : c) cand.add_levels<kWeighted>(x + i, w + i);
  for (IQ4Candidate& cand : c) cand.refit();
  for (int i = 0; i < kQK; i += kFitLanes)
    for (IQ4Candidate& cand : c) cand.add_error<kWeighted>(x + i, w + i);
  for (const IQ4Candidate& cand : c) {  // in k order
    const double err = fit_lanes_total(cand.lerr);
    if (err < best_err) best_err = err, best = cand.fs;
  }
  return best;
}

// w == nullptr: unweighted.
float fit_scale_iq4(const float* x, const float* w) {
  return w != nullptr ? fit_scale_iq4_impl<true>(x, w) : fit_scale_iq4_impl<false>(x, x);  // w unread
}

// The 16 index bytes of 32 elements at step d (Q4_0's nibble order).
void put_iq4_indices(const float* x, float d, uint8_t* qs) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < kQK / 2; ++j)
    qs[j] = static_cast<uint8_t>(nearest_iq4(x[j] * id) | nearest_iq4(x[j + kQK / 2] * id) << 4);
}

// The (w-weighted) squared error of 32 elements at step d, each the grid
// value put_iq4_indices picks.
float iq4_error(const float* x, const float* w, float d) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  FitLanes e{};
  for (int j = 0; j < kQK; j += kFitLanes) {
    const FitLanes xv = load_lanes(x + j), r = d * nearest_iq4_lanes(xv * id) - xv;
    e += w ? load_lanes(w + j) * r * r : r * r;
  }
  return static_cast<float>(fit_lanes_total(e));
}

// A sub-block's 6-bit scale code (-32..31) against d: of the codes either
// side of scale / d, the one whose grid values give the least error.
int pick_iq4_code(const float* x, const float* w, float d, float scale) {
  if (d == 0.0f) return 0;
  const float f = std::floor(scale / d);  // NaN -> -32, as the conversion must not see it
  const int c_lo = !(f >= -32.0f) ? -32 : f >= 31.0f ? 31 : static_cast<int>(f);
  int best_code = c_lo;
  float best = INFINITY;
  for (int c = c_lo; c <= std::min(c_lo + 1, 31); ++c) {
    const float e = iq4_error(x, w, d * static_cast<float>(c));
    if (e < best) best = e, best_code = c;
  }
  return best_code;
}

}  // namespace

void quantize_iq4_nl(const float* x, const float* imp, int64_t n_blocks, BlockIQ4_NL* out) {
  float w[kQK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK) {
    out[i].d = f32_to_f16(fit_scale_iq4(x, search_weights(x, imp, i * kQK, kQK, w)));
    put_iq4_indices(x, f16_to_f32(out[i].d), out[i].qs);
  }
}

// IQ4_XS: each sub-block of 32 fitted as IQ4_NL, the 8 signed scales then
// quantized to 6 bits (scale - 32 in -32..31) against d.
void quantize_iq4_xs(const float* x, const float* imp, int64_t n_blocks, BlockIQ4_XS* out) {
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    const float* wb = search_weights(x, imp, i * kQKK, kQKK, w);
    float scales[8];
    for (int j = 0; j < 8; ++j) scales[j] = fit_scale_iq4(x + 32 * j, wb ? wb + 32 * j : nullptr);
    out[i] = BlockIQ4_XS{};
    out[i].d = f32_to_f16(signed_max(scales, 8) / -32.0f);
    const float d = f16_to_f32(out[i].d);
    for (int j = 0; j < 8; ++j) {
      const int ls = pick_iq4_code(x + 32 * j, wb ? wb + 32 * j : nullptr, d, scales[j]) + 32;
      out[i].scales_l[j / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (j % 2)));
      out[i].scales_h = static_cast<uint16_t>(out[i].scales_h | (ls >> 4) << (2 * j));
      put_iq4_indices(x + 32 * j, d * static_cast<float>(ls - 32), out[i].qs + 16 * j);
    }
  }
}

}  // namespace llmpack::kernels::fit
