// AVX-512 VNNI prefill GEMM for Q4_0, Q8_0, Q4_K and Q6_K weights (several
// tokens at once); the counterpart of x86/matmul_packed_avx2.cc.
//
// Rows are packed, 16 at a time, into a row-interleaved panel on the stack
// (the weights in memory are never changed): for each 32-column unit, int32
// lane r of q[g] holds elements 4g..4g+3 of row r as unsigned bytes. One
// vpdpbusd of q[g] with a broadcast of 4 signed activation bytes adds 4
// products into each of the 16 rows' lanes: no horizontal sums, and each
// weight vector feeds kTile tokens, each activation broadcast kTilePanels panels.
//
// Per unit (Q6_K: per half-unit of 16 elements), with the exact int32 sum
// s = init + sum(q * a.q) (|s| < 2^21, so its float conversion is exact):
//   row . x += a.d * ws * s - wm * (a.d * a.qsum)
//   Q4_0: q = nibble, value = d (q - 8):      ws = d, init = -8 qsum
//   Q8_0: q = w + 128 (w xor 0x80):           ws = d, init = -128 qsum
//   Q4_K: q = nibble, value = d sc q - dmin m: ws = d sc, wm = dmin m, init = 0
//   Q6_K: q in 0..63, value = d sc_h (q - 32): ws = d sc_h, init = -32 qsum_h
// so the offsets cost nothing (vpdpbusd accumulates onto init) and only Q4_K
// has a float min term.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {
namespace {

using avx2::ActBlock;

constexpr int kPanelRows = 16;   // rows per interleaved panel (one zmm of int32 lanes)
constexpr int kGroupPanels = 2;  // panels packed together (32 rows)
constexpr int kChunkUnits = 32;  // units of 32 columns packed at once (1024 columns)
constexpr int kTilePanels = 2;   // panels per register tile (32 rows)
constexpr int kTile = 6;         // tokens per register tile
// Fewest tokens for which packing 16-row panels pays (decode streams rows on AVX2).
constexpr int64_t kMinTokens = 4;

// One unit (32 columns) of 16 rows. ws[0]: the rows' scales (Q6_K: of
// elements 0..15); ws[1]: Q4_K's mins, Q6_K's scales of elements 16..31.
struct alignas(64) Unit {
  uint8_t q[8][64];
  float ws[2][kPanelRows];
};

// Per token and unit of a column chunk: the int32 start of the sum (init[1]:
// Q6_K's second half), the activation scale d and d * qsum (Q4_K's min term).
struct TokenUnit {
  int32_t init[2];
  float d;
  float dqs;
};

inline float half(uint16_t h) { return _cvtsh_ss(h); }

// Each packer gives, for one block of a row, the 32 unsigned quants of unit
// j as one vector (int32 lane g = elements 4g..4g+3) and the row's ws terms
// of the block's units; `token` fills a TokenUnit's kind-specific fields.
struct Q4_0Pack {
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ4_0);
  static constexpr bool kMin = false, kHalves = false;
  static __m256i expand(const uint8_t* block, int) {
    const auto* b = reinterpret_cast<const BlockQ4_0*>(block);
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b->qs));
    const __m128i mask = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(raw, 4), mask), _mm_and_si128(raw, mask));
  }
  static void scales(const uint8_t* block, float (*s)[2]) {
    s[0][0] = half(reinterpret_cast<const BlockQ4_0*>(block)->d);
  }
  static void token(const ActBlock& a, TokenUnit* tu) { tu->init[0] = -8 * a.qsum; }
};

struct Q8_0Pack {
  static constexpr int kUnitsPerBlock = 1, kBytes = sizeof(BlockQ8_0);
  static constexpr bool kMin = false, kHalves = false;
  static __m256i expand(const uint8_t* block, int) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(block);
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs));
    return _mm256_xor_si256(w, _mm256_set1_epi8(static_cast<char>(0x80)));  // w + 128
  }
  static void scales(const uint8_t* block, float (*s)[2]) {
    s[0][0] = half(reinterpret_cast<const BlockQ8_0*>(block)->d);
  }
  static void token(const ActBlock& a, TokenUnit* tu) { tu->init[0] = -128 * a.qsum; }
};

struct Q4_KPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ4_K);
  static constexpr bool kMin = true, kHalves = false;
  static __m256i expand(const uint8_t* block, int j) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(block);
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qs + 32 * (j / 2)));
    const __m256i mask = _mm256_set1_epi8(0x0F);
    return (j % 2) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), mask) : _mm256_and_si256(raw, mask);
  }
  static void scales(const uint8_t* block, float (*s)[2]) {
    const auto* b = reinterpret_cast<const BlockQ4_K*>(block);
    const float d = half(b->d), dmin = half(b->dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, mn;
      unpack_q4k_scale(b->scales, j, &sc, &mn);
      s[j][0] = d * sc;
      s[j][1] = dmin * mn;
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->init[0] = 0;
    tu->dqs = a.d * static_cast<float>(a.qsum);
  }
};

// Q6_K unit j = elements 128h + 32g + l (h = j / 4, g = j % 4), q in 0..63.
struct Q6_KPack {
  static constexpr int kUnitsPerBlock = 8, kBytes = sizeof(BlockQ6_K);
  static constexpr bool kMin = false, kHalves = true;
  static __m256i expand(const uint8_t* block, int j) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
    const int h = j / 4, g = j % 4;
    const __m256i ql = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->ql + 64 * h + 32 * (g & 1)));
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b->qh + 32 * h));
    const __m256i mask4 = _mm256_set1_epi8(0x0F), mask2 = _mm256_set1_epi8(3);
    const __m256i low = g < 2 ? _mm256_and_si256(ql, mask4)
                              : _mm256_and_si256(_mm256_srli_epi16(ql, 4), mask4);
    const __m256i high = _mm256_and_si256(_mm256_srl_epi16(qh, _mm_cvtsi32_si128(2 * g)), mask2);
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
  }
  static void scales(const uint8_t* block, float (*s)[2]) {
    const auto* b = reinterpret_cast<const BlockQ6_K*>(block);
    const float d = half(b->d);
    for (int j = 0; j < 8; ++j) {
      const int8_t* sc = b->scales + 8 * (j / 4) + 2 * (j % 4);
      s[j][0] = d * sc[0];
      s[j][1] = d * sc[1];
    }
  }
  static void token(const ActBlock& a, TokenUnit* tu) {
    tu->init[0] = -32 * a.qsum_lo;
    tu->init[1] = -32 * (a.qsum - a.qsum_lo);
  }
};

// 8x8 transpose of int32 lanes: out[g] lane r = in[r] lane g.
inline void transpose8(const __m256i* in, __m256i* out) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(in[2 * i], in[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(in[2 * i], in[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // rows 4h..4h+3
    const __m256i* th = t + 4 * h;
    u[4 * h + 0] = _mm256_unpacklo_epi64(th[0], th[2]);  // groups 0 / 4
    u[4 * h + 1] = _mm256_unpackhi_epi64(th[0], th[2]);  // 1 / 5
    u[4 * h + 2] = _mm256_unpacklo_epi64(th[1], th[3]);  // 2 / 6
    u[4 * h + 3] = _mm256_unpackhi_epi64(th[1], th[3]);  // 3 / 7
  }
  for (int g = 0; g < 4; ++g) {
    out[g] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x20);
    out[g + 4] = _mm256_permute2x128_si256(u[g], u[4 + g], 0x31);
  }
}

// Packs rows [r0, r0 + n_rows) (n_rows <= 16; missing rows are zero, with
// zero scales) over blocks [blk0, blk0 + n_blk) into u[n_blk * kUnitsPerBlock].
template <class P>
void pack_panel(const uint8_t* base, int64_t stride, int64_t r0, int n_rows, int64_t blk0,
                int64_t n_blk, Unit* u) {
  const uint8_t* rows[kPanelRows];
  for (int r = 0; r < n_rows; ++r) rows[r] = base + (r0 + r) * stride + blk0 * P::kBytes;
  for (int64_t b = 0; b < n_blk; ++b) {
    Unit* ub = u + b * P::kUnitsPerBlock;
    for (int r = 0; r < kPanelRows; ++r) {
      float s[P::kUnitsPerBlock][2] = {};
      if (r < n_rows) P::scales(rows[r] + b * P::kBytes, s);
      for (int j = 0; j < P::kUnitsPerBlock; ++j) ub[j].ws[0][r] = s[j][0], ub[j].ws[1][r] = s[j][1];
    }
    for (int j = 0; j < P::kUnitsPerBlock; ++j)
      for (int h = 0; h < 2; ++h) {  // rows 8h..8h+7: bytes 32h..32h+31 of each q[g]
        __m256i in[8], out[8];
        for (int i = 0; i < 8; ++i) {
          const int r = 8 * h + i;
          in[i] = r < n_rows ? P::expand(rows[r] + b * P::kBytes, j) : _mm256_setzero_si256();
        }
        transpose8(in, out);
        for (int g = 0; g < 8; ++g)
          _mm256_store_si256(reinterpret_cast<__m256i*>(ub[j].q[g] + 32 * h), out[g]);
      }
  }
}

// The TokenUnits of tokens [0, n_tokens) over the chunk's n_units units
// (act: unit 0 of the chunk for token 0; tu[t * kChunkUnits + k]).
template <class P>
void fill_token_units(const ActBlock* act, int64_t n_sub, int64_t n_tokens, int64_t n_units,
                      TokenUnit* tu) {
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t k = 0; k < n_units; ++k) {
      const ActBlock& a = act[t * n_sub + k];
      TokenUnit& out = tu[t * kChunkUnits + k];
      out = TokenUnit{{0, 0}, a.d, 0.0f};
      P::token(a, &out);
    }
}

// acc[p * T + t] (rows of panel p, token t) += panels . act of token t over
// n_units units. u: panel 0 (panel p at u + p * kChunkUnits); act / tu: token
// 0 at unit 0 of the chunk, token t at act + t * n_sub, tu + t * kChunkUnits.
template <class P, int NP, int T>
inline void tile(const Unit* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                 const TokenUnit* tu, __m512* acc) {
  constexpr int kHalves = P::kHalves ? 2 : 1, kGroups = 8 / kHalves;
  for (int64_t k = 0; k < n_units; ++k) {
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) {
      __m512i s[NP * T];
#pragma GCC unroll 16
      for (int t = 0; t < T; ++t) {
        const __m512i init = _mm512_set1_epi32(tu[t * kChunkUnits + k].init[h]);
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) s[p * T + t] = init;
      }
#pragma GCC unroll 8
      for (int g = 0; g < kGroups; ++g) {
        const int gg = h * kGroups + g;
        __m512i w[NP];
#pragma GCC unroll 4
        for (int p = 0; p < NP; ++p) w[p] = _mm512_load_si512(u[p * kChunkUnits + k].q[gg]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          int32_t a4;
          std::memcpy(&a4, act[t * n_sub + k].q + 4 * gg, 4);
          const __m512i a = _mm512_set1_epi32(a4);
#pragma GCC unroll 4
          for (int p = 0; p < NP; ++p) s[p * T + t] = _mm512_dpbusd_epi32(s[p * T + t], w[p], a);
        }
      }
#pragma GCC unroll 4
      for (int p = 0; p < NP; ++p) {
        const __m512 ws = _mm512_load_ps(u[p * kChunkUnits + k].ws[h]);
#pragma GCC unroll 16
        for (int t = 0; t < T; ++t) {
          const __m512 sd = _mm512_mul_ps(_mm512_cvtepi32_ps(s[p * T + t]),
                                          _mm512_set1_ps(tu[t * kChunkUnits + k].d));
          acc[p * T + t] = _mm512_fmadd_ps(sd, ws, acc[p * T + t]);
          if constexpr (P::kMin) {
            const __m512 wm = _mm512_load_ps(u[p * kChunkUnits + k].ws[1]);
            acc[p * T + t] = _mm512_fnmadd_ps(wm, _mm512_set1_ps(tu[t * kChunkUnits + k].dqs), acc[p * T + t]);
          }
        }
      }
    }
  }
}

// y rows [0, n_rows) (n_rows <= 16 * NP) of tokens [0, T) at y (row stride
// ld_y per token): stores (first chunk) or adds.
template <class P, int NP, int T>
void tile_store(const Unit* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                const TokenUnit* tu, float* y, int64_t ld_y, int n_rows, bool add) {
  __m512 acc[NP * T];
  for (int i = 0; i < NP * T; ++i) acc[i] = _mm512_setzero_ps();
  tile<P, NP, T>(u, n_units, act, n_sub, tu, acc);
  for (int p = 0; p < NP; ++p) {
    const int rows = std::min(kPanelRows, n_rows - p * kPanelRows);
    for (int t = 0; t < T; ++t) {
      float* out = y + t * ld_y + p * kPanelRows;
      __m512 v = acc[p * T + t];
      if (rows == kPanelRows) {
        if (add) v = _mm512_add_ps(v, _mm512_loadu_ps(out));
        _mm512_storeu_ps(out, v);
      } else {  // a partial panel at the end of the row range: no access past it
        alignas(64) float tmp[kPanelRows];
        _mm512_store_ps(tmp, v);
        for (int r = 0; r < rows; ++r) out[r] = add ? out[r] + tmp[r] : tmp[r];
      }
    }
  }
}

// tile_store for nt <= T tokens (the token tail picks a smaller tile).
template <class P, int NP, int T>
void tile_tokens(int nt, const Unit* u, int64_t n_units, const ActBlock* act, int64_t n_sub,
                 const TokenUnit* tu, float* y, int64_t ld_y, int n_rows, bool add) {
  if (nt == T) return tile_store<P, NP, T>(u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
  if constexpr (T > 1) tile_tokens<P, NP, T - 1>(nt, u, n_units, act, n_sub, tu, y, ld_y, n_rows, add);
}

// All tokens against the n_panels packed panels of rows [r0, r1).
template <class P>
void tokens_over_panels(const Unit* units, int n_panels, int64_t n_units, int64_t r0, int64_t r1,
                        const ActBlock* act, int64_t n_sub, const TokenUnit* tu,
                        int64_t n_tokens, float* y, int64_t ld_y, bool add) {
  for (int64_t t = 0; t < n_tokens; t += kTile) {
    const int nt = static_cast<int>(std::min<int64_t>(kTile, n_tokens - t));
    for (int p = 0; p < n_panels; p += kTilePanels) {
      const int np = std::min(kTilePanels, n_panels - p);
      const int64_t r = r0 + p * kPanelRows;
      const int n_rows = static_cast<int>(std::min<int64_t>(np * kPanelRows, r1 - r));
      const Unit* u = units + p * kChunkUnits;
      const ActBlock* a = act + t * n_sub;
      const TokenUnit* tt = tu + t * kChunkUnits;
      float* out = y + t * ld_y + r;
      if (np == kTilePanels)
        tile_tokens<P, kTilePanels, kTile>(nt, u, n_units, a, n_sub, tt, out, ld_y, n_rows, add);
      else
        tile_tokens<P, 1, kTile>(nt, u, n_units, a, n_sub, tt, out, ld_y, n_rows, add);
    }
  }
}

template <class P>
void matmul_typed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                  int64_t row_begin, int64_t row_end) {
  constexpr int64_t kBlkPerChunk = kChunkUnits / P::kUnitsPerBlock;
  const int64_t n_blk = w.cols / (32 * P::kUnitsPerBlock);
  const int64_t n_sub = w.cols / 32;
  const int64_t stride = n_blk * P::kBytes;
  const auto* base = static_cast<const uint8_t*>(w.data);
  // 16 B per token and unit of a chunk (8 KiB per 16 tokens): on the heap
  const auto tu = std::make_unique<TokenUnit[]>(static_cast<size_t>(n_tokens * kChunkUnits));
  Unit units[kGroupPanels * kChunkUnits];  // 40 KiB of stack
  for (int64_t b0 = 0; b0 < n_blk; b0 += kBlkPerChunk) {
    const int64_t nb = std::min(kBlkPerChunk, n_blk - b0);
    const int64_t n_units = nb * P::kUnitsPerBlock;
    const ActBlock* chunk_act = act + b0 * P::kUnitsPerBlock;
    fill_token_units<P>(chunk_act, n_sub, n_tokens, n_units, tu.get());
    for (int64_t r0 = row_begin; r0 < row_end; r0 += kGroupPanels * kPanelRows) {
      const int64_t r1 = std::min(row_end, r0 + kGroupPanels * kPanelRows);
      const int n_panels = static_cast<int>((r1 - r0 + kPanelRows - 1) / kPanelRows);
      for (int p = 0; p < n_panels; ++p) {
        const int64_t r = r0 + p * kPanelRows;
        const int n_rows = static_cast<int>(std::min<int64_t>(kPanelRows, r1 - r));
        pack_panel<P>(base, stride, r, n_rows, b0, nb, units + p * kChunkUnits);
      }
      tokens_over_panels<P>(units, n_panels, n_units, r0, r1, chunk_act, n_sub, tu.get(), n_tokens,
                            y, w.rows, b0 > 0);
    }
  }
}

}  // namespace

bool quant_supports(DType dtype, int64_t n_tokens) {
  const bool packed = dtype == DType::kQ4_0 || dtype == DType::kQ8_0 || dtype == DType::kQ4_K ||
                      dtype == DType::kQ6_K;
  return packed && n_tokens >= kMinTokens;
}

void matmul_rows_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end) {
  switch (w.dtype) {
    case DType::kQ4_0: return matmul_typed<Q4_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ8_0: return matmul_typed<Q8_0Pack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ4_K: return matmul_typed<Q4_KPack>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kQ6_K: return matmul_typed<Q6_KPack>(w, act, n_tokens, y, row_begin, row_end);
    default: return;
  }
}

}  // namespace llmpack::kernels::avx512
