// NEON (AArch64 Advanced SIMD) kernels: the SIMD path of 64-bit ARM CPUs
// (phones, boards, Apple silicon, Graviton). Advanced SIMD is part of the
// base AArch64 ISA, so these files need no extra compiler flags and every
// aarch64 CPU runs them. Defined in arm/*_neon.cc, which build only for
// aarch64 targets (elsewhere no_arm/neon_path_absent.cc says the path takes
// nothing); call them only when cpu_supports(KernelPath::kNeon).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dtype.h"
#include "kernels/kernels.h"

namespace llmpack::kernels::neon {

// Weight types with a NEON matmul: F32, F16, BF16, every block type of
// kernels/quant_blocks.h (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to Q6_K, IQ4_NL,
// IQ4_XS) and the codebook types of kernels/iq_blocks.h.
bool supports(DType dtype);

// Scratch for n_tokens rows of `cols` activations quantized to int8 blocks of
// 32 (0 for float weights): ActBlock [n_tokens][cols / 32], then the blocks'
// scales as float [n_tokens][cols / 32] (neon_internal.h).
size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens);

// Quantizes tokens [t_begin, t_end) of x [n_tokens, cols] into scratch (one
// preparation serves every quantized type; nothing for float weights).
void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t n_tokens, int64_t t_begin,
                         int64_t t_end, void* scratch);

// Which int8 kernels the block types run: widening multiplies (every
// aarch64 CPU), the dot-product extension (sdot; only where
// cpu_supports(KernelPath::kNeonDotprod)), or that plus the int8 matrix
// multiply for prefill (smmla; only where cpu_supports(KernelPath::kNeonI8mm)).
enum class Int8Kernels { kWidening, kDotprod, kI8mm };

// y[t, r] for every token and rows [row_begin, row_end); x: [n_tokens, w.cols],
// y: [n_tokens, w.rows]; scratch: what prepare_activations filled.
void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, const void* scratch,
                 int64_t row_begin, int64_t row_end, Int8Kernels int8);

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);
// rope's rotation of one head by a position's cos/sin table (kernels/rope.cc):
// pairs (x[2i], x[2i+1]) when adjacent, else (x[i], x[i + half]); bit-identical
// to the reference.
void rope_rotate(float* x, const float* cos, const float* sin, int64_t half, bool adjacent);
void softmax(float* x, int64_t n);
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n);
void swiglu(float* out, const float* gate, const float* up, int64_t n);
// KV cache rows (kernels.h convert_to_f16, quantize_row_q8_0): arm/kv_rows_neon.cc.
void convert_to_f16(const float* x, int64_t n, uint16_t* out);
void quantize_row_q8_0(const float* x, int64_t n, void* out);
// Attention of one query over an f32, f16 or q8_0 cache (kernels.h
// attention_head, attention_head_f16, attention_head_q8_0).
void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride, int64_t n_ctx,
                    int64_t head_dim, float scale, float* scores, float* out);
void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride_bytes,
                        int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);
// kernels.h attention_query_group: each row read and widened once for the
// group (arm/attention_cache_neon.cc).
void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out);

// Prefill attention (kernels.h attention_tokens) by tiles of up to 32
// queries for head_dim % 4 == 0 (attention_tokens_supports); scratch:
// attention_tokens_scratch_floats(head_dim) floats.
bool attention_tokens_supports(int64_t head_dim);
size_t attention_tokens_scratch_floats(int64_t head_dim);
void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride);

// The export's codebook search (kernels.h codebook_least_error): the
// reference's bits, 8 candidates a step (arm/codebook_search_neon.cc).
int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err);

// One cache row's head as f32 (attention_tiles.h DecodeRowFn;
// attention_tokens_neon.cc).
void attention_decode_row(const KvHead& kv, const uint8_t* row, int64_t head_dim, float* buf);

}  // namespace llmpack::kernels::neon
