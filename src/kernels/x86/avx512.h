// AVX-512 kernels (F, BW, VL, DQ and VNNI, plus AVX2/FMA/F16C). Defined in
// x86/*_avx512.cc, compiled with those flags; call them only when
// cpu_supports(KernelPath::kAvx512). The AVX-512 path runs these where they
// exist and the AVX2 kernels for everything else (an AVX-512 CPU has AVX2).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::avx512 {

// Whether an AVX-512 matmul exists for this weight type and token count (for
// example prefill only, where decode is bound by memory bandwidth either way).
// with_decode: whether the block types' decode kernels (1 to 3 tokens) count,
// with_codebook_decode: whether the codebook types' (VBMI) one does; dispatch
// leaves decode to the AVX2 path where set_avx512_decode says so.
bool supports(DType dtype, int64_t n_tokens, bool with_decode, bool with_codebook_decode);

// Same contract as avx2::matmul_rows: y[t, r] for all tokens and rows
// [row_begin, row_end); x: [n_tokens, w.cols] f32; y: [n_tokens, w.rows];
// `scratch` holds what avx2::prepare_activations filled (quantized weights
// share the AVX2 path's ActBlock activations).
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end);

// Prefill attention (kernels.h attention_tokens) for head_dim % 16 == 0:
// x86/attention_tokens_avx512.cc (other head sizes take the AVX2 kernel).
bool attention_tokens_supports(int64_t head_dim);
size_t attention_tokens_scratch_floats(int64_t head_dim);
void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride);

// Decode attention over f32, f16 and q8_0 cache rows (kernels.h
// attention_query_group, attention_head, attention_head_f16,
// attention_head_q8_0) for head_dim % 16 == 0 up to 128, and for q8_0 a head
// of whole blocks (first and head_dim multiples of 32):
// x86/attention_cache_avx512.cc (other heads take the AVX2 kernel). Dispatch
// runs it where the AVX-512 decode kernels run.
bool attention_query_supports(CacheElem elem, int64_t first, int64_t head_dim);
void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out);
void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride_bytes,
                        int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out);

// kernels.h exp_weights on zmm (x86/elementwise_avx512.cc).
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n);

}  // namespace llmpack::kernels::avx512
