// Block-quantized weights on base AArch64 NEON: the activations are quantized
// once per matmul to int8 blocks of 32 (ActBlock); the row kernels
// (arm/quant_rows_neon.h) unpack each weight block to int8 once and multiply
// it with up to kTokenTile tokens' blocks by widening int8 products
// (vmull_s8 / vmlal_high_s8) summed in int16 pairs, then int32; the float
// scales multiply the int32 sums per 32 elements. CPUs with the dot-product
// extension take matmul_quant_dotprod_neon.cc's copy instead.
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/arm/widen_dot_neon.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::neon {
namespace {

// The 32 floats of x as an ActBlock.
void quantize_block(const float* x, ActBlock* out) {
  int8x16_t q0, q1;
  const float d = quantize_32(x, q0, q1);
  vst1q_s8(out->q, q0);
  vst1q_s8(out->q + 16, q1);
  out->d = d;
  out->qsum_lo = vaddlvq_s8(q0);
  out->qsum = out->qsum_lo + vaddlvq_s8(q1);
}

}  // namespace
}  // namespace llmpack::kernels::neon

#include "kernels/arm/quant_rows_neon.h"

namespace llmpack::kernels::neon {

void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t n_tokens, int64_t t_begin,
                         int64_t t_end, void* scratch) {
  if (scratch_bytes(dtype, cols, n_tokens) == 0) return;
  auto* act = static_cast<ActBlock*>(scratch);
  const int64_t n_blocks = cols / kQK;
  for (int64_t t = t_begin; t < t_end; ++t) {
    float* runs = activation_runs(act, n_tokens, n_blocks, t);
    float *dq = runs + n_blocks, *halves = runs + 2 * n_blocks;
    for (int64_t b = 0; b < n_blocks; ++b) {
      ActBlock& a = act[t * n_blocks + b];
      quantize_block(x + t * cols + b * kQK, &a);
      runs[b] = a.d;
      dq[b] = a.d * static_cast<float>(a.qsum);
      halves[2 * b] = a.d * static_cast<float>(a.qsum_lo);
      halves[2 * b + 1] = a.d * static_cast<float>(a.qsum - a.qsum_lo);
    }
  }
}

namespace {

// The 256-element super-block types (Q2_K to Q6_K, IQ4_XS) go 2 tokens a pass
// over a row here, the 32-element ones 4. With the widening multiplies a
// 3- or 4-token super-block kernel needs more than the 32 vector registers
// once GCC 12 has scheduled it (Q4_K's 4-token loop: 967 instructions a
// super-block, 137 of them stores to the stack and 202 loads back), so that
// per token it costs 1.2-1.7x the 2-token one in llvm-mca's Cortex-A55,
// Cortex-A57 and Apple M1 models (docs/PERFORMANCE.md section 35); the
// sdot kernels need fewer registers and keep 4.
int widening_tile_tokens(DType dtype) {
  const auto info = dtype_info(dtype);
  return info && info->block_elems == kQKK ? 2 : kTokenTile;
}

}  // namespace

void quant_rows(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  rows_of_quant(w, act, n_tokens, y, row_begin, row_end, widening_tile_tokens(w.dtype));
}

}  // namespace llmpack::kernels::neon
