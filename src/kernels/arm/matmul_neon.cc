// The NEON matmul entry points: which weight types the path takes, its
// scratch, and the split between the float and the quantized row kernels.
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::neon {
namespace {

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

}  // namespace

bool supports(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16:
    case DType::kQ8_0:
    case DType::kQ4_0:
    case DType::kQ4_1:
    case DType::kQ5_0:
    case DType::kQ5_1:
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

size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) {
  if (!supports(dtype) || is_float(dtype) || cols <= 0 || n_tokens <= 0) return 0;
  return static_cast<size_t>(n_tokens * (cols / kQK)) * sizeof(ActBlock);
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, const void* scratch,
                 int64_t row_begin, int64_t row_end, bool dotprod) {
  if (is_float(w.dtype)) return float_rows(w, x, n_tokens, y, row_begin, row_end);
  const auto* act = static_cast<const ActBlock*>(scratch);
  if (dotprod) return quant_rows_dotprod(w, act, n_tokens, y, row_begin, row_end);
  quant_rows(w, act, n_tokens, y, row_begin, row_end);
}

}  // namespace llmpack::kernels::neon
