// The codebook types' NEON matmul (arm/iq_rows_neon.h) with widening
// products, for every aarch64 CPU; CPUs with the dot-product extension take
// matmul_iq_dotprod_neon.cc's copy.
#include "kernels/arm/widen_dot_neon.h"

#include "kernels/arm/iq_rows_neon.h"

namespace llmpack::kernels::neon {

void iq_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
             int64_t row_end) {
  iq_rows_of</*kJoinInIntegers=*/false>(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
