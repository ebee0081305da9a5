// AVX-512 kernels (F, BW, VL, DQ and VNNI, plus AVX2/FMA/F16C). Defined in
// x86/*_avx512.cc, compiled with those flags; call them only when
// cpu_supports(KernelPath::kAvx512). The AVX-512 path runs these where they
// exist and the AVX2 kernels for everything else (an AVX-512 CPU has AVX2).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::avx512 {

// Whether an AVX-512 matmul exists for this weight type and token count (for
// example prefill only, where decode is bound by memory bandwidth either way).
// with_decode: whether decode kernels (quantized types, 1 to 3 tokens) count;
// dispatch leaves decode to the AVX2 path where set_avx512_decode says so.
bool supports(DType dtype, int64_t n_tokens, bool with_decode);

// Same contract as avx2::matmul_rows: y[t, r] for all tokens and rows
// [row_begin, row_end); x: [n_tokens, w.cols] f32; y: [n_tokens, w.rows];
// `scratch` holds what avx2::prepare_activations filled (quantized weights
// share the AVX2 path's ActBlock activations).
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end);

}  // namespace llmpack::kernels::avx512
