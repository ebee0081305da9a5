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
#include "kernels/arm/sdot_neon.h"

#include "kernels/arm/quant_rows_neon.h"
#include "kernels/arm/quant_panels_neon.h"

namespace llmpack::kernels::neon {

void quant_rows_dotprod(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                        int64_t row_end) {
  if (n_tokens >= kTokenTile) return panel_rows_of_quant<SdotPanels>(w, act, n_tokens, y, row_begin, row_end);
  rows_of_quant(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
