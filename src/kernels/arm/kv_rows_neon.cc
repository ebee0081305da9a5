// KV cache rows in f16 and q8_0 on NEON (kernels.h convert_to_f16,
// quantize_row_q8_0), 4 floats a lane group; the same arithmetic as the
// reference (fcvtn rounds to nearest even under the default FPCR, fcvtns
// rounds to nearest even as nearbyint does by default), so the same bits.
#include "core/half.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/q8_0_row.h"

namespace llmpack::kernels::neon {
namespace {

void quantize_block_q8_0(const float* x, BlockQ8_0* out) {
  float32x4_t v[8];
  float32x4_t amax = vdupq_n_f32(0.0f);
  for (int j = 0; j < 8; ++j) {
    v[j] = vld1q_f32(x + 4 * j);
    amax = vmaxq_f32(amax, vabsq_f32(v[j]));
  }
  const float d = vmaxvq_f32(amax) / 127.0f;
  const float inv = d > 0.0f ? 1.0f / d : 0.0f;
  out->d = f32_to_f16(d);
  const int32x4_t lo = vdupq_n_s32(-127), hi = vdupq_n_s32(127);
  for (int j = 0; j < 8; j += 2) {
    const int32x4_t q0 = vminq_s32(hi, vmaxq_s32(lo, vcvtnq_s32_f32(vmulq_n_f32(v[j], inv))));
    const int32x4_t q1 = vminq_s32(hi, vmaxq_s32(lo, vcvtnq_s32_f32(vmulq_n_f32(v[j + 1], inv))));
    const int16x8_t words = vcombine_s16(vmovn_s32(q0), vmovn_s32(q1));
    vst1_s8(out->qs + 4 * j, vmovn_s16(words));
  }
}

}  // namespace

void convert_to_f16(const float* x, int64_t n, uint16_t* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(out + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void quantize_row_q8_0(const float* x, int64_t n, void* out) {
  quantize_q8_0_blocks(x, n, out, quantize_block_q8_0);
}

}  // namespace llmpack::kernels::neon
