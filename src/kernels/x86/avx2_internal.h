// Per-family AVX2 matmul entry points, combined by x86/matmul_avx2.cc.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace llmpack::kernels::avx2 {

// F32, F16 and BF16 weights: register-blocked tiles of 4 rows x up to 3 tokens.
void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

}  // namespace llmpack::kernels::avx2
