// AVX2 matmul entry: routes each weight type to its kernel family.
#include <algorithm>

#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_internal.h"

namespace llmpack::kernels::avx2 {
namespace {

bool is_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

// Every block type has decode kernels and a packed prefill (the packed path's
// list), except the codebook types, whose one kernel serves every token count.
bool is_quant(DType dtype) { return packed_supports(dtype) || iq_supports(dtype); }

}  // namespace

bool supports(DType dtype) { return is_float(dtype) || is_quant(dtype); }

// Room for the paired copy of up to kPackedMinTokens - 1 tokens is always
// counted, so a buffer sized for n tokens also serves every call with fewer.
// A codebook type's preparation writes its activations with a scale per 256
// (ActSuper) after room for all of that, so that a group mixing codebook and
// block types can hold both preparations in one buffer.
size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) {
  if (!is_quant(dtype) || cols <= 0 || n_tokens <= 0) return 0;
  if (iq_supports(dtype))
    return static_cast<size_t>(super_acts_offset(n_tokens, cols / 32) + n_tokens * (cols / 256) * sizeof(ActSuper));
  const auto n_sub = static_cast<size_t>(cols / 32);
  const auto paired_tokens = static_cast<size_t>(std::min(n_tokens, kPackedMinTokens - 1));
  return static_cast<size_t>(n_tokens) * n_sub * (sizeof(ActBlock) + kActFloatsPerBlock * sizeof(float)) +
         paired_tokens * static_cast<size_t>(paired_blocks(cols / 32)) * kPairedBytesPerBlock;
}

void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t n_tokens,
                         int64_t t_begin, int64_t t_end, void* scratch, bool codebook_blocks) {
  if (!is_quant(dtype)) return;
  auto* act = static_cast<ActBlock*>(scratch);
  const int64_t n_sub = cols / 32;
  if (iq_supports(dtype) && !codebook_blocks) {  // the codebook kernels read only the runs of 256
    auto* super = const_cast<ActSuper*>(super_acts(act, n_tokens, n_sub));
    for (int64_t t = t_begin; t < t_end; ++t)
      quantize_activations_super(x + t * cols, cols, n_tokens >= kIqRegisterDecodeBelow, super + t * (cols / 256));
    return;
  }
  for (int64_t t = t_begin; t < t_end; ++t) {
    quantize_activations(x + t * cols, cols, act + t * n_sub);
    float* f = act_floats(act, n_tokens, n_sub) + t * kActFloatsPerBlock * n_sub;
    for (int64_t b = 0; b < n_sub; ++b) {
      const ActBlock& a = act[t * n_sub + b];
      f[b] = a.d;
      f[n_sub + b] = a.d * static_cast<float>(a.qsum);
      f[2 * n_sub + 2 * b] = a.d * static_cast<float>(a.qsum_lo);
      f[2 * n_sub + 2 * b + 1] = a.d * static_cast<float>(a.qsum - a.qsum_lo);
    }
    if (n_tokens < kPackedMinTokens) pair_activations(act + t * n_sub, f, n_sub, paired_region(act, n_tokens, n_sub, t));
  }
}

bool same_preparation(DType a, DType b, bool codebook_blocks) {
  return is_quant(a) && is_quant(b) && (codebook_blocks || iq_supports(a) == iq_supports(b));
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end) {
  if (is_float(w.dtype)) return matmul_rows_float(w, x, n_tokens, y, row_begin, row_end);
  if (iq_supports(w.dtype))
    return matmul_rows_iq(w, static_cast<const ActBlock*>(scratch), n_tokens, y, row_begin, row_end);
  if (is_quant(w.dtype))
    return matmul_rows_quant(w, static_cast<const ActBlock*>(scratch), n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::avx2
