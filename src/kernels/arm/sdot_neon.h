// The two int8 primitives of arm/quant_rows_neon.h built with the dot-product
// extension (sdot, vdotq_s32: one instruction for 16 int8 products summed into
// 4 int32 lanes, in place of two widening multiplies and two pairwise adds),
// for the files compiled with it (matmul_quant_dotprod_neon.cc,
// matmul_quant_i8mm_neon.cc). Include it before quant_rows_neon.h; the
// functions sit in an unnamed namespace, a copy per file.
#pragma once

#include <arm_neon.h>

#if !defined(__ARM_FEATURE_DOTPROD)
#error "arm/sdot_neon.h needs -march=armv8.2-a+dotprod (CMakeLists.txt sets it for *_dotprod_neon.cc, *_i8mm_neon.cc)"
#endif

namespace llmpack::kernels::neon {
namespace {

inline int32x4_t dot16(int8x16_t w, const int8_t* x) { return vdotq_s32(vdupq_n_s32(0), w, vld1q_s8(x)); }

inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

}  // namespace
}  // namespace llmpack::kernels::neon
