// AVX2 matmul for float weights (F32, F16 via F16C, BF16 via a shift).
// A tile computes R rows x T tokens with R*T accumulators held in registers,
// so each weight vector loaded (and converted) is used T times and each
// activation vector R times. Decode (T = 1) still gets 4 independent
// accumulators from the 4 rows, which hides the FMA latency.
// (No core/half.h here: its inline functions compiled with AVX flags could
// be the copy the linker keeps for scalar callers.)
#include <cstring>

#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

struct F32Weights {
  using Elem = float;
  static __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
  static float at(const float* p) { return *p; }
};

struct F16Weights {
  using Elem = uint16_t;
  static __m256 load8(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static float at(const uint16_t* p) { return _cvtsh_ss(*p); }
};

struct BF16Weights {
  using Elem = uint16_t;
  static __m256 load8(const uint16_t* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float at(const uint16_t* p) {
    const uint32_t bits = static_cast<uint32_t>(*p) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
};

// y[t * ld_y + r] = w_r . x_t for r < R, t < T. w: R rows, ld_w elements apart;
// x: T rows of `cols` floats.
template <class W, int R, int T>
inline void tile(const typename W::Elem* w, int64_t ld_w, const float* x, int64_t cols,
                 float* y, int64_t ld_y) {
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r)
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    __m256 xv[T];
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * cols + c);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = W::load8(w + r * ld_w + c);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) {
      float s = hsum(acc[r][t]);
      for (int64_t cc = c; cc < cols; ++cc) s += W::at(w + r * ld_w + cc) * x[t * cols + cc];
      y[t * ld_y + r] = s;
    }
  }
}

template <class W, int T>
void rows_for_tokens(const typename W::Elem* w, const WeightMatrix& m, const float* x,
                     float* y, int64_t row_begin, int64_t row_end) {
  int64_t r = row_begin;
  for (; r + 4 <= row_end; r += 4) tile<W, 4, T>(w + r * m.cols, m.cols, x, m.cols, y + r, m.rows);
  for (; r < row_end; ++r) tile<W, 1, T>(w + r * m.cols, m.cols, x, m.cols, y + r, m.rows);
}

template <class W>
void matmul_typed(const WeightMatrix& m, const float* x, int64_t n_tokens, float* y,
                  int64_t row_begin, int64_t row_end) {
  const auto* w = static_cast<const typename W::Elem*>(m.data);
  // Blocks of 16 rows keep their weights in L1/L2 while every token tile passes.
  constexpr int64_t kRowBlock = 16;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowBlock) {
    const int64_t r1 = r0 + kRowBlock < row_end ? r0 + kRowBlock : row_end;
    int64_t t = 0;
    for (; t + 3 <= n_tokens; t += 3)
      rows_for_tokens<W, 3>(w, m, x + t * m.cols, y + t * m.rows, r0, r1);
    if (n_tokens - t == 2) rows_for_tokens<W, 2>(w, m, x + t * m.cols, y + t * m.rows, r0, r1);
    if (n_tokens - t == 1) rows_for_tokens<W, 1>(w, m, x + t * m.cols, y + t * m.rows, r0, r1);
  }
}

}  // namespace

void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end) {
  switch (w.dtype) {
    case DType::kF32:
      matmul_typed<F32Weights>(w, x, n_tokens, y, row_begin, row_end);
      return;
    case DType::kF16:
      matmul_typed<F16Weights>(w, x, n_tokens, y, row_begin, row_end);
      return;
    case DType::kBF16:
      matmul_typed<BF16Weights>(w, x, n_tokens, y, row_begin, row_end);
      return;
    default:
      return;
  }
}

}  // namespace llmpack::kernels::avx2
