// The NEON matmul entry points: which weight types the path takes, its
// scratch, and the split between the float and the quantized row kernels.
#include <algorithm>
#include <iterator>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/iq_blocks.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels::neon {
namespace {

bool is_float(DType dtype) { return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16; }

}  // namespace

// Every type quant_row (arm/quant_rows_neon.h) and float_rows take; iq_rows
// takes the codebook types.
constexpr DType kNeonTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ8_0,   DType::kQ4_0,
                                DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ2_K,   DType::kQ3_K,
                                DType::kQ4_K, DType::kQ5_K, DType::kQ6_K, DType::kIQ4_NL, DType::kIQ4_XS};

bool supports(DType dtype) {
  return std::find(std::begin(kNeonTypes), std::end(kNeonTypes), dtype) != std::end(kNeonTypes) ||
         is_codebook_type(dtype);
}

size_t scratch_bytes(DType dtype, int64_t cols, int64_t n_tokens) {
  if (!supports(dtype) || is_float(dtype) || cols <= 0 || n_tokens <= 0) return 0;
  return activation_scratch_bytes(n_tokens, cols / kQK);
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, const void* scratch,
                 int64_t row_begin, int64_t row_end, Int8Kernels int8) {
  if (is_float(w.dtype)) return float_rows(w, x, n_tokens, y, row_begin, row_end);
  const auto* act = static_cast<const ActBlock*>(scratch);
  if (is_codebook_type(w.dtype)) {
    if (int8 == Int8Kernels::kWidening) return iq_rows(w, act, n_tokens, y, row_begin, row_end);
    return iq_rows_dotprod(w, act, n_tokens, y, row_begin, row_end);  // i8mm CPUs have sdot too
  }
  switch (int8) {
    case Int8Kernels::kI8mm:
      return quant_rows_i8mm(w, act, n_tokens, y, row_begin, row_end);
    case Int8Kernels::kDotprod:
      return quant_rows_dotprod(w, act, n_tokens, y, row_begin, row_end);
    case Int8Kernels::kWidening:
      return quant_rows(w, act, n_tokens, y, row_begin, row_end);
  }
}

}  // namespace llmpack::kernels::neon
