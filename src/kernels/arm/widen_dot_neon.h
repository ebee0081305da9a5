// The int8 primitives of arm/quant_rows_neon.h and arm/iq_rows_neon.h by
// widening multiplies (every aarch64 CPU): the base-NEON files' copy of what
// arm/sdot_neon.h gives CPUs with the dot-product extension. The functions
// sit in an unnamed namespace, a copy per file.
#pragma once

#include <arm_neon.h>

namespace llmpack::kernels::neon {
namespace {  // NOLINT(build/namespaces): a copy per file

// The products of int8 vectors w and x, lanes i and i + 8 summed: 8 int16
// sums of two products each (|w| <= 128 and |x| <= 127 keep them in range).
inline int16x8_t mul_pairs(int8x16_t w, int8x16_t x) {
  return vmlal_high_s8(vmull_s8(vget_low_s8(w), vget_low_s8(x)), w, x);
}

inline int32x4_t dot16(int8x16_t w, const int8_t* x) { return vpaddlq_s16(mul_pairs(w, vld1q_s8(x))); }

inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  return vpadalq_s16(vpaddlq_s16(mul_pairs(w0, vld1q_s8(x))), mul_pairs(w1, vld1q_s8(x + 16)));
}

}  // namespace
}  // namespace llmpack::kernels::neon
