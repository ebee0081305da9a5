// Scalar reference matmul: each weight row is dequantized a chunk at a time
// into a stack buffer and dotted with the activations in double.
#include <algorithm>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {
namespace {

// Elements dequantized at once: a multiple of every block size (1, 32, 256).
constexpr int64_t kChunk = 256;

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
    case DType::kQ5_0x8:
    case DType::kQ5_1x8:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K:
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kIQ4_NL:
    case DType::kIQ4_XS:
      return true;
    default:
      return is_codebook_type(dtype);
  }
}

void dequantize_elems(DType dtype, const void* src, int64_t n, float* out) {
  switch (dtype) {
    case DType::kF32: {
      const auto* p = static_cast<const float*>(src);
      std::copy(p, p + n, out);
      return;
    }
    case DType::kF16: {
      const auto* p = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = f16_to_f32(p[i]);
      return;
    }
    case DType::kBF16: {
      const auto* p = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      return;
    }
    default:
      if (!dequantize_quant(dtype, src, n, out))
        std::fill(out, out + n, 0.0f);  // callers check supports() first
      return;
  }
}

float dot_row(DType dtype, const void* row, const float* x, int64_t n) {
  const auto info = dtype_info(dtype);
  if (!info) return 0.0f;
  const auto* bytes = static_cast<const uint8_t*>(row);
  float buf[kChunk];
  double acc = 0.0;
  for (int64_t c0 = 0; c0 < n; c0 += kChunk) {
    const int64_t len = std::min(kChunk, n - c0);
    dequantize_elems(dtype, bytes + row_bytes(*info, c0), len, buf);
    for (int64_t i = 0; i < len; ++i) acc += static_cast<double>(buf[i]) * x[c0 + i];
  }
  return static_cast<float>(acc);
}

void matmul_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                 int64_t row_begin, int64_t row_end) {
  const auto info = dtype_info(w.dtype);
  if (!info) return;
  constexpr int64_t kTokenGroup = 8;  // tokens sharing one dequantized chunk
  const int64_t stride = row_bytes(*info, w.cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  float buf[kChunk];
  for (int64_t r = row_begin; r < row_end; ++r) {
    const uint8_t* row = base + r * stride;
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokenGroup) {
      const int64_t nt = std::min(kTokenGroup, n_tokens - t0);
      double acc[kTokenGroup] = {};
      for (int64_t c0 = 0; c0 < w.cols; c0 += kChunk) {
        const int64_t len = std::min(kChunk, w.cols - c0);
        dequantize_elems(w.dtype, row + row_bytes(*info, c0), len, buf);
        for (int64_t t = 0; t < nt; ++t) {
          const float* xt = x + (t0 + t) * w.cols + c0;
          double a = 0.0;
          for (int64_t i = 0; i < len; ++i) a += static_cast<double>(buf[i]) * xt[i];
          acc[t] += a;
        }
      }
      for (int64_t t = 0; t < nt; ++t) y[(t0 + t) * w.rows + r] = static_cast<float>(acc[t]);
    }
  }
}

}  // namespace llmpack::kernels::ref
