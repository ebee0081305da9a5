// The compute kernels of the forward pass. Each has a scalar reference (the
// truth) in kernels/reference/ and SIMD paths (kernels/x86/ on x86-64,
// kernels/arm/ on aarch64) chosen at run time from the CPU's features;
// LLMPACK_FORCE_SCALAR or set_kernel_path() forces a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/dtype.h"
#include "core/thread_pool.h"

namespace llmpack::kernels {

// kNeon: aarch64's Advanced SIMD (kernels/arm/neon.h); prefill attention
// goes one query at a time on that path (no tiles of queries). kNeonDotprod: the same, with the block types'
// products built with the dot-product extension (sdot), on CPUs that have it. kNeonI8mm: kNeonDotprod
// with the prefill of block types on the int8 matrix multiply (smmla, FEAT_I8MM), on CPUs that have both;
// never the default (active_kernel_path picks kNeonDotprod there): set it to measure it.
// kAvxVnni: the AVX2 path with its prefill of the block types on AVX-VNNI (vpdpbusd on 256-bit
// vectors; kernels/x86/avx_vnni.h), on CPUs that have it: the default of those without AVX-512
// (Intel Alder Lake and later client cores).
enum class KernelPath { kScalar, kAvx2, kAvx512, kNeon, kNeonDotprod, kNeonI8mm, kAvxVnni };
// The path in use (the best the CPU supports unless forced).
KernelPath active_kernel_path();
// Forces a path (tests compare each path with the scalar one). Returns false
// when the CPU cannot run it.
bool set_kernel_path(KernelPath path);
bool cpu_supports(KernelPath path);
std::string_view kernel_path_name(KernelPath path);

// Decode (1 to 3 tokens) of the quantized types on the AVX-512 path (Q4_0,
// Q8_0, Q4_K, Q6_K and the other block types; the codebook types where the
// CPU has VBMI): its own kernels (kOn) or the AVX2 ones (kOff). kAuto, the
// default, takes the AVX2 ones for the block types on CPUs that run 512-bit
// instructions as two 256-bit halves (AMD family 19h, Zen 4): there they
// decoded 1.5-2x faster end to end, while prefill is faster with AVX-512
// (docs/PERFORMANCE.md section 18); the codebook types' VBMI kernel runs
// wherever the CPU has VBMI, Zen 4 included, where models of those types
// decoded 1.3-1.9x faster with it than with the AVX2 register kernel
// (section 82). Prefill and the other paths do not depend on it.
enum class Avx512Decode { kAuto, kOn, kOff };
void set_avx512_decode(Avx512Decode mode);
// Whether decode of the block types on the AVX-512 path runs the AVX-512 kernels now.
bool avx512_decode_in_use();
// Whether decode of the codebook types on the AVX-512 path runs the VBMI
// kernel now (where the CPU has VBMI): kOn or kAuto.
bool avx512_codebook_decode_in_use();
// Whether this CPU executes 512-bit vector instructions as two 256-bit halves.
bool cpu_splits_512_bit_vectors();

// How many bytes ahead of where it reads one-token decode of long float rows
// (F16, BF16, F32 rows over 2 KiB, 8 rows side by side) prefetches each row;
// 0: no software prefetch. The best distance differs by CPU, so the default
// (set_float_decode_prefetch(kFloatDecodePrefetchAuto)) is
// cpu_float_decode_prefetch(): 1 KiB on AMD family 1Ah (Zen 5), where it read
// 1.31x faster end to end than none (1B F16 decode; 4 KiB was slower than
// none), and none elsewhere (on Zen 3 none read 1.01-1.17x faster than 4 KiB;
// docs/PERFORMANCE.md sections 14 and 19). Short float rows and the quantized
// types keep their own fixed prefetch.
constexpr int64_t kFloatDecodePrefetchAuto = -1;
void set_float_decode_prefetch(int64_t bytes);
int64_t float_decode_prefetch();
int64_t cpu_float_decode_prefetch();

// A row-major weight matrix of `rows` output features x `cols` input
// features, stored as `rows` rows of row_bytes(dtype, cols) bytes each.
struct WeightMatrix {
  DType dtype = DType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  const void* data = nullptr;
};

// Whether matmul supports weights of this type.
bool matmul_supports(DType dtype);

// The layout a loader should give a matrix of this type: Q5_0 and Q5_1 are
// regrouped (DType::kQ5_0x8, kQ5_1x8, kernels/grouped_blocks.h: the same
// bytes a row, rearranged) where decode runs the AVX2 kernels (the AVX2 and
// AVX-VNNI paths; the AVX-512 one when avx512_decode_in_use() is false), which read the
// grouped layout 1.6-1.9x faster (docs/PERFORMANCE.md section 31); every
// other type, path or setting keeps the stored layout. Every path multiplies
// both layouts.
DType load_layout(DType stored);
// Switches the regrouping of load_layout on (the default) or off (tests and
// `llmpack bench --regroup 0` compare the two).
void set_regroup_at_load(bool on);

// Whether `path` multiplies weights of this type with kernels of its own
// (which quantize the activations to int8 blocks for the block types); false:
// on that path the scalar reference multiplies them (and always for kScalar).
bool simd_matmul_takes(KernelPath path, DType dtype);

// From this many tokens the avx512 path multiplies the codebook types
// (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) on the block types'
// packed prefill GEMM, with activations quantized as theirs are (int8, a
// scale per 32); with fewer tokens, and on the avx2 and avx_vnni paths, the
// x86 codebook kernels read activations with a scale per 256
// (docs/PERFORMANCE.md section 84).
constexpr int64_t kCodebookPackedMinTokens = 17;

// Scratch bytes matmul needs for n_tokens rows of `cols` activations (for
// example to quantize activations); callers allocate it once at load (P6).
// A buffer sized for n_tokens also serves every call with fewer tokens.
size_t matmul_scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens);

// y[t, r] = sum_c w[r, c] * x[t, c] for t < n_tokens, r < w.rows.
// x: [n_tokens, w.cols] f32 contiguous; y: [n_tokens, w.rows] f32 contiguous.
// Splits rows (and token tiles) over the pool; allocates nothing: the prefill
// kernels keep their packed weights and block sums on the stack of each
// thread that runs them, the caller's included (up to about 100 KiB, and 6 KiB
// (AVX2) or 12 KiB (AVX-512) more while a grouped Q5 panel is ungrouped; every
// platform's default thread stack holds that, musl's 128 KiB only just).
void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
            void* scratch, ThreadPool& pool);

// One product of a matmul_group: y[t, r] = w[r] . x[t], y: [n_tokens, w.rows].
struct MatmulOutput {
  WeightMatrix w;
  float* y = nullptr;
};
constexpr size_t kMaxGroup = 4;

// Several matrices over the same activations (q, k and v; gate and up): the
// same results as one matmul per matrix, but the activations are prepared once
// and all the matrices' rows are split over the pool in one call (a decode
// token makes 3 fewer pool calls per layer). All w.cols must be equal, and
// scratch must hold matmul_scratch_bytes of every matrix; groups larger than
// kMaxGroup (or that the SIMD path does not take) run one matmul per matrix.
void matmul_group(std::span<const MatmulOutput> outputs, const float* x, int64_t n_tokens,
                  void* scratch, ThreadPool& pool);

// Row r of w as floats (embedding lookup): out[w.cols].
void dequantize_row(const WeightMatrix& w, int64_t r, float* out);

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i], i < n. out may alias x.
void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps);

// Rotary embedding of one head vector `x[head_dim]` at position `pos`, over
// its first `rot_dim` dims, theta_i = pos * base^(-2i/rot_dim).
// kAdjacentPairs rotates (x[2i], x[2i+1]) (llama2.c, GGUF llama);
// kHalves rotates (x[i], x[i + rot_dim/2]) (HF rotate_half, NEOX, qwen).
// `inv_freq[rot_dim/2]` holds base^(-2i/rot_dim) (possibly scaled, llama3).
enum class RopeStyle { kAdjacentPairs, kHalves };
void rope(float* x, int64_t head_dim, int64_t rot_dim, int64_t pos, const float* inv_freq,
          RopeStyle style);

// In-place softmax over x[n] (max-subtracted).
void softmax(float* x, int64_t n);

// A sampler's unnormalized softmax at a temperature, over a vocabulary:
// m = max_i(x[i] * scale) and out[i] = exp(x[i] * scale - m), each product
// rounded to float before the subtraction (so the largest weight is exactly
// 1, and m equals the sampler's own scaled logits' maximum). A weight whose
// exponent is below kExpWeightFloor (e^-87, beneath float's normal range;
// -inf inputs among them) is 0. Returns m and the sum of out, added in
// double. x holds no NaN and scale is finite and > 0; m is -inf when every
// x[i] is -inf, and when m is +inf (an infinite logit) out and sum are
// unspecified: the caller weighs those by hand.
constexpr float kExpWeightFloor = -87.0f;
struct ExpWeights {
  float max = 0.0f;
  double sum = 0.0;
};
ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n);

// The export's codebook search (kernels/quantize_codebook.cc): which of n
// candidate codebook entries fits one group of dim (4 or 8) targets t, with
// weights w, at scale s. Entry c's error is the sum over j = 0, 1, ..,
// dim - 1, added in that order, of w[j] * r * r with r = t[j] - s *
// levels[code(c, j)], every product and difference rounded to float, where
// code(c, j) = lane_codes[(c / 8) * stride + 8 * j + c % 8] (< 8): the
// candidates in blocks of 8, stride bytes apart (>= 8 dim), each element's 8
// codes side by side, the last block padded. Returns the first c of least error, its error in *err; 0 and
// infinity where no error is below infinity (NaN targets). The same bits on
// every path, so an export writes the same bytes on every machine.
struct CodebookCandidates {
  const float* levels;        // [8], the codebook's levels (padded)
  const uint8_t* lane_codes;  // block b's [dim][8] codes at lane_codes + b * stride
  int stride;
  int n;                      // >= 1
  int dim;                    // 4 or 8
};
int codebook_least_error(const CodebookCandidates& c, const float* t, const float* w, float s, float* err);

// out[i] = silu(gate[i]) * up[i]. out may alias gate.
void swiglu(float* out, const float* gate, const float* up, int64_t n);

// Attention of one query head over n_ctx cached positions (causal masking is
// the caller's choice of n_ctx). q[head_dim]; key row j at k + j * kv_stride,
// value row j at v + j * kv_stride (f32 cache); scores[n_ctx] scratch;
// out[head_dim] = sum_j softmax(q.k_j * scale)_j v_j.
void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out);

// attention_head over a KV cache stored in a compact element type, read in
// place (no row is converted to f32 in bulk). Rows are addressed in BYTES:
// key row j starts at (const uint8_t*)k + j * row_stride_bytes, value row j
// at (const uint8_t*)v + j * row_stride_bytes; row_stride_bytes is even.
// q[head_dim] f32, scores[n_ctx] scratch, out[head_dim]. Accuracy: as
// attention_head on the dequantized rows (values are exact in f32).
//
// f16: each row holds head_dim IEEE binary16 values (any head_dim >= 1).
void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out);

// q8_0: each row is a run of GGUF BlockQ8_0 (kernels/quant_blocks.h: an f16
// scale d and 32 int8 q, value = d * q), as KvCache stores a row of kv_dim
// elements; the head is elements [first, first + head_dim) of that run,
// counted from the row's first block. `first` need not be a multiple of 32
// (a block may straddle two heads) and the row's last block may be short:
// only elements inside the head are read. Fastest when first and head_dim
// are multiples of 32 (the head is whole blocks).
void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out);

// ---- Writing KV cache rows in a compact element type -------------------------

// out[n] = x[n] as IEEE binary16, rounded to nearest even (overflow to
// infinity; a NaN stays a NaN). Every path gives the reference's bits for
// every non-NaN input.
void convert_to_f16(const float* x, int64_t n, uint16_t* out);

// x[n] as ceil(n / 32) BlockQ8_0 (quant_blocks.h): block b takes elements
// [32b, 32b + 32), its scale d = max|x| / 127 (stored as f16) and q = x / d
// rounded to nearest even, clamped to [-127, 127] (all 0 when d is 0). A short
// last block is scaled by its own elements and padded with q = 0: the layout
// KvCache stores and attention_head_q8_0 reads. Every path gives the
// reference's bytes for finite inputs.
void quantize_row_q8_0(const float* x, int64_t n, void* out);

// ---- Prefill attention: many queries per pass over the cache ----------------

enum class CacheElem { kF32, kF16, kQ8_0 };

// One kv head in a KV cache whose rows are row_stride_bytes apart (k and v
// point at row 0 of the keys and of the values). f32 and f16: the head is
// elements [first, first + head_dim) of each row; q8_0: as attention_head_q8_0.
struct KvHead {
  CacheElem elem = CacheElem::kF32;
  const void* k = nullptr;
  const void* v = nullptr;
  int64_t row_stride_bytes = 0;
  int64_t first = 0;
};

// One query over n_ctx positions of a kv head (decode): attention_head,
// attention_head_f16 or attention_head_q8_0 by the cache's element type.
// scores[n_ctx] scratch; out[head_dim].
void attention_query(const float* q, const KvHead& kv, int64_t n_ctx, int64_t head_dim, float scale,
                     float* scores, float* out);

// n_queries queries that share one kv head (decode of a grouped-query
// model): query g at q + g * head_dim, its output at out + g * head_dim,
// scores[n_queries * n_ctx] scratch. Each result equals attention_query's for
// that query; the SIMD path reads the kv head's rows from memory once for the
// group instead of once per query.
void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out);

// Causal attention of n_tokens consecutive tokens over one kv head, for
// prefill. Token t sits at position start_pos + t and attends to positions
// [0, start_pos + t + 1); its `group` query heads that share the kv head
// start at q + t * q_stride (head h at + h * head_dim), and their outputs go
// to out + t * out_stride (+ h * head_dim). Results equal attention_head (or
// its f16 / q8_0 form) per query to float rounding; the SIMD path reads each
// key and value row once per tile of queries instead of once per query.
// scratch: attention_tokens_scratch_floats(head_dim, max_ctx) floats per
// thread, max_ctx the most positions a query sees (start_pos + n_tokens).
void attention_tokens(const float* q, int64_t q_stride, int64_t n_tokens, int64_t group, int64_t start_pos,
                      const KvHead& kv, int64_t head_dim, float scale, float* scratch, float* out,
                      int64_t out_stride);
size_t attention_tokens_scratch_floats(int64_t head_dim, int64_t max_ctx);

}  // namespace llmpack::kernels
