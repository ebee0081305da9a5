// AVX2 prefill GEMM (several tokens at once) of the block types: the
// vpmaddubsw build of packed_gemm_avx2.h, which has the kernels and their
// description. The AVX-VNNI build is matmul_packed_avxvnni.cc.
#define LLMPACK_PACKED_VNNI 0
#include "kernels/x86/packed_gemm_avx2.h"

namespace llmpack::kernels::avx2 {

bool packed_supports(DType dtype) {
  switch (dtype) {
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
    case DType::kQ5_0x8:
    case DType::kQ5_1x8:
    case DType::kQ8_0:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
      return true;
    default:
      return false;
  }
}

void matmul_rows_packed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                        int64_t row_begin, int64_t row_end) {
  packed_rows(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::avx2
