// AVX2+FMA(+F16C) kernels. Defined in x86/*_avx2.cc (compiled with -mavx2
// -mfma -mf16c); call them only when cpu_supports(KernelPath::kAvx2).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::avx2 {

// Weight types with an AVX2 matmul.
bool supports(DType dtype);

// Scratch for the quantized activations of n_tokens rows of `cols` (0 for float
// weights): ActBlocks [n_tokens][cols / 32], then per token the blocks' scales
// and sums as contiguous floats (act_floats in avx2_internal.h).
size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens);

// Prepares the activations once per matmul (quantizes them for integer
// dot products; nothing for float weights). Rows of tokens [t_begin, t_end).
// The codebook types' activations get a scale per 256, read by their own
// kernels, or with `codebook_blocks` the block types' preparation, read by
// the AVX-512 packed GEMM (x86/matmul_packed_avx512.cc; kernels.h's
// kCodebookPackedMinTokens).
void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t n_tokens,
                         int64_t t_begin, int64_t t_end, void* scratch, bool codebook_blocks);
// Whether prepare_activations writes the same thing for weights of types a
// and b (both quantized, and both codebook types or neither, or
// codebook_blocks): a group mixing them then prepares once.
bool same_preparation(DType a, DType b, bool codebook_blocks);

// y[t, r] for all tokens and rows [row_begin, row_end); x: [n_tokens, w.cols],
// y: [n_tokens, w.rows]. `scratch` is what prepare_activations filled.
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end);

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
void softmax(float* x, int64_t n);
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n);
void swiglu(float* out, const float* gate, const float* up, int64_t n);
// kernels.h codebook_least_error: x86/codebook_search_avx2.cc.
int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err);
// KV cache rows (kernels.h convert_to_f16, quantize_row_q8_0): x86/kv_rows_avx2.cc.
void convert_to_f16(const float* x, int64_t n, uint16_t* out);
void quantize_row_q8_0(const float* x, int64_t n, void* out);
void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
// Compact-cache attention (kernels.h): x86/attention_cache_avx2.cc.
void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out);
void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out);
// attention_query_group (kernels.h) on the AVX2 path.
void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out);

// Prefill attention (kernels.h attention_tokens) for head_dim % 8 == 0:
// x86/attention_tokens_avx2.cc.
bool attention_tokens_supports(int64_t head_dim);
size_t attention_tokens_scratch_floats(int64_t head_dim);
void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride);

// Elements [kv.first, kv.first + head_dim) of one cache row (f32, f16 or
// q8_0) as f32 into buf: the prefill attention kernels' row decoder
// (attention_tiles.h DecodeRowFn; attention_tokens_avx2.cc defines it).
void attention_decode_row(const KvHead& kv, const uint8_t* row, int64_t head_dim, float* buf);

}  // namespace llmpack::kernels::avx2
