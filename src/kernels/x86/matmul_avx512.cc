// AVX-512 matmul entry: routes each weight type to its AVX-512 kernel family,
// where one is written; dispatch falls back to AVX2 for the rest.
#include "kernels/x86/avx512.h"
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {

bool supports(DType dtype, int64_t n_tokens, bool with_decode, bool with_codebook_decode) {
  const bool iq = iq_supports(dtype, n_tokens) && (with_codebook_decode || n_tokens >= avx2::kIqRegisterDecodeBelow);
  return float_supports(dtype, n_tokens) || quant_supports(dtype, n_tokens) || iq ||
         (with_decode && decode_supports(dtype, n_tokens));
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end) {
  if (float_supports(w.dtype, n_tokens)) return avx512::matmul_rows_float(w, x, n_tokens, y, row_begin, row_end);
  const auto* act = static_cast<const avx2::ActBlock*>(scratch);
  if (quant_supports(w.dtype, n_tokens)) return avx512::matmul_rows_quant(w, act, n_tokens, y, row_begin, row_end);
  if (iq_supports(w.dtype, n_tokens)) return avx512::matmul_rows_iq(w, act, n_tokens, y, row_begin, row_end);
  if (decode_supports(w.dtype, n_tokens)) return avx512::matmul_rows_decode(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::avx512
