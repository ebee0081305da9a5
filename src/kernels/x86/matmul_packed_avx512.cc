// AVX-512 VNNI prefill GEMM for quantized weights: not written yet (the AVX2
// kernels run instead).
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {

bool quant_supports(DType, int64_t) { return false; }

void matmul_rows_quant(const WeightMatrix&, const avx2::ActBlock*, int64_t, float*, int64_t, int64_t) {}

}  // namespace llmpack::kernels::avx512
