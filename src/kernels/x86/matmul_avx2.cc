// AVX2 matmul entry: routes each weight type to its kernel family.
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx2_internal.h"

namespace llmpack::kernels::avx2 {

bool supports(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      return true;
    default:
      return false;
  }
}

size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) { return 0; }

void prepare_activations(DType dtype, const float* x, int64_t cols, int64_t t_begin,
                         int64_t t_end, void* scratch) {}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 const void* scratch, int64_t row_begin, int64_t row_end) {
  switch (w.dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
      matmul_rows_float(w, x, n_tokens, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace llmpack::kernels::avx2
