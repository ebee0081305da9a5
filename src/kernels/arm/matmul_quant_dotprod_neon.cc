// Block-quantized weights on AArch64 CPUs with the dot-product extension
// (ARMv8.2's optional FEAT_DotProd, in Cortex-A55/A75 and later, Apple M1,
// Neoverse N1): the row kernels of arm/quant_rows_neon.h with sdot
// (vdotq_s32), one instruction for 16 int8 products summed into 4 int32
// lanes, in place of two widening multiplies and two pairwise adds. This
// file is compiled with -march=armv8.2-a+dotprod (CMakeLists.txt says why);
// dispatch calls it only where the CPU reports the extension. Prefill (4
// tokens or more) runs on 4-row panels (arm/quant_panels_neon.h).
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "matmul_quant_dotprod_neon.cc needs -march=armv8.2-a+dotprod (CMakeLists.txt sets it)"
#endif

namespace llmpack::kernels::neon {
namespace {

inline int32x4_t dot16(int8x16_t w, const int8_t* x) { return vdotq_s32(vdupq_n_s32(0), w, vld1q_s8(x)); }

inline int32x4_t dot32(int8x16_t w0, int8x16_t w1, const int8_t* x) {
  return vdotq_s32(vdotq_s32(vdupq_n_s32(0), w0, vld1q_s8(x)), w1, vld1q_s8(x + 16));
}

}  // namespace
}  // namespace llmpack::kernels::neon

#include "kernels/arm/quant_rows_neon.h"
#include "kernels/arm/quant_panels_neon.h"

namespace llmpack::kernels::neon {

void quant_rows_dotprod(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                        int64_t row_end) {
  if (n_tokens >= kTokenTile) return panel_rows_of_quant<SdotPanels>(w, act, n_tokens, y, row_begin, row_end);
  rows_of_quant(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
