// The avx_vnni kernel path: the AVX2 path with its prefill GEMM built for
// AVX-VNNI (vpdpbusd on 256-bit vectors: Intel Alder Lake and later client
// cores, Sapphire Rapids, AMD Zen 5), x86/matmul_packed_avxvnni.cc, and a
// decode of the signed types (Q8_0, IQ4_NL, IQ4_XS) of its own,
// x86/matmul_decode_avxvnni.cc (both compiled with
// -mavx2 -mfma -mf16c -mavxvnni). Everything else on the path is the AVX2
// kernels. Call only when cpu_supports(KernelPath::kAvxVnni).
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::avx_vnni {

// Whether this path has a kernel of its own for n_tokens tokens of this type
// (the packed prefill: the block types, from 4 tokens on; decode, 1 to 3
// tokens: Q8_0, IQ4_NL, IQ4_XS); otherwise the AVX2 kernels run.
bool supports(DType dtype, int64_t n_tokens);

// y[t, r] for all tokens and rows [row_begin, row_end), as avx2::matmul_rows;
// `scratch` is what avx2::prepare_activations filled.
void matmul_rows(const WeightMatrix& w, const void* scratch, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end);

// The decode half of matmul_rows (x86/matmul_decode_avxvnni.cc).
bool decode_supports(DType dtype, int64_t n_tokens);
void decode_rows(const WeightMatrix& w, const void* scratch, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end);

}  // namespace llmpack::kernels::avx_vnni
