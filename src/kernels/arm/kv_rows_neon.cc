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

// The q8_0 block: quantize_32's values, scale as f16. quantize_32 does not
// clamp to [-127, 127] as the reference does: x / d cannot round past 127.
void quantize_block_q8_0(const float* x, BlockQ8_0* out) {
  int8x16_t lo, hi;
  out->d = f32_to_f16(quantize_32(x, lo, hi));
  vst1q_s8(out->qs, lo);
  vst1q_s8(out->qs + 16, hi);
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
