// AVX2 matmul for float weights (F32, F16 via F16C, BF16 via a shift).
// A tile computes R rows x T tokens with R*T accumulators held in registers,
// so each weight vector loaded (and converted) is used T times and each
// activation vector R times. Decode (T = 1) streams rows either one at a
// time (short rows) or 8 side by side (decode_row, decode_tile8), with enough
// independent accumulators to hide the FMA latency.
// (No core/half.h here: its inline functions compiled with AVX flags could
// be the copy the linker keeps for scalar callers.)
#include <algorithm>
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
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 8 <= cols; c += 8) {
    __m256 xv[T];
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * cols + c);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = W::load8(w + r * ld_w + c);
      #pragma GCC unroll 8
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, xv[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      float s = hsum(acc[r][t]);
      for (int64_t cc = c; cc < cols; ++cc) s += W::at(w + r * ld_w + cc) * x[t * cols + cc];
      y[t * ld_y + r] = s;
    }
  }
}

// Decode (one token): 8 rows stream side by side, a cache line of each a
// step, each row prefetched `ahead` bytes on when kPrefetch (past a row's
// end, the same row of the next tile; prefetches never fault). Whether it
// pays depends on the CPU (kernels::float_decode_prefetch): on the ANCHORS
// machine kind (Zen 3) the hardware followed the 8 streams by itself and 4 KiB
// ahead read 1.01-1.17x slower than none (docs/PERFORMANCE.md section 14); on a
// Zen 5, 1 KiB ahead read 1.04-1.59x faster than none (section 19).
template <class W, bool kPrefetch>
inline void decode_tile8(const typename W::Elem* w, int64_t ld_w, const float* x, int64_t cols,
                         float* y, int64_t ahead_bytes) {
  constexpr int R = 8;
  constexpr int64_t kLine = 64 / sizeof(typename W::Elem);  // elements per cache line
  const int64_t ahead = ahead_bytes / static_cast<int64_t>(sizeof(typename W::Elem));
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + kLine <= cols; c += kLine) {
    if constexpr (kPrefetch) {
      const int64_t at = c + ahead < cols ? c + ahead : c + ahead - cols + R * ld_w;
      for (int r = 0; r < R; ++r) _mm_prefetch(reinterpret_cast<const char*>(w + r * ld_w + at), _MM_HINT_T0);
    }
#pragma GCC unroll 8
    for (int64_t k = 0; k < kLine; k += 8) {
      const __m256 xv = _mm256_loadu_ps(x + c + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(W::load8(w + r * ld_w + c + k), xv, acc[r]);
    }
  }
  for (; c + 8 <= cols; c += 8) {
    const __m256 xv = _mm256_loadu_ps(x + c);
    for (int r = 0; r < R; ++r) acc[r] = _mm256_fmadd_ps(W::load8(w + r * ld_w + c), xv, acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    float s = hsum(acc[r]);
    for (int64_t cc = c; cc < cols; ++cc) s += W::at(w + r * ld_w + cc) * x[cc];
    y[r] = s;
  }
}

// Decode (one token) of short rows, one row at a time: the weights stream
// through memory in order, and 4 accumulators (one per vector of a
// 32-element step, whatever the element size) cover the FMA latency. No
// software prefetch: rows lie back to back, one stream the hardware follows,
// and prefetching each step 4 KiB ahead read 4-12% slower in the decode
// driver on the ANCHORS machine kind (F16 768-column rows, both orders;
// docs/PERFORMANCE.md section 16), as it had for decode_tile8.
template <class W>
inline float decode_row(const typename W::Elem* w, const float* x, int64_t cols) {
  constexpr int64_t kStep = 32;
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
  int64_t c = 0;
  for (; c + kStep <= cols; c += kStep) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k)
      acc[k] = _mm256_fmadd_ps(W::load8(w + c + 8 * k), _mm256_loadu_ps(x + c + 8 * k), acc[k]);
  }
  for (; c + 8 <= cols; c += 8) acc[0] = _mm256_fmadd_ps(W::load8(w + c), _mm256_loadu_ps(x + c), acc[0]);
  float s = hsum(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
  for (; c < cols; ++c) s += W::at(w + c) * x[c];
  return s;
}

template <class W, int T>
void rows_for_tokens(const typename W::Elem* w, const WeightMatrix& m, const float* x,
                     float* y, int64_t row_begin, int64_t row_end) {
  int64_t r = row_begin;
  // One token (decode): rows of 2 KiB or less one at a time (on the ANCHORS
  // machine kind, 768 F16 columns on one thread: 6.5-6.9 -> 8.0-8.8 GB/s),
  // longer rows 8 at a time, 8 independent FMA chains (2048 columns: 9.4-11.7
  // GB/s as a tile, 8.3-9.0 one by one; 4-row tiles had left the Zen 5 dev VM
  // at about 60% of its read bandwidth).
  constexpr int64_t kShortRowBytes = 2048;
  if constexpr (T == 1) {
    if (m.cols * static_cast<int64_t>(sizeof(typename W::Elem)) <= kShortRowBytes) {
      for (; r < row_end; ++r) y[r] = decode_row<W>(w + r * m.cols, x, m.cols);
      return;
    }
    const int64_t ahead = float_decode_prefetch();
    if (ahead > 0) {
      for (; r + 8 <= row_end; r += 8) decode_tile8<W, true>(w + r * m.cols, m.cols, x, m.cols, y + r, ahead);
    } else {
      for (; r + 8 <= row_end; r += 8) decode_tile8<W, false>(w + r * m.cols, m.cols, x, m.cols, y + r, 0);
    }
  }
  for (; r + 4 <= row_end; r += 4) tile<W, 4, T>(w + r * m.cols, m.cols, x, m.cols, y + r, m.rows);
  for (; r < row_end; ++r) tile<W, 1, T>(w + r * m.cols, m.cols, x, m.cols, y + r, m.rows);
}

template <class W>
void matmul_packed(const WeightMatrix& m, const float* x, int64_t n_tokens, float* y,
                   int64_t row_begin, int64_t row_end);

template <class W>
void matmul_typed(const WeightMatrix& m, const float* x, int64_t n_tokens, float* y,
                  int64_t row_begin, int64_t row_end) {
  if (n_tokens >= kPackedMinTokens) return matmul_packed<W>(m, x, n_tokens, y, row_begin, row_end);
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

// Prefill: rows are packed 16 at a time, converted to f32 and transposed,
// into panels [c][16] on the stack; a 6-token x 16-row tile then takes 2
// weight loads and 6 broadcasts per 12 FMAs (12 accumulators in registers).
// A block of 32 rows x up to kTokBlock tokens sums its 512-column chunks into
// a contiguous buffer, copied to y once at the end: y's rows lie m.rows
// floats apart (8-32 KiB on the 1B shape), so summing in place put every
// token's rows in the same few cache sets, and each chunk's read-modify-write
// of y went to L3. Alternated end to end, 1B F16 pp512 read +4% with the
// buffer alone, +13% with 512-column chunks and +4% more with 32-row blocks
// (docs/PERFORMANCE.md section 12). F16 weights keep their panels in f16,
// converted in the tile (2 vcvtph2ps per 12 FMAs): half
// the panel bytes stream from L2 per FMA (kernel driver 1.06-1.14x; end to
// end, pooled alternated runs, 1B F16 pp512 1.06x, stories110M 1.03x;
// section 14). Stack: 64 KiB of f32 panels (32 KiB f16) + 24 KiB of sums.
constexpr int kPanelRows = 16, kPanels = 2, kChunkCols = 512, kTokTile = 6;
constexpr int64_t kBlockRows = kPanels * kPanelRows, kTokBlock = 192;

// A panel's element: f32, or f16 for F16 weights (values unchanged either way).
template <class W>
struct PanelOf {
  using Elem = float;
  static void store8(float* p, __m256 v) { _mm256_store_ps(p, v); }
};
template <>
struct PanelOf<F16Weights> {
  using Elem = uint16_t;
  static void store8(uint16_t* p, __m256 v) {
    _mm_store_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
};

inline __m256 panel_load8(const float* p) { return _mm256_load_ps(p); }
inline __m256 panel_load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
}

inline void transpose8x8(__m256* v) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    const __m256* th = t + 4 * h;
    u[4 * h + 0] = _mm256_shuffle_ps(th[0], th[2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(th[0], th[2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(th[1], th[3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(th[1], th[3], 0xEE);
  }
  for (int g = 0; g < 4; ++g) {
    v[g] = _mm256_permute2f128_ps(u[g], u[4 + g], 0x20);
    v[g + 4] = _mm256_permute2f128_ps(u[g], u[4 + g], 0x31);
  }
}

// panel[c * 16 + r] = w[r0 + r, c0 + c] for r < n_rows (0 beyond), c < n_cols
// (a multiple of 8).
template <class W>
void pack_panel(const typename W::Elem* w, int64_t ld_w, int64_t r0, int n_rows, int64_t c0,
                int64_t n_cols, typename PanelOf<W>::Elem* panel) {
  for (int64_t c = 0; c < n_cols; c += 8)
    for (int half = 0; half < 2; ++half) {
      __m256 v[8];
      for (int i = 0; i < 8; ++i) {
        const int r = 8 * half + i;
        v[i] = r < n_rows ? W::load8(w + (r0 + r) * ld_w + c0 + c) : _mm256_setzero_ps();
      }
      transpose8x8(v);
      for (int i = 0; i < 8; ++i) PanelOf<W>::store8(panel + (c + i) * kPanelRows + 8 * half, v[i]);
    }
}

// sums[t * ld_s + r] (+)= sum_c panel[c][r] * x[t * ld_x + c] for r < 16, t < T
// (sums: a block's contiguous buffer; a panel's rows past the matrix are zeros).
template <int T, class P>
void panel_tile(const P* panel, int64_t n_cols, const float* x, int64_t ld_x, float* sums,
                int64_t ld_s, bool add) {
  // two named arrays (not acc[T][2]): GCC keeps these in registers
  __m256 lo[T], hi[T];
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) lo[t] = hi[t] = _mm256_setzero_ps();
  for (int64_t c = 0; c < n_cols; ++c) {
    const __m256 w0 = panel_load8(panel + c * kPanelRows);
    const __m256 w1 = panel_load8(panel + c * kPanelRows + 8);
    #pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const __m256 xv = _mm256_broadcast_ss(x + t * ld_x + c);
      lo[t] = _mm256_fmadd_ps(w0, xv, lo[t]);
      hi[t] = _mm256_fmadd_ps(w1, xv, hi[t]);
    }
  }
  #pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    float* out = sums + t * ld_s;
    if (add) {
      lo[t] = _mm256_add_ps(lo[t], _mm256_loadu_ps(out));
      hi[t] = _mm256_add_ps(hi[t], _mm256_loadu_ps(out + 8));
    }
    _mm256_storeu_ps(out, lo[t]);
    _mm256_storeu_ps(out + 8, hi[t]);
  }
}

template <class P>
using PanelTileFn = void (*)(const P*, int64_t, const float*, int64_t, float*, int64_t, bool);
template <class P>
constexpr PanelTileFn<P> kPanelTiles[kTokTile + 1] = {nullptr,          panel_tile<1, P>, panel_tile<2, P>,
                                                      panel_tile<3, P>, panel_tile<4, P>, panel_tile<5, P>,
                                                      panel_tile<6, P>};

// Columns beyond the last multiple of 8 (rare: odd widths) go through `tile`.
template <class W>
void matmul_packed(const WeightMatrix& m, const float* x, int64_t n_tokens, float* y,
                   int64_t row_begin, int64_t row_end) {
  const auto* w = static_cast<const typename W::Elem*>(m.data);
  const int64_t cols8 = m.cols / 8 * 8;
  using Panel = typename PanelOf<W>::Elem;
  alignas(32) Panel panels[kBlockRows * kChunkCols];
  alignas(32) float sums[kTokBlock * kBlockRows];  // sums[t - t0][r - r0]
  for (int64_t r0 = row_begin; cols8 > 0 && r0 < row_end; r0 += kBlockRows) {
    const int64_t r1 = std::min(row_end, r0 + kBlockRows);
    const int n_panels = static_cast<int>((r1 - r0 + kPanelRows - 1) / kPanelRows);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += kTokBlock) {
      const int64_t t1 = std::min(n_tokens, t0 + kTokBlock);
      for (int64_t c0 = 0; c0 < cols8; c0 += kChunkCols) {
        const int64_t nc = std::min<int64_t>(kChunkCols, cols8 - c0);
        for (int p = 0; p < n_panels; ++p) {
          const int64_t r = r0 + p * kPanelRows;
          pack_panel<W>(w, m.cols, r, static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r)), c0,
                        nc, panels + p * kPanelRows * kChunkCols);
        }
        for (int64_t t = t0; t < t1; t += kTokTile) {
          const int64_t nt = std::min<int64_t>(kTokTile, t1 - t);
          for (int p = 0; p < n_panels; ++p)
            kPanelTiles<Panel>[nt](panels + p * kPanelRows * kChunkCols, nc, x + t * m.cols + c0, m.cols,
                            sums + (t - t0) * kBlockRows + p * kPanelRows, kBlockRows, c0 > 0);
        }
      }
      for (int64_t t = t0; t < t1; ++t)
        std::memcpy(y + t * m.rows + r0, sums + (t - t0) * kBlockRows,
                    static_cast<size_t>(r1 - r0) * sizeof(float));
    }
  }
  if (cols8 == m.cols) return;
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = row_begin; r < row_end; ++r) {
      float s = cols8 > 0 ? y[t * m.rows + r] : 0.0f;
      for (int64_t c = cols8; c < m.cols; ++c) s += W::at(w + r * m.cols + c) * x[t * m.cols + c];
      y[t * m.rows + r] = s;
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
