// The codebook types' NEON matmul (arm/iq_rows_neon.h) with sdot: 16 int8
// products summed into 4 int32 lanes by one instruction where the widening
// copy (matmul_iq_neon.cc) spends three. Compiled with
// -march=armv8.2-a+dotprod (CMakeLists.txt); dispatch calls it only where the
// CPU reports the extension (the neon_dotprod and neon_i8mm paths).
#include "kernels/arm/sdot_neon.h"

#include "kernels/arm/iq_rows_neon.h"

namespace llmpack::kernels::neon {

void iq_rows_dotprod(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                     int64_t row_end) {
  iq_rows_of</*kJoinInIntegers=*/true>(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
