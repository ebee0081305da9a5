// Block-quantized weights on NEON: the activations are quantized once per
// matmul to int8 blocks of 32 (ActBlock), each weight block is unpacked to
// int8 once and multiplied with up to kTokenTile tokens' blocks by widening
// int8 products (vmull_s8 / vmlal_high_s8) summed in int16 pairs then int32;
// the float scales multiply the int32 sums per 32 elements.
#include <algorithm>

#include "core/half.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::neon {
namespace {

// The 32 floats of x as an ActBlock.
void quantize_block(const float* x, ActBlock* out) {
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
    q16[i] = vcombine_s16(vmovn_s32(a), vmovn_s32(b));
  }
  const int8x16_t q0 = vcombine_s8(vmovn_s16(q16[0]), vmovn_s16(q16[1]));
  const int8x16_t q1 = vcombine_s8(vmovn_s16(q16[2]), vmovn_s16(q16[3]));
  vst1q_s8(out->q, q0);
  vst1q_s8(out->q + 16, q1);
  out->d = d;
  out->qsum = vaddlvq_s8(q0) + vaddlvq_s8(q1);
}

// Each row kernel: y_t = row . x_t for NT tokens whose blocks start at act[t].
// acc holds 4 partial float sums per token, added across at the end.
template <int NT>
void row_q8_0(const BlockQ8_0* w, int64_t n_blocks, const ActBlock* const* act, float* out) {
  float32x4_t acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int8x16_t w0 = vld1q_s8(w[b].qs), w1 = vld1q_s8(w[b].qs + 16);
    const float dw = f16_to_f32(w[b].d);
    for (int t = 0; t < NT; ++t) {
      const ActBlock& a = act[t][b];
      acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(dot32(w0, w1, a.q)), dw * a.d);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// Q4_0: element i < 16 is the low nibble of qs[i], i >= 16 the high nibble of
// qs[i - 16]; value d * (q - 8).
template <int NT>
void row_q4_0(const BlockQ4_0* w, int64_t n_blocks, const ActBlock* const* act, float* out) {
  float32x4_t acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  const int8x16_t eight = vdupq_n_s8(8);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8x16_t q = vld1q_u8(w[b].qs);
    const int8x16_t w0 = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(q, low4)), eight);
    const int8x16_t w1 = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(q, 4)), eight);
    const float dw = f16_to_f32(w[b].d);
    for (int t = 0; t < NT; ++t) {
      const ActBlock& a = act[t][b];
      acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(dot32(w0, w1, a.q)), dw * a.d);
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// Q4_K: per 256-element super-block, 8 sub-blocks j of 32 (activation block
// 8 sb + j) with value d * scale_j * q - dmin * min_j, q in 0..15: the min
// term is dmin * min_j * (sum of x over the sub-block) = ... * a.d * a.qsum.
template <int NT>
void row_q4_k(const BlockQ4_K* w, int64_t n_super, const ActBlock* const* act, float* out) {
  float32x4_t acc[NT];
  float mins[NT] = {};
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  const uint8x16_t low4 = vdupq_n_u8(0x0F);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockQ4_K& b = w[sb];
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    uint8_t scale[8], min[8];
    for (int j = 0; j < 8; ++j) unpack_q4k_scale(b.scales, j, &scale[j], &min[j]);
    for (int c = 0; c < 4; ++c) {  // sub-blocks 2c (low nibbles) and 2c + 1 (high)
      const uint8x16_t q0 = vld1q_u8(b.qs + 32 * c), q1 = vld1q_u8(b.qs + 32 * c + 16);
      const int8x16_t lo0 = vreinterpretq_s8_u8(vandq_u8(q0, low4));
      const int8x16_t lo1 = vreinterpretq_s8_u8(vandq_u8(q1, low4));
      const int8x16_t hi0 = vreinterpretq_s8_u8(vshrq_n_u8(q0, 4));
      const int8x16_t hi1 = vreinterpretq_s8_u8(vshrq_n_u8(q1, 4));
      const float s_lo = d * scale[2 * c], s_hi = d * scale[2 * c + 1];
      const float m_lo = dmin * min[2 * c], m_hi = dmin * min[2 * c + 1];
      for (int t = 0; t < NT; ++t) {
        const ActBlock& a = act[t][8 * sb + 2 * c];
        const ActBlock& h = act[t][8 * sb + 2 * c + 1];
        acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(dot32(lo0, lo1, a.q)), s_lo * a.d);
        acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(dot32(hi0, hi1, h.q)), s_hi * h.d);
        mins[t] += m_lo * a.d * static_cast<float>(a.qsum) + m_hi * h.d * static_cast<float>(h.qsum);
      }
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]) - mins[t];
}

// Q6_K: per half h of 128 elements, group g of 32 (activation block
// 8 sb + 4h + g): low 4 bits from ql[64h + 32(g & 1) + l] (low nibble for
// g < 2, high for g >= 2), high 2 bits from (qh[32h + l] >> 2g) & 3; value
// d * scales[8h + 2g + l / 16] * (q - 32). The two 16-element halves of a
// group have their own int8 scale, applied to the int32 sums.
template <int NT>
void row_q6_k(const BlockQ6_K* w, int64_t n_super, const ActBlock* const* act, float* out) {
  float32x4_t acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = vdupq_n_f32(0.0f);
  const uint8x16_t low4 = vdupq_n_u8(0x0F), low2 = vdupq_n_u8(0x03);
  const int8x16_t bias = vdupq_n_s8(32);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockQ6_K& b = w[sb];
    const float d = f16_to_f32(b.d);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b.ql + 64 * h;
      const uint8x16_t qh0 = vld1q_u8(b.qh + 32 * h), qh1 = vld1q_u8(b.qh + 32 * h + 16);
      for (int g = 0; g < 4; ++g) {
        uint8x16_t l0 = vld1q_u8(ql + 32 * (g & 1)), l1 = vld1q_u8(ql + 32 * (g & 1) + 16);
        l0 = g < 2 ? vandq_u8(l0, low4) : vshrq_n_u8(l0, 4);
        l1 = g < 2 ? vandq_u8(l1, low4) : vshrq_n_u8(l1, 4);
        const int8x16_t down = vdupq_n_s8(static_cast<int8_t>(-2 * g));  // vshl by a negative count shifts right
        const uint8x16_t h0 = vshlq_n_u8(vandq_u8(vshlq_u8(qh0, down), low2), 4);
        const uint8x16_t h1 = vshlq_n_u8(vandq_u8(vshlq_u8(qh1, down), low2), 4);
        const int8x16_t w0 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l0, h0)), bias);
        const int8x16_t w1 = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(l1, h1)), bias);
        const int32_t s0 = b.scales[8 * h + 2 * g], s1 = b.scales[8 * h + 2 * g + 1];
        for (int t = 0; t < NT; ++t) {
          const ActBlock& a = act[t][8 * sb + 4 * h + g];
          const int32x4_t p0 = vpaddlq_s16(mul_pairs(w0, vld1q_s8(a.q)));
          const int32x4_t p1 = vpaddlq_s16(mul_pairs(w1, vld1q_s8(a.q + 16)));
          const int32x4_t s = vmlaq_n_s32(vmulq_n_s32(p0, s0), p1, s1);
          acc[t] = vmlaq_n_f32(acc[t], vcvtq_f32_s32(s), d * a.d);
        }
      }
    }
  }
  for (int t = 0; t < NT; ++t) out[t] = vaddvq_f32(acc[t]);
}

// One row against NT tokens, by weight type.
template <int NT>
void quant_row(DType dtype, const void* row, int64_t cols, const ActBlock* const* act, float* out) {
  switch (dtype) {
    case DType::kQ8_0:
      return row_q8_0<NT>(static_cast<const BlockQ8_0*>(row), cols / kQK, act, out);
    case DType::kQ4_0:
      return row_q4_0<NT>(static_cast<const BlockQ4_0*>(row), cols / kQK, act, out);
    case DType::kQ4_K:
      return row_q4_k<NT>(static_cast<const BlockQ4_K*>(row), cols / kQKK, act, out);
    case DType::kQ6_K:
      return row_q6_k<NT>(static_cast<const BlockQ6_K*>(row), cols / kQKK, act, out);
    default:
      return;  // supports() admits only the four types above
  }
}

}  // namespace

void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t n_tokens, int64_t t_begin,
                         int64_t t_end, void* scratch) {
  if (scratch_bytes(dtype, cols, n_tokens) == 0) return;
  auto* act = static_cast<ActBlock*>(scratch);
  const int64_t n_blocks = cols / kQK;
  for (int64_t t = t_begin; t < t_end; ++t)
    for (int64_t b = 0; b < n_blocks; ++b) quantize_block(x + t * cols + b * kQK, act + t * n_blocks + b);
}

void quant_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  const int64_t rb = row_bytes(*dtype_info(w.dtype), w.cols), n_blocks = w.cols / kQK;
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    const void* row = base + r * rb;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenTile) {
      const int nt = static_cast<int>(std::min<int64_t>(kTokenTile, n_tokens - t0));
      const ActBlock* tokens[kTokenTile];
      float out[kTokenTile] = {};
      for (int t = 0; t < nt; ++t) tokens[t] = act + (t0 + t) * n_blocks;
      switch (nt) {
        case 1: quant_row<1>(w.dtype, row, w.cols, tokens, out); break;
        case 2: quant_row<2>(w.dtype, row, w.cols, tokens, out); break;
        case 3: quant_row<3>(w.dtype, row, w.cols, tokens, out); break;
        default: quant_row<4>(w.dtype, row, w.cols, tokens, out); break;
      }
      for (int t = 0; t < nt; ++t) y[(t0 + t) * w.rows + r] = out[t];
    }
  }
}

}  // namespace llmpack::kernels::neon
