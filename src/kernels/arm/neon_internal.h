// Shared pieces of the NEON kernel files (arm/*_neon.cc).
#pragma once

#include <arm_neon.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "kernels/kernels.h"

namespace llmpack::kernels::neon {
namespace {  // NOLINT(build/namespaces): a copy per file, see half_to_float

// IEEE half to float by the base ISA's fcvt: exact, as core/half.h's
// f16_to_f32, without its branches and loop (which cost the row kernels
// about a third of their instructions per Q4_0 block). In the unnamed
// namespace so that the dot-product build's copy (compiled with other flags)
// is never the one another file calls.
inline float half_to_float(uint16_t h) {
  __fp16 v;
  std::memcpy(&v, &h, sizeof v);
  return static_cast<float>(v);
}

// e^x for x in float range: x = n ln2 + r with |r| <= ln2 / 2, e^r by its
// Taylor series to r^6 (relative error under 2e-7 there), times 2^n built in
// the exponent bits. x is clamped to [-87, 88] so 2^n stays a normal float:
// e^-87 (about 1.6e-38) stands for anything smaller, which softmax and
// silu treat as the zero it is next to their other terms. NaN stays NaN.
// 32 floats as int8 q = x / d rounded to nearest even (fcvtns), d = max|x| /
// 127 (q = 0 when every x is 0): the activation blocks' and the q8_0 KV
// rows' quantization. Returns d; the 32 values come back as two halves.
inline float quantize_32(const float* x, int8x16_t& lo, int8x16_t& hi) {
  float32x4_t v[8];
  float32x4_t amax = vdupq_n_f32(0.0f);
  for (int i = 0; i < 8; ++i) {
    v[i] = vld1q_f32(x + 4 * i);
    amax = vmaxq_f32(amax, vabsq_f32(v[i]));
  }
  const float d = vmaxvq_f32(amax) / 127.0f;
  const float id = d > 0.0f ? 1.0f / d : 0.0f;
  int16x8_t q16[4];
  for (int i = 0; i < 4; ++i) {
    const int32x4_t a = vcvtnq_s32_f32(vmulq_n_f32(v[2 * i], id));
    const int32x4_t b = vcvtnq_s32_f32(vmulq_n_f32(v[2 * i + 1], id));
    q16[i] = vcombine_s16(vmovn_s32(a), vmovn_s32(b));  // |q| <= 127: no saturation needed
  }
  lo = vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1]));
  hi = vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3]));
  return d;
}

inline float32x4_t exp4(float32x4_t x) {
  x = vminq_f32(vmaxq_f32(x, vdupq_n_f32(-87.0f)), vdupq_n_f32(88.0f));
  const float32x4_t n = vrndnq_f32(vmulq_n_f32(x, 1.44269504f));
  // r = x - n ln2, ln2 in two parts so n * ln2_hi is exact
  float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(0.693359375f));
  r = vfmsq_f32(r, n, vdupq_n_f32(-2.12194440e-4f));
  float32x4_t p = vdupq_n_f32(1.0f / 720.0f);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 120.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 24.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f / 6.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(0.5f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  p = vfmaq_f32(vdupq_n_f32(1.0f), p, r);
  const int32x4_t pow2 = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
  return vmulq_f32(p, vreinterpretq_f32_s32(pow2));
}

}  // namespace

// One 32-element block of activations quantized to int8: x[i] ~ q[i] * d
// (d = max|x| / 127, round to nearest), qsum = sum of q (the offset and min
// terms of Q4_1, Q5_1, Q4_K, Q5_K), qsum_lo = sum of q[0..15] (Q2_K's
// 16-element mins).
struct ActBlock {
  float d;
  int32_t qsum;
  int32_t qsum_lo;
  int8_t q[32];
};
static_assert(sizeof(ActBlock) == 44);

// The scratch prepare_activations fills for n_tokens tokens of n_blocks
// blocks: ActBlock [n_tokens][n_blocks], then per token kActFloatsPerBlock
// runs of floats (the row kernels read 4 blocks' terms as one vector load;
// from the 44-byte blocks GCC 12 made a load and a lane move of each):
// d [n_blocks], d * qsum [n_blocks] (the min terms of Q4_1, Q5_1, Q4_K and
// Q5_K), and d * qsum_lo, d * (qsum - qsum_lo) [n_blocks][2] (Q2_K's).
constexpr int kActFloatsPerBlock = 4;
inline size_t activation_scratch_bytes(int64_t n_tokens, int64_t n_blocks) {
  return static_cast<size_t>(n_tokens * n_blocks) * (sizeof(ActBlock) + kActFloatsPerBlock * sizeof(float));
}
// Token t's runs: d at [0, n_blocks), d * qsum at [n_blocks, 2 n_blocks), the
// half sums at [2 n_blocks, 4 n_blocks).
inline const float* activation_runs(const ActBlock* act, int64_t n_tokens, int64_t n_blocks, int64_t t) {
  return reinterpret_cast<const float*>(act + n_tokens * n_blocks) + t * kActFloatsPerBlock * n_blocks;
}
inline float* activation_runs(ActBlock* act, int64_t n_tokens, int64_t n_blocks, int64_t t) {
  return reinterpret_cast<float*>(act + n_tokens * n_blocks) + t * kActFloatsPerBlock * n_blocks;
}

// Tokens whose products share one unpacking of a weight block (prefill reuses
// each block across this many tokens; decode has 1 to 3).
constexpr int kTokenTile = 4;

namespace {  // NOLINT(build/namespaces): a copy per file, as half_to_float

// Tokens a prefill pass over the rows takes at a time: as many tiles as keep
// their activations (bytes_per_token each) within about 128 KiB, so they stay
// in L2 while every row passes (all of a long prompt's activations would come
// from memory once a row: 1.4 MiB of int8 blocks, or 4 MiB of floats, for 512
// tokens at 2048 columns).
inline int64_t tokens_per_block(int64_t bytes_per_token) {
  const int64_t fit = (int64_t{128} << 10) / std::max<int64_t>(1, bytes_per_token);
  return std::max<int64_t>(kTokenTile, fit / kTokenTile * kTokenTile);
}

// f.template operator()<I>() for I = 0 .. N - 1 in order: the unrolled loops
// whose index must be a constant (vector lanes, shift counts).
template <int N, class F>
inline void for_constants(const F& f) {
  [&]<int... I>(std::integer_sequence<int, I...>) {
    (f.template operator()<I>(), ...);
  }(std::make_integer_sequence<int, N>());
}

// f.template operator()<NT>() for a tile of nt tokens (1 .. kTokenTile).
template <class F>
inline void with_tile_tokens(int nt, const F& f) {
  switch (nt) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    default: return f.template operator()<4>();
  }
}

// y[t, r] (ld_y floats a token) for rows [row_begin, row_end) and every token,
// by tiles of up to tile_tokens (1 .. kTokenTile) tokens of one row
// (tile.template operator()<NT>(r, t0, out) fills out[0..NT)), a block of
// tokens_per_block tokens at a time with the rows inside it.
template <class Tile>
void rows_in_token_blocks(int64_t n_tokens, int64_t bytes_per_token, int64_t row_begin, int64_t row_end, float* y,
                          int64_t ld_y, int tile_tokens, const Tile& tile) {
  const int64_t token_block = tokens_per_block(bytes_per_token);
  tile_tokens = std::clamp(tile_tokens, 1, kTokenTile);
  for (int64_t tb = 0; tb < n_tokens; tb += token_block) {
    const int64_t te = std::min(n_tokens, tb + token_block);
    for (int64_t r = row_begin; r < row_end; ++r)
      for (int64_t t0 = tb; t0 < te; t0 += tile_tokens) {
        const int nt = static_cast<int>(std::min<int64_t>(tile_tokens, te - t0));
        float out[kTokenTile] = {};
        with_tile_tokens(nt, [&]<int NT>() { tile.template operator()<NT>(r, t0, out); });
        for (int t = 0; t < nt; ++t) y[(t0 + t) * ld_y + r] = out[t];
      }
  }
}

}  // namespace

// Products of rows [row_begin, row_end) with block-quantized weights
// (matmul_quant_neon.cc; matmul_quant_dotprod_neon.cc for CPUs with the
// dot-product extension) and with float weights (matmul_float_neon.cc).
void quant_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end);
void quant_rows_dotprod(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                        int64_t row_end);
void quant_rows_i8mm(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                     int64_t row_end);
void float_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end);
// The codebook types (kernels/iq_blocks.h), every token count: rows unpacked
// a chunk at a time to int8 weights (kernels/iq_unpack.h) and multiplied
// (arm/iq_rows_neon.h) with widening products (iq_rows, matmul_iq_neon.cc)
// or, where the CPU has the dot-product extension, sdot (iq_rows_dotprod,
// matmul_iq_dotprod_neon.cc).
void iq_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
             int64_t row_end);
void iq_rows_dotprod(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                     int64_t row_end);

// The n elements of a cache row's head as f32 into out: f16 elements from h,
// or elements [first, first + n) of a run of BlockQ8_0 starting at row
// (attention_cache_neon.cc).
void widen_f16(const uint16_t* h, int64_t n, float* out);
void widen_q8_0(const uint8_t* row, int64_t first, int64_t n, float* out);

// sum_i a[i] * b[i] over n floats (elementwise_neon.cc).
float dot_f32(const float* a, const float* b, int64_t n);

}  // namespace llmpack::kernels::neon
