// codebook_least_error (kernels.h) on NEON: 8 candidates a step, one per
// lane of two 4-float vectors, as the AVX2 path does it. Each element's
// weighted error at each of the 8 levels is computed once into a 32-byte
// table (w (t - s level)^2, the reference's operations in its order); a
// candidate's term for element j is then looked up in that table by its code
// (tbl on the code's four bytes), and the terms add up lane by lane in the
// reference's order, so every candidate's error has the reference's bits
// (aarch64 builds never fuse a multiply and an add: CMakeLists.txt).
#include <arm_neon.h>

#include <cmath>
#include <cstdint>

#include "kernels/arm/neon.h"

namespace llmpack::kernels::neon {
namespace {

struct Lanes8 {
  float32x4_t lo, hi;  // candidates 0-3, 4-7 of a block
};

// The byte indices that gather, for lanes `first`..`first + 3`, the floats
// at codes4[lane] (each code already times 4) out of a table of 8 floats.
inline uint8x16_t gather_indices(uint8x16_t codes4, uint8x16_t spread) {
  const uint8x16_t byte_in_float = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3};
  return vaddq_u8(vqtbl1q_u8(codes4, spread), byte_in_float);
}

// The errors of the 8 candidates of the block at `codes` ([dim][8] codes).
template <int kDim>
inline Lanes8 block_errors(const uint8x16x2_t* at_level, const uint8_t* codes) {
  const uint8x16_t spread_lo = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3};
  const uint8x16_t spread_hi = {4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};
  float32x4_t lo = vdupq_n_f32(0.0f), hi = vdupq_n_f32(0.0f);
#pragma GCC unroll 8
  for (int j = 0; j < kDim; ++j) {
    const uint8x8_t code4 = vshl_n_u8(vld1_u8(codes + 8 * j), 2);
    const uint8x16_t both = vcombine_u8(code4, code4);
    lo = vaddq_f32(lo, vreinterpretq_f32_u8(vqtbl2q_u8(at_level[j], gather_indices(both, spread_lo))));
    hi = vaddq_f32(hi, vreinterpretq_f32_u8(vqtbl2q_u8(at_level[j], gather_indices(both, spread_hi))));
  }
  return {lo, hi};
}

// Per lane, the first candidate of least error so far (< is false for NaN,
// as the reference's): its error and its index.
struct LaneBest {
  float32x4_t err = vdupq_n_f32(INFINITY);
  uint32x4_t at = vdupq_n_u32(0);
  void keep(float32x4_t e, uint32x4_t index) {
    const uint32x4_t less = vcltq_f32(e, err);
    err = vbslq_f32(less, e, err);
    at = vbslq_u32(less, index, at);
  }
};

template <int kDim>
int least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  const float32x4_t scaled_lo = vmulq_n_f32(vld1q_f32(c.levels), s);
  const float32x4_t scaled_hi = vmulq_n_f32(vld1q_f32(c.levels + 4), s);
  uint8x16x2_t at_level[kDim];  // element j's error at level l: floats l of table j
  for (int j = 0; j < kDim; ++j) {
    const float32x4_t r_lo = vsubq_f32(vdupq_n_f32(t[j]), scaled_lo);
    const float32x4_t r_hi = vsubq_f32(vdupq_n_f32(t[j]), scaled_hi);
    at_level[j].val[0] = vreinterpretq_u8_f32(vmulq_f32(vmulq_n_f32(r_lo, w[j]), r_lo));
    at_level[j].val[1] = vreinterpretq_u8_f32(vmulq_f32(vmulq_n_f32(r_hi, w[j]), r_hi));
  }
  LaneBest lo, hi;
  uint32x4_t at_lo = {0, 1, 2, 3}, at_hi = {4, 5, 6, 7};
  const uint8_t* codes = c.lane_codes;
  const int whole = c.n / 8 * 8;
  for (int b = 0; b < whole; b += 8, codes += c.stride) {
    const Lanes8 e = block_errors<kDim>(at_level, codes);
    lo.keep(e.lo, at_lo);
    hi.keep(e.hi, at_hi);
    at_lo = vaddq_u32(at_lo, vdupq_n_u32(8));
    at_hi = vaddq_u32(at_hi, vdupq_n_u32(8));
  }
  if (whole < c.n) {  // the padding lanes of the last block never win
    const Lanes8 e = block_errors<kDim>(at_level, codes);
    const uint32x4_t last = vdupq_n_u32(static_cast<uint32_t>(c.n - 1));
    const float32x4_t inf = vdupq_n_f32(INFINITY);
    lo.keep(vbslq_f32(vcgtq_u32(at_lo, last), inf, e.lo), at_lo);
    hi.keep(vbslq_f32(vcgtq_u32(at_hi, last), inf, e.hi), at_hi);
  }
  // The least of the lanes' errors (none is NaN: a NaN never replaced the
  // initial infinity), then the lowest candidate holding it: the reference's
  // first. (An error is never -0, as every sum starts from +0.)
  const float least = vminvq_f32(vminq_f32(lo.err, hi.err));
  *err = least;
  if (!(least < INFINITY)) return 0;
  const uint32x4_t none = vdupq_n_u32(UINT32_MAX), least_v = vreinterpretq_u32_f32(vdupq_n_f32(least));
  const uint32x4_t first_lo = vbslq_u32(vceqq_u32(vreinterpretq_u32_f32(lo.err), least_v), lo.at, none);
  const uint32x4_t first_hi = vbslq_u32(vceqq_u32(vreinterpretq_u32_f32(hi.err), least_v), hi.at, none);
  return static_cast<int>(vminvq_u32(vminq_u32(first_lo, first_hi)));
}

}  // namespace

int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err) {
  return c.dim == 4 ? least_error<4>(c, t, w, s, err) : least_error<8>(c, t, w, s, err);
}

}  // namespace llmpack::kernels::neon
