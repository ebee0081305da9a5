// F32 / F16 / BF16 weights on NEON: each row's elements are widened to f32 8
// at a time (F16 by the base ISA's vcvt_f32_f16, BF16 by a 16-bit shift) and
// multiplied with up to kTokenTile tokens, two 4-lane accumulators per token;
// prefill goes over the rows a block of tokens at a time (tokens_per_block).
#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"

namespace llmpack::kernels::neon {
namespace {

// Elements [c, c + 4) of a row as floats, and element c alone (tails).
struct LoadF32 {
  static float32x4_t four(const uint8_t* row, int64_t c) {
    return vld1q_f32(reinterpret_cast<const float*>(row) + c);
  }
  static float one(const uint8_t* row, int64_t c) {
    float v;
    std::memcpy(&v, row + 4 * c, 4);
    return v;
  }
};
struct LoadF16 {
  static float32x4_t four(const uint8_t* row, int64_t c) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + c)));
  }
  static float one(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return half_to_float(h);
  }
};
struct LoadBF16 {
  static float32x4_t four(const uint8_t* row, int64_t c) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + c), 16));
  }
  static float one(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return bf16_to_f32(h);
  }
};

// out[t] = row . x_t for NT tokens (x_t at x + t * cols).
template <class Load, int NT>
void float_row(const uint8_t* row, int64_t cols, const float* x, float* out) {
  float32x4_t a[NT], b[NT];
  for (int t = 0; t < NT; ++t) a[t] = b[t] = vdupq_n_f32(0.0f);
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    const float32x4_t w0 = Load::four(row, c), w1 = Load::four(row, c + 4);
    for (int t = 0; t < NT; ++t) {
      a[t] = vfmaq_f32(a[t], w0, vld1q_f32(x + t * cols + c));
      b[t] = vfmaq_f32(b[t], w1, vld1q_f32(x + t * cols + c + 4));
    }
  }
  for (int t = 0; t < NT; ++t) {
    float s = vaddvq_f32(vaddq_f32(a[t], b[t]));
    for (int64_t k = c; k < cols; ++k) s += Load::one(row, k) * x[t * cols + k];
    out[t] = s;
  }
}

template <class Load>
void rows_of(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t row_begin,
             int64_t row_end) {
  const int64_t rb = row_bytes(*dtype_info(w.dtype), w.cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  rows_in_token_blocks(n_tokens, w.cols * static_cast<int64_t>(sizeof(float)), row_begin, row_end, y, w.rows,
                       [&]<int NT>(int64_t r, int64_t t0, float* out) {
                         float_row<Load, NT>(base + r * rb, w.cols, x + t0 * w.cols, out);
                       });
}

}  // namespace

void float_rows(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  switch (w.dtype) {
    case DType::kF32:
      return rows_of<LoadF32>(w, x, n_tokens, y, row_begin, row_end);
    case DType::kF16:
      return rows_of<LoadF16>(w, x, n_tokens, y, row_begin, row_end);
    case DType::kBF16:
      return rows_of<LoadBF16>(w, x, n_tokens, y, row_begin, row_end);
    default:
      return;  // supports() admits only the float types above here
  }
}

}  // namespace llmpack::kernels::neon
