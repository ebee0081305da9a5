// AVX-512 matmul for F32, F16 and BF16 weights: not written yet (the AVX2
// kernels run instead).
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {

bool float_supports(DType, int64_t) { return false; }

void matmul_rows_float(const WeightMatrix&, const float*, int64_t, float*, int64_t, int64_t) {}

}  // namespace llmpack::kernels::avx512
