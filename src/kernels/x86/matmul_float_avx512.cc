// AVX-512 matmul for float weights (F32, F16 via vcvtph2ps, BF16 via a
// shift), prefill only: decode (few tokens) is bound by memory bandwidth and
// stays on the AVX2 kernels.
//
// Rows are packed kPanelRows at a time, converted to f32 and transposed, into
// panels [c][kPanelRows] on the stack (kChunkCols columns per packing). A tile
// of kPanelRows rows x T tokens then keeps kVecs * T zmm accumulators, and per
// column takes kVecs weight loads and T broadcasts (folded into the FMAs as
// {1to16} memory operands) for kVecs * T FMAs. Column and row tails use
// masked loads and stores, so the weights are never read past a row's end
// and need no scalar tail loop.
// (No core/half.h here: its inline functions compiled with AVX-512 flags
// could be the copy the linker keeps for scalar callers.)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <utility>

#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {
namespace {

// kVecs zmm per panel column (16 rows each), kTokTile tokens per tile:
// kVecs * kTokTile accumulators + kVecs weight registers of the 32.
constexpr int kVecs = 2, kPanelRows = 16 * kVecs, kTokTile = 12;
// Panels packed per column chunk; 2 x 32 rows x 256 columns x 4 bytes = 64 KiB
// of stack. One panel (32 KiB) plus a token tile's activations (12 KiB) fit
// in a 48 KiB L1.
constexpr int kPanels = 2, kChunkCols = 256;
// Fewest tokens for which this path runs (below it rows stream on AVX2).
constexpr int64_t kMinTokens = 4;

inline __mmask16 col_mask(int64_t remaining) {
  return remaining >= 16 ? static_cast<__mmask16>(0xFFFF)
                         : static_cast<__mmask16>((1u << remaining) - 1);
}

// load16(p, m): 16 consecutive weights as f32, lanes outside `m` zero (and
// not read).
struct F32Weights {
  using Elem = float;
  static __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
};

struct F16Weights {
  using Elem = uint16_t;
  static __m512 load16(const uint16_t* p, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};

struct BF16Weights {
  using Elem = uint16_t;
  static __m512 load16(const uint16_t* p, __mmask16 m) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }
};

// In place: v[i] lane j becomes v[j] lane i (i, j < 16).
inline void transpose16x16(__m512* v) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  // After this, 128-bit lane L of u[4k + j] holds column 4L + j of rows 4k..4k+3.
  __m512 u[16];
  for (int k = 0; k < 4; ++k) {
    const __m512* tk = t + 4 * k;
    u[4 * k + 0] = _mm512_shuffle_ps(tk[0], tk[2], 0x44);
    u[4 * k + 1] = _mm512_shuffle_ps(tk[0], tk[2], 0xEE);
    u[4 * k + 2] = _mm512_shuffle_ps(tk[1], tk[3], 0x44);
    u[4 * k + 3] = _mm512_shuffle_ps(tk[1], tk[3], 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    // s01: lanes 0-1 of u[j] and u[4 + j]; s23: lanes 2-3 (likewise for 8, 12).
    const __m512 s01 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x44);
    const __m512 s23 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xEE);
    const __m512 s01b = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x44);
    const __m512 s23b = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xEE);
    v[j] = _mm512_shuffle_f32x4(s01, s01b, 0x88);
    v[4 + j] = _mm512_shuffle_f32x4(s01, s01b, 0xDD);
    v[8 + j] = _mm512_shuffle_f32x4(s23, s23b, 0x88);
    v[12 + j] = _mm512_shuffle_f32x4(s23, s23b, 0xDD);
  }
}

// panel[c * kPanelRows + r] = w[r0 + r, c0 + c] for r < n_rows, c < n_cols;
// 0 for r >= n_rows and for n_cols <= c < (n_cols rounded up to 16).
template <class W>
void pack_panel(const typename W::Elem* w, int64_t ld_w, int64_t r0, int n_rows, int64_t c0,
                int64_t n_cols, float* panel) {
  for (int64_t c = 0; c < n_cols; c += 16) {
    const __mmask16 m = col_mask(n_cols - c);
    for (int g = 0; g < kVecs; ++g) {
      __m512 v[16];
      for (int i = 0; i < 16; ++i) {
        const int r = 16 * g + i;
        v[i] = r < n_rows ? W::load16(w + (r0 + r) * ld_w + c0 + c, m) : _mm512_setzero_ps();
      }
      transpose16x16(v);
      for (int i = 0; i < 16; ++i) _mm512_store_ps(panel + (c + i) * kPanelRows + 16 * g, v[i]);
    }
  }
}

// y[t * ld_y + r] (+)= sum_{c < n_cols} panel[c][r] * x[t * ld_x + c] for
// r < n_rows, t < T.
template <int T>
void panel_tile(const float* panel, int64_t n_cols, const float* x, int64_t ld_x, float* y,
                int64_t ld_y, int n_rows, bool add) {
  static_assert(kVecs == 2, "the accumulators below are written out for two vectors");
  // two named arrays (not acc[T][2]): GCC keeps these in registers
  __m512 lo[T], hi[T];
  #pragma GCC unroll 16
  for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm512_setzero_ps();
  for (int64_t c = 0; c < n_cols; ++c) {
    const __m512 w0 = _mm512_load_ps(panel + c * kPanelRows);
    const __m512 w1 = _mm512_load_ps(panel + c * kPanelRows + 16);
    #pragma GCC unroll 16
    for (int t = 0; t < T; ++t) {
      const __m512 xv = _mm512_set1_ps(x[t * ld_x + c]);
      lo[t] = _mm512_fmadd_ps(w0, xv, lo[t]);
      hi[t] = _mm512_fmadd_ps(w1, xv, hi[t]);
    }
  }
  const __mmask16 m_lo = col_mask(n_rows), m_hi = col_mask(std::max(0, n_rows - 16));
  #pragma GCC unroll 16
  for (int t = 0; t < T; ++t) {
    float* out = y + t * ld_y;
    if (add) {
      lo[t] = _mm512_add_ps(lo[t], _mm512_maskz_loadu_ps(m_lo, out));
      hi[t] = _mm512_add_ps(hi[t], _mm512_maskz_loadu_ps(m_hi, out + 16));
    }
    _mm512_mask_storeu_ps(out, m_lo, lo[t]);
    _mm512_mask_storeu_ps(out + 16, m_hi, hi[t]);
  }
}

using PanelTileFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int,
                             bool);

template <int... Ts>
constexpr auto make_tiles(std::integer_sequence<int, Ts...>) {
  return std::array<PanelTileFn, sizeof...(Ts)>{(Ts == 0 ? nullptr : panel_tile<Ts>)...};
}
// kPanelTiles[T] computes a tile of T tokens, 1 <= T <= kTokTile.
constexpr auto kPanelTiles = make_tiles(std::make_integer_sequence<int, kTokTile + 1>());

template <class W>
void matmul_packed(const WeightMatrix& m, const float* x, int64_t n_tokens, float* y,
                   int64_t row_begin, int64_t row_end) {
  const auto* w = static_cast<const typename W::Elem*>(m.data);
  alignas(64) float panels[kPanels * kPanelRows * kChunkCols];
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kPanels * kPanelRows) {
    const int64_t r1 = std::min(row_end, r0 + kPanels * kPanelRows);
    const int n_panels = static_cast<int>((r1 - r0 + kPanelRows - 1) / kPanelRows);
    for (int64_t c0 = 0; c0 < m.cols; c0 += kChunkCols) {
      const int64_t nc = std::min<int64_t>(kChunkCols, m.cols - c0);
      for (int p = 0; p < n_panels; ++p) {
        const int64_t r = r0 + p * kPanelRows;
        pack_panel<W>(w, m.cols, r, static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r)), c0,
                      nc, panels + p * kPanelRows * kChunkCols);
      }
      for (int64_t t = 0; t < n_tokens; t += kTokTile) {
        const int64_t nt = std::min<int64_t>(kTokTile, n_tokens - t);
        for (int p = 0; p < n_panels; ++p) {
          const int64_t r = r0 + p * kPanelRows;
          kPanelTiles[nt](panels + p * kPanelRows * kChunkCols, nc, x + t * m.cols + c0, m.cols,
                          y + t * m.rows + r, m.rows,
                          static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r)), c0 > 0);
        }
      }
    }
  }
}

}  // namespace

bool float_supports(DType dtype, int64_t n_tokens) {
  const bool is_float = dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
  return is_float && n_tokens >= kMinTokens;
}

void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end) {
  if (n_tokens <= 0 || row_begin >= row_end) return;
  if (w.cols <= 0) {  // empty dot products
    for (int64_t t = 0; t < n_tokens; ++t)
      std::fill(y + t * w.rows + row_begin, y + t * w.rows + row_end, 0.0f);
    return;
  }
  switch (w.dtype) {
    case DType::kF32:
      return matmul_packed<F32Weights>(w, x, n_tokens, y, row_begin, row_end);
    case DType::kF16:
      return matmul_packed<F16Weights>(w, x, n_tokens, y, row_begin, row_end);
    case DType::kBF16:
      return matmul_packed<BF16Weights>(w, x, n_tokens, y, row_begin, row_end);
    default:
      return;
  }
}

}  // namespace llmpack::kernels::avx512
