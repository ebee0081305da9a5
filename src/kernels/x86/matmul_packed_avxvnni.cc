// AVX-VNNI prefill GEMM of the block types: the vpdpbusd build of
// packed_gemm_avx2.h (the kernels and their description are there), and the
// avx_vnni path's entry (x86/avx_vnni.h), which also sends Q8_0 decode to
// x86/matmul_decode_avxvnni.cc.
#define LLMPACK_PACKED_VNNI 1
#include "kernels/x86/packed_gemm_avx2.h"
#include "kernels/x86/avx_vnni.h"

namespace llmpack::kernels::avx_vnni {

bool supports(DType dtype, int64_t n_tokens) {
  if (n_tokens < avx2::kPackedMinTokens) return decode_supports(dtype, n_tokens);
  return avx2::packed_supports(dtype);
}

void matmul_rows(const WeightMatrix& w, const void* scratch, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  if (n_tokens < avx2::kPackedMinTokens) return decode_rows(w, scratch, n_tokens, y, row_begin, row_end);
  avx2::packed_rows(w, static_cast<const avx2::ActBlock*>(scratch), n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::avx_vnni
