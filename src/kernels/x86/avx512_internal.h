// Per-family AVX-512 matmul entry points, combined by x86/matmul_avx512.cc.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"
#include "kernels/x86/avx2_internal.h"  // ActBlock: activations shared with the AVX2 path

namespace llmpack::kernels::avx512 {

// F32 / F16 / BF16 weights (x86/matmul_float_avx512.cc).
bool float_supports(DType dtype, int64_t n_tokens);
void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

// The block types (Q4_0 ... Q6_K, IQ4_NL, IQ4_XS) from 4 tokens and the
// codebook types from kCodebookPackedMinTokens against activations quantized
// by avx2::quantize_activations (x86/matmul_packed_avx512.cc).
bool quant_supports(DType dtype, int64_t n_tokens);
void matmul_rows_quant(const WeightMatrix& w, const avx2::ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

// Decode of the same types, one to kDecodeMaxTokens tokens (rows stream once
// per token; x86/matmul_decode_avx512.cc). Reads the activations and their
// per-token sums prepared by avx2::prepare_activations.
constexpr int64_t kDecodeMaxTokens = 3;
bool decode_supports(DType dtype, int64_t n_tokens);
void matmul_rows_decode(const WeightMatrix& w, const avx2::ActBlock* act, int64_t n_tokens, float* y,
                        int64_t row_begin, int64_t row_end);

// The codebook types (IQ2_XXS ... IQ1_M) against the activations with a
// scale per 256 that avx2::prepare_activations writes for them
// (x86/matmul_iq_avx512.cc): prefill from avx2::kIqRegisterDecodeBelow
// tokens to kCodebookPackedMinTokens - 1 (more go to the packed GEMM), and
// decode where iq_vbmi_decode_supports; other decodes stay on the AVX2
// register kernel.
bool iq_supports(DType dtype, int64_t n_tokens);
void matmul_rows_iq(const WeightMatrix& w, const avx2::ActBlock* act, int64_t n_tokens, float* y,
                    int64_t row_begin, int64_t row_end);

// Decode (any token count, though matmul sends it fewer than
// kIqVbmiDecodeBelow: rows [row_begin, row_end) of y [n_tokens, w.rows];
// token t's activations at tokens + t * (w.cols / 256)) of the codebook types
// with a kernel built on AVX-512 VBMI's byte permutes, where the CPU has VBMI
// (Zen 4 and 5, Intel Ice Lake and later): IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS
// and IQ3_S (x86/iq_decode_vbmi_avx512.cc). Each super-block's weights are
// built once for all the tokens.
bool iq_vbmi_decode_supports(DType dtype);
// Below this many tokens the VBMI kernel takes the types it has (up to 8
// tokens a pass over the rows), also where the preparation stored the
// activations as a + 128 (4 tokens and more): on a Zen 4 it beat unpacking
// the rows at every count up to 16 (1B IQ2_XXS pp16 89-94 against 70-76
// t/s), and won or lost by turns at 23 and 24 (docs/PERFORMANCE.md section 82).
constexpr int64_t kIqVbmiDecodeBelow = 17;
void iq_vbmi_decode_rows(const WeightMatrix& w, const avx2::ActSuper* tokens, int64_t n_tokens, float* y,
                         int64_t row_begin, int64_t row_end);

}  // namespace llmpack::kernels::avx512
