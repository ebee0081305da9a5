// Scalar reference kernels: the truth every SIMD path is tested against.
// Written for clarity; accumulations run in double so the reference stays
// close to an fp64 forward pass.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::ref {

// Whether dequantize_elems/dot_row know this type.
bool supports(DType dtype);

// Dequantizes n elements (a multiple of the type's block size) of packed
// data `src` into out[n].
void dequantize_elems(DType dtype, const void* src, int64_t n, float* out);

// The block types (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
// IQ4_XS and the codebook types below); false for other types.
bool dequantize_quant(DType dtype, const void* src, int64_t n, float* out);
// The codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M
// (kernels/iq_blocks.h; reference/dequantize_iq.cc); false for other types.
bool dequantize_iq(DType dtype, const void* src, int64_t n, float* out);

// sum_c row[c] * x[c] over n elements of one packed weight row.
float dot_row(DType dtype, const void* row, const float* x, int64_t n);

// y[t, r] for t < n_tokens and r in [row_begin, row_end): the rows one thread owns.
// x: [n_tokens, w.cols]; y: [n_tokens, w.rows].
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 int64_t row_begin, int64_t row_end);

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
void rope(float* x, int64_t head_dim, int64_t rot_dim, int64_t pos, const float* inv_freq,
          RopeStyle style);
void softmax(float* x, int64_t n);
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n);
void swiglu(float* out, const float* gate, const float* up, int64_t n);
int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err);
void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
// KV cache rows in f16 and q8_0 (kernels.h).
void convert_to_f16(const float* x, int64_t n, uint16_t* out);
void quantize_row_q8_0(const float* x, int64_t n, void* out);
// Compact-cache attention (kernels.h): reference/attention_cache.cc.
void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out);
void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out);

}  // namespace llmpack::kernels::ref
