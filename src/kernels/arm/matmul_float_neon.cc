// F32 / F16 / BF16 weights on NEON, in tiles of up to 4 rows x 4 tokens:
// each step loads a few weights of every row (widened to f32: F16 by the base
// ISA's fcvtl, BF16 by a 16-bit shift) and the same columns of every token
// once, and multiplies every row with every token into its own accumulator of
// 4 lanes (partial sums along the row, added up at the end). A full 4 x 4
// tile takes 4 + 4 vector loads (and 4 widenings) per 16 FMAs, where one row
// against 4 tokens took 2 + 8 per 8, so the FMAs set the pace and a
// widening serves 4 tokens. Decode (1 token) runs 4 rows side by side, two
// accumulators a row: 8 FMA chains in flight instead of 2.
// Prefill goes over the rows a block of tokens at a time (tokens_per_block),
// so the block's activations stay in L2 while every row passes, and a row
// group's 4 rows stay in L1 while the block's token tiles pass.
#include <algorithm>
#include <cstring>

#include "core/half.h"
#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"

namespace llmpack::kernels::neon {
namespace {

constexpr int kRowTile = 4;

// Elements [c, c + 8) of a row as two f32 vectors, [c, c + 4) as one, and
// element c alone (column tails).
struct LoadF32 {
  static void eight(const uint8_t* row, int64_t c, float32x4_t* lo, float32x4_t* hi) {
    *lo = four(row, c);
    *hi = four(row, c + 4);
  }
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
  static void eight(const uint8_t* row, int64_t c, float32x4_t* lo, float32x4_t* hi) {
    const float16x8_t h = vreinterpretq_f16_u16(vld1q_u16(reinterpret_cast<const uint16_t*>(row) + c));
    *lo = vcvt_f32_f16(vget_low_f16(h));
    *hi = vcvt_high_f32_f16(h);
  }
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
  static void eight(const uint8_t* row, int64_t c, float32x4_t* lo, float32x4_t* hi) {
    const uint16x8_t h = vld1q_u16(reinterpret_cast<const uint16_t*>(row) + c);
    *lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
    *hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
  }
  static float32x4_t four(const uint8_t* row, int64_t c) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(row) + c), 16));
  }
  static float one(const uint8_t* row, int64_t c) {
    uint16_t h;
    std::memcpy(&h, row + 2 * c, 2);
    return bf16_to_f32(h);
  }
};

// out[i][t] = row_i . x_t for NR rows (row i at rows + i * row_stride bytes)
// and NT tokens (x_t at x + t * cols). Tiles of up to 8 row-token pairs
// (decode's 4 x 1, the row and token tails) step 8 columns with a second
// accumulator for the upper 4, twice the FMA chains in flight (decode: 8);
// larger ones step 4 columns with one set (a 4 x 4 tile: 16 accumulators, 4
// weights and 4 activations of the 32 registers). The unrolling goes by
// for_constants so that GCC keeps every accumulator in a register: with
// plain loops over the arrays it stored them to the stack every step.
template <class Load, int NR, int NT>
void float_tile(const uint8_t* rows, int64_t row_stride, int64_t cols, const float* x,
                float (*out)[kTokenTile]) {
  constexpr bool kTwoSets = NR * NT <= 8;
  float32x4_t a[NR][NT], b[NR][NT];
  for_constants<NR>([&]<int I>() {
    for_constants<NT>([&]<int T>() { a[I][T] = b[I][T] = vdupq_n_f32(0.0f); });
  });
  int64_t c = 0;
  if constexpr (kTwoSets) {
    for (; c + 8 <= cols; c += 8) {
      float32x4_t wl[NR], wh[NR];
      for_constants<NR>([&]<int I>() { Load::eight(rows + I * row_stride, c, &wl[I], &wh[I]); });
      for_constants<NT>([&]<int T>() {
        const float32x4_t xl = vld1q_f32(x + T * cols + c), xh = vld1q_f32(x + T * cols + c + 4);
        for_constants<NR>([&]<int I>() {
          a[I][T] = vfmaq_f32(a[I][T], wl[I], xl);
          b[I][T] = vfmaq_f32(b[I][T], wh[I], xh);
        });
      });
    }
  }
  for (; c + 4 <= cols; c += 4) {
    float32x4_t xc[NT];
    for_constants<NT>([&]<int T>() { xc[T] = vld1q_f32(x + T * cols + c); });
    for_constants<NR>([&]<int I>() {
      const float32x4_t w = Load::four(rows + I * row_stride, c);
      for_constants<NT>([&]<int T>() { a[I][T] = vfmaq_f32(a[I][T], w, xc[T]); });
    });
  }
  for_constants<NR>([&]<int I>() {
    for_constants<NT>([&]<int T>() {
      out[I][T] = vaddvq_f32(kTwoSets ? vaddq_f32(a[I][T], b[I][T]) : a[I][T]);
    });
  });
  for (; c < cols; ++c)  // the last cols % 4 columns
    for (int i = 0; i < NR; ++i) {
      const float w = Load::one(rows + i * row_stride, c);
      for (int t = 0; t < NT; ++t) out[i][t] += w * x[t * cols + c];
    }
}

// f.template operator()<NR, NT>() for a tile of nr rows and nt tokens (1..4 each).
template <class F>
void with_tile_shape(int nr, int nt, const F& f) {
  with_tile_tokens(nt, [&]<int NT>() {
    switch (nr) {
      case 1: return f.template operator()<1, NT>();
      case 2: return f.template operator()<2, NT>();
      case 3: return f.template operator()<3, NT>();
      default: return f.template operator()<4, NT>();
    }
  });
}

template <class Load>
void rows_of(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int64_t row_begin,
             int64_t row_end) {
  const int64_t rb = row_bytes(*dtype_info(w.dtype), w.cols);
  const auto* base = static_cast<const uint8_t*>(w.data);
  const int64_t token_block = tokens_per_block(w.cols * static_cast<int64_t>(sizeof(float)));
  for (int64_t tb = 0; tb < n_tokens; tb += token_block) {
    const int64_t te = std::min(n_tokens, tb + token_block);
    for (int64_t r = row_begin; r < row_end; r += kRowTile) {
      const int nr = static_cast<int>(std::min<int64_t>(kRowTile, row_end - r));
      for (int64_t t0 = tb; t0 < te; t0 += kTokenTile) {
        const int nt = static_cast<int>(std::min<int64_t>(kTokenTile, te - t0));
        float out[kRowTile][kTokenTile];
        with_tile_shape(nr, nt, [&]<int NR, int NT>() {
          float_tile<Load, NR, NT>(base + r * rb, rb, w.cols, x + t0 * w.cols, out);
        });
        for (int t = 0; t < nt; ++t)
          for (int i = 0; i < nr; ++i) y[(t0 + t) * w.rows + r + i] = out[i][t];
      }
    }
  }
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
