// AVX-512 VNNI decode (one to three tokens) for Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, IQ4_NL and IQ4_XS:
// each row streams once per token, as in the AVX2 decode, but one zmm holds
// 64 weights (two 32-element blocks) and vpdpbusd replaces AVX2's
// maddubs + madd + offset subtraction. What bounded the AVX2 decode per core
// was the scalar work per block (converting the block's f16 scale and
// multiplying it by the activation's); here 8 blocks' scales are gathered
// into one vector (vpermt2w over the 8 blocks' bytes), multiplied by 8
// activation scales at once, and each pair of blocks picks its two scales
// with one vpermps.
//
// Per block, with the exact int32 dot s = sum(q * a.q) (|s| < 2^21):
//   Q4_0: q = nibble, value = d (q - 8):   row . x += d a.d s - 8 d (a.d a.qsum)
//   Q8_0: q = w + 128 (w xor 0x80):        row . x += d a.d s - 128 d (a.d a.qsum)
//   Q5_0: q in 0..31, value = d (q - 16):  row . x += d a.d s - 16 d (a.d a.qsum)
//   Q5_1: q in 0..31, value = d q + m:     row . x += d a.d s + m (a.d a.qsum)
//   Q4_1: q = nibble, value = d q + m:     the same
//   Q4_K: q = nibble, value = d sc q - dmin m: row . x += d sc a.d s - dmin m (a.d a.qsum)
//         (Q5_K: the same with q in 0..31)
//   Q6_K: q in 0..63, value = d sc_h (q - 32), per 16-element half h:
//         row . x += d sc_h a.d s_h - 32 d sc_h (a.d qsum_h)
// The offset and min terms use the activation sums prepared once per matmul
// (avx2::act_floats), accumulate apart and join the row's sum before its
// reduction. Rows go 4 at a time (tiles share the activation loads and one
// reduction tree); measured on Zen 5 against the AVX2 decode, one thread:
// stories110M Q4_0 tg 272 -> 355 t/s, Llama-3.2-1B Q4_0 25.5 -> 40.
#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx512_internal.h"
#include "kernels/x86/lowbit_quants.h"
#include "kernels/x86/q4k_scales.h"

namespace llmpack::kernels::avx512 {
namespace {

using avx2::ActBlock;

// Each row's cache lines are prefetched `ahead` bytes before they are read:
// the same place in a later tile of rows, at least kMinPrefetchBytes on
// (a 4-row tile of stories110M's Q4_0 rows is 1.7 KiB, read in less time than
// a memory access takes; prefetching only 1 KiB on, inside the tile itself,
// made the 4-row kernel a third slower than streaming one row). 8 KiB rather
// than 3 KiB: on a Zen 5 VM whose memory read 34-40 GB/s, decode of 1024- and
// 768-column rows (Qwen3-0.6B, stories110M) ran 7-13% faster end to end, the
// 1B shape 2-4% (docs/PERFORMANCE.md section 61); 16 KiB was no better.
constexpr int64_t kMinPrefetchBytes = 8192;
constexpr int kTernarySelect = 0xE4;  // vpternlog: c ? a : b, bit by bit

inline void prefetch(const void* p, int64_t bytes, int64_t ahead) {
  const char* c = static_cast<const char*>(p) + ahead;
  for (int64_t off = 0; off < bytes; off += 64) _mm_prefetch(c + off, _MM_HINT_T0);
}

inline __m512i load512(const void* p) { return _mm512_loadu_si512(p); }
inline __m256i load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i load128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// [a[b0].q | a[b1].q]: the activations of two blocks in one zmm.
inline __m512i act_pair(const ActBlock* a, int64_t b0, int64_t b1) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(load256(a[b0].q)), load256(a[b1].q), 1);
}

// An index for vpermps: lanes 0..7 take float i, lanes 8..15 float j.
inline __m512i halves_index(int i, int j) {
  return _mm512_mask_set1_epi32(_mm512_set1_epi32(i), 0xFF00, j);
}

float f16(uint16_t h) { return _cvtsh_ss(h); }

// One token's activations: blocks a[n_sub], scales ad[n_sub], ad * qsum in
// adq[n_sub], half sums hs[2 n_sub] (avx2::act_floats).
struct TokenActs {
  const ActBlock* a;
  const float* ad;
  const float* adq;
  const float* hs;
};

// Q4_0's step-of-8 loop is dot_rows_q4_0 (below); the blocks after it
// (add_tail_blocks) and the scale gather use these.
struct Q4_0Row {
  using Block = BlockQ4_0;
  static uint16_t offset_f16(const Block& b) { return b.d; }
  // The 8 blocks' f16 scales: words 0, 9, ..., 63 of their 144 bytes.
  alignas(64) static constexpr int16_t kScaleIndex[32] = {0, 9, 18, 27, 36, 45, 54, 63};
  // One block as 32 unsigned bytes in element order: the 16-byte qs
  // broadcast to both 128-bit lanes, the second shifted right by 4.
  static __m256i single(const Block& b) {
    const __m256i w = _mm256_broadcastsi128_si256(load128(b.qs));
    return _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
  }
  // Two blocks as 64 unsigned bytes: single(b0) | single(b1).
  static __m512i pair(const Block& b0, const Block& b1) {
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(b0.qs)), load128(b1.qs), 1);
    const __m512i w = _mm512_shuffle_i64x2(_mm512_castsi256_si512(both), _mm512_castsi256_si512(both), 0x50);
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    return _mm512_and_si512(_mm512_srlv_epi32(w, shift), _mm512_set1_epi8(0x0F));
  }
};

// IQ4_NL: Q4_0's layout, each nibble an index into the grid; the grid
// values + 128 (unsigned for vpdpbusd; the offset is -128 d a.d a.qsum).
inline __m512i iq4_table512() {
  const __m128i t = _mm_xor_si128(load128(kIQ4Values), _mm_set1_epi8(static_cast<char>(0x80)));
  return _mm512_broadcast_i32x4(t);
}
struct IQ4_NLRow {
  using Block = BlockIQ4_NL;
  static uint16_t offset_f16(const Block& b) { return b.d; }
  static __m256i single(const Block& b) {
    const __m256i nibbles = Q4_0Row::single(reinterpret_cast<const BlockQ4_0&>(b));
    return _mm256_shuffle_epi8(_mm512_castsi512_si256(iq4_table512()), nibbles);
  }
  static __m512i pair(const Block& b0, const Block& b1) {
    const __m512i nibbles =
        Q4_0Row::pair(reinterpret_cast<const BlockQ4_0&>(b0), reinterpret_cast<const BlockQ4_0&>(b1));
    return _mm512_shuffle_epi8(iq4_table512(), nibbles);
  }
};
static_assert(sizeof(BlockIQ4_NL) == sizeof(BlockQ4_0) && offsetof(BlockIQ4_NL, qs) == offsetof(BlockQ4_0, qs));

// The rows of dot_rows_32 give: scales8 (the 8 blocks' d), offsets8 (their
// weights of a.d a.qsum, times -kOffset; Q8_0 and Q5_0: d again, so
// kOwnOffsets is false and scales8 serves), offset_f16 (one block's), pair
// and single (the unsigned quants of two blocks, of one).
struct Q8_0Row {
  using Block = BlockQ8_0;
  static constexpr float kOffset = 128.0f;
  static constexpr bool kOwnOffsets = false;
  static uint16_t offset_f16(const Block& b) { return b.d; }
  static __m256 offsets8(const Block* blk) { return scales8(blk); }
  // Blocks 0..3 have their scales at words 0, 17, 34, 51 of bytes 0..127,
  // blocks 4..7 at the same words of bytes 136..263.
  static __m256 scales8(const Block* blk) {
    alignas(64) static const int16_t kIndex[32] = {0, 17, 34, 51};
    const __m512i index = load512(kIndex);
    const auto* p = reinterpret_cast<const char*>(blk);
    const __m512i first = _mm512_permutex2var_epi16(load512(p), index, load512(p + 64));
    const __m512i second = _mm512_permutex2var_epi16(load512(p + 136), index, load512(p + 200));
    return _mm256_cvtph_ps(_mm_unpacklo_epi64(_mm512_castsi512_si128(first), _mm512_castsi512_si128(second)));
  }
  static __m512i pair(const Block& b0, const Block& b1) {
    const __m512i w = _mm512_inserti64x4(_mm512_castsi256_si512(load256(b0.qs)), load256(b1.qs), 1);
    return _mm512_xor_si512(w, _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static __m256i single(const Block& b) {
    return _mm256_xor_si256(load256(b.qs), _mm256_set1_epi8(static_cast<char>(0x80)));
  }
};

// Q4_1, Q5_0 and Q5_1: the nibbles as Q4_0's; for Q5 a byte-masked add puts
// 16 onto each element whose bit of qh is set (qh moved into a mask register;
// two blocks' masks joined with kunpackd).
template <class Block_>
struct OffsetRow {
  using Block = Block_;
  static constexpr bool kHasMin = kBlockHasMin<Block>, kFifthBit = kBlockHasQh<Block>;
  static constexpr float kOffset = kHasMin ? -1.0f : 16.0f;
  static constexpr bool kOwnOffsets = kHasMin;
  static uint16_t offset_f16(const Block& b) {
    if constexpr (kHasMin)
      return b.m;
    else
      return b.d;
  }
  // The f16 at byte kOff of each of 8 blocks (from p = the step + kOff): two
  // word gathers, blocks 0..3 from [p, p + 128) and blocks 4..7 from
  // [p + 4kB, p + 4kB + 64) and the 64 bytes that end at the step's end, so
  // nothing past the 8th block is read.
  template <int kOff>
  static __m256 f16x8(const Block* blk) {
    constexpr int kB = sizeof(Block), kYFrom = 4 * kB - kOff - 64;
    static_assert(kB % 2 == 0 && kYFrom % 2 == 0 && kYFrom > 0);
    static constexpr auto kIndex = [] {
      std::array<std::array<int16_t, 32>, 2> idx{};
      for (int j = 0; j < 4; ++j) {
        idx[0][j] = static_cast<int16_t>(j * kB / 2);
        const int byte = j * kB;
        idx[1][j] = static_cast<int16_t>(byte + 2 <= 64 ? byte / 2 : 32 + (byte - kYFrom) / 2);
      }
      return idx;
    }();
    const auto* p = reinterpret_cast<const char*>(blk) + kOff;
    const __m512i first = _mm512_permutex2var_epi16(load512(p), load512(kIndex[0].data()), load512(p + 64));
    const __m512i second =
        _mm512_permutex2var_epi16(load512(p + 4 * kB), load512(kIndex[1].data()), load512(p + 4 * kB + kYFrom));
    return _mm256_cvtph_ps(_mm_unpacklo_epi64(_mm512_castsi512_si128(first), _mm512_castsi512_si128(second)));
  }
  static __m256 scales8(const Block* blk) { return f16x8<offsetof(Block, d)>(blk); }
  static __m256 offsets8(const Block* blk) {
    if constexpr (kHasMin)
      return f16x8<offsetof(Block, m)>(blk);
    else
      return scales8(blk);
  }
  // qh as a mask: bit i for element i (memcpy: qh lies at an odd multiple of 2)
  static __mmask32 high_bits(const Block& b) {
    uint32_t bits;
    std::memcpy(&bits, b.qh, 4);
    return _cvtu32_mask32(bits);
  }
  static __m256i single(const Block& b) {
    const __m256i w = _mm256_broadcastsi128_si256(load128(b.qs));
    const __m256i low =
        _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), _mm256_set1_epi8(0x0F));
    if constexpr (!kFifthBit)
      return low;
    else
      return _mm256_mask_add_epi8(low, high_bits(b), low, _mm256_set1_epi8(16));
  }
  static __m512i pair(const Block& b0, const Block& b1) {
    const __m256i both = _mm256_inserti128_si256(_mm256_castsi128_si256(load128(b0.qs)), load128(b1.qs), 1);
    const __m512i w = _mm512_shuffle_i64x2(_mm512_castsi256_si512(both), _mm512_castsi256_si512(both), 0x50);
    const __m512i shift = _mm512_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4, 0, 0, 0, 0, 4, 4, 4, 4);
    const __m512i low = _mm512_and_si512(_mm512_srlv_epi32(w, shift), _mm512_set1_epi8(0x0F));
    if constexpr (!kFifthBit) {
      return low;
    } else {
      const __mmask64 high = _mm512_kunpackd(high_bits(b1), high_bits(b0));
      return _mm512_mask_add_epi8(low, high, low, _mm512_set1_epi8(16));
    }
  }
};

// out[r] = the sum of acc[r]'s 16 lanes, r < N: one shuffle tree for four
// rows (short rows, as in stories110M's 768 columns, made the per-row
// reductions a fifth of the decode time).
// (extractf32x8 rather than casts and _mm512_reduce_add_ps: GCC 12 builds
// those from _mm256_undefined placeholders and warns on every use.)
inline __m256 fold_halves(__m512 v) { return _mm256_add_ps(_mm512_extractf32x8_ps(v, 0), _mm512_extractf32x8_ps(v, 1)); }

template <int N>
inline void reduce_rows(const __m512* acc, float* out) {
  if constexpr (N == 4) {
    __m256 h[4];
    for (int r = 0; r < 4; ++r) h[r] = fold_halves(acc[r]);
    // hadd pairs neighbours: after two rounds lane r (and r + 4) holds a quarter of row r's sum
    const __m256 s = _mm256_hadd_ps(_mm256_hadd_ps(h[0], h[1]), _mm256_hadd_ps(h[2], h[3]));
    _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1)));
  } else {
    for (int r = 0; r < N; ++r) {
      const __m256 h = fold_halves(acc[r]);
      __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
      q = _mm_add_ps(q, _mm_movehl_ps(q, q));
      out[r] = _mm_cvtss_f32(_mm_add_ss(q, _mm_movehdup_ps(q)));
    }
  }
}

// Blocks b..n_blocks - 1 of N rows (the last n_blocks % 8, after the steps
// of 8) into the rows' vector sums: two blocks a zmm (R::pair), their dots
// times d * a.d in acc[r], their d * (a.d a.qsum) in lanes 0 and 1 of
// offset[r]; an odd last block alone in lanes 0..7. A reduction per block
// here cost SmolLM2's 576-column rows (18 blocks) about a quarter of their
// rate (docs/PERFORMANCE.md section 24).
template <class R, int N>
inline void add_tail_blocks(const typename R::Block* row, int64_t n_blocks, int64_t b, const TokenActs& t,
                            __m512* acc, __m256* offset) {
  // [f[0], f[1], 0, 0] (vmovq: an unaligned 8-byte load)
  const auto two_floats = [](const float* f) {
    return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i_u*>(f)));
  };
  const __m512i pair_index = halves_index(0, 1);
  for (; b + 2 <= n_blocks; b += 2) {
    const __m512i a = act_pair(t.a, b, b + 1);
    const __m128 ad = two_floats(t.ad + b), adq = two_floats(t.adq + b);
    for (int r = 0; r < N; ++r) {
      const typename R::Block* blk = row + r * n_blocks + b;
      const __m128 d = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(blk[0].d | uint32_t{blk[1].d} << 16)));
      const __m128 wo = _mm_cvtph_ps(_mm_cvtsi32_si128(
          static_cast<int>(R::offset_f16(blk[0]) | uint32_t{R::offset_f16(blk[1])} << 16)));
      const __m512 scale = _mm512_permutexvar_ps(pair_index, _mm512_zextps128_ps512(_mm_mul_ps(d, ad)));
      const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), R::pair(blk[0], blk[1]), a);
      acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), scale, acc[r]);
      offset[r] = _mm256_add_ps(offset[r], _mm256_zextps128_ps256(_mm_mul_ps(wo, adq)));
    }
  }
  if (b < n_blocks) {
    const __m256i a = load256(t.a[b].q);
    const float ad = t.ad[b], adq = t.adq[b];
    for (int r = 0; r < N; ++r) {
      const typename R::Block& blk = row[r * n_blocks + b];
      const float d = f16(blk.d);
      const __m256 dot = _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), R::single(blk), a));
      acc[r] = _mm512_add_ps(acc[r], _mm512_zextps256_ps512(_mm256_mul_ps(dot, _mm256_set1_ps(d * ad))));
      offset[r] = _mm256_add_ps(offset[r], _mm256_zextps128_ps256(_mm_set_ss(f16(R::offset_f16(blk)) * adq)));
    }
  }
}

// Q8_0, Q5_0, Q5_1: N rows (row r at row + r * n_blocks) against one token: out[r],
// 8 blocks a step in pairs, then the tail (add_tail_blocks).
template <class R, int N>
void dot_rows_32(const typename R::Block* row, int64_t n_blocks, const TokenActs& t, int64_t ahead, float* out) {
  const __m512i pair_index[4] = {halves_index(0, 1), halves_index(2, 3), halves_index(4, 5), halves_index(6, 7)};
  __m512 acc[N];
  __m256 offset[N];  // sum of d * (a.d * a.qsum)
  for (int r = 0; r < N; ++r) acc[r] = _mm512_setzero_ps(), offset[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= n_blocks; b += 8) {
    __m512i act[4];
    for (int p = 0; p < 4; ++p) act[p] = act_pair(t.a, b + 2 * p, b + 2 * p + 1);
    const __m256 ad = _mm256_loadu_ps(t.ad + b), adq = _mm256_loadu_ps(t.adq + b);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const typename R::Block* blk = row + r * n_blocks + b;
      prefetch(blk, 8 * sizeof(typename R::Block), ahead);
      const __m256 ws = R::scales8(blk);
      offset[r] = _mm256_fmadd_ps(R::kOwnOffsets ? R::offsets8(blk) : ws, adq, offset[r]);
      const __m512 scale = _mm512_zextps256_ps512(_mm256_mul_ps(ws, ad));
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), R::pair(blk[2 * p], blk[2 * p + 1]), act[p]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(pair_index[p], scale), acc[r]);
      }
    }
  }
  add_tail_blocks<R, N>(row, n_blocks, b, t, acc, offset);
  for (int r = 0; r < N; ++r)
    acc[r] = _mm512_fmadd_ps(_mm512_zextps256_ps512(offset[r]), _mm512_set1_ps(-R::kOffset), acc[r]);
  reduce_rows<N>(acc, out);
}

// Q4_0, 8 blocks (144 bytes) a step, four at a time: one vpermt2w gathers
// the 16-byte qs of blocks k..k+3 (bytes 2..17, 20..35, 38..53, 56..71 of
// their 72: every offset is even) into one zmm, whose 128-bit lane j is block
// k+j; its low nibbles are elements 0..15 of each block and its high nibbles
// elements 16..31, so two vpdpbusd against the activations arranged the same
// way (built once per step for all N rows) leave lane j holding block k+j's
// dot. Per block that is 3 vector instructions and a quarter of a scale
// multiply, where a pairwise loop like Q8_0's took about 4.5 and loaded each
// block's qs twice (decode driver, Zen 5, one thread: 768 x 768 in L2
// 34.7 -> 49.6 GB/s; docs/PERFORMANCE.md section 22).
//
// The gather indexes live in a function-local static object: a constexpr
// table loaded at the top of the function measured 2-4% slower in the decode
// driver (768 x 768, one thread: 47.8-48.4 GB/s against 49.0-50.3), GCC
// building the loop differently around the two extra live registers.
struct Q4_0Quads {
  // Word indexes into [bytes 0..63 | bytes 64..127] of the step's blocks 0..3
  // (from byte 0) and 4..7 (from byte 64: the words of bytes 74..143, the
  // second register loaded from byte 80).
  __m512i first, second;
  Q4_0Quads() {
    alignas(64) int16_t a[32], b[32];
    for (int j = 0; j < 4; ++j)
      for (int w = 0; w < 8; ++w) {
        a[8 * j + w] = static_cast<int16_t>((18 * j + 2) / 2 + w);
        const int byte = 72 + 18 * j + 2 + 2 * w;  // from the step's start
        b[8 * j + w] = static_cast<int16_t>(byte < 128 ? (byte - 64) / 2 : 32 + (byte - 80) / 2);
      }
    first = load512(a);
    second = load512(b);
  }
};

// [lane j = q[0..15] of block j] and [lane j = q[16..31] of block j] for
// blocks b..b+3 of one token's activations.
inline void act_quad(const ActBlock* a, int64_t b, __m512i& lo, __m512i& hi) {
  const __m512i p0 = act_pair(a, b, b + 1), p1 = act_pair(a, b + 2, b + 3);
  lo = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), p1);
  hi = _mm512_permutex2var_epi64(p0, _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15), p1);
}

// IQ4_NL (kIQ4) runs the same loop on its blocks, the nibbles looked up in
// the grid + 128 and the offset -128 (IQ4_NLRow).
template <int N, bool kIQ4 = false>
void dot_rows_q4_0(const BlockQ4_0* row, int64_t n_blocks, const TokenActs& t, int64_t ahead, float* out) {
  static const Q4_0Quads quads;
  using Tail = std::conditional_t<kIQ4, IQ4_NLRow, Q4_0Row>;
  constexpr float kOffset = kIQ4 ? 128.0f : 8.0f;
  const __m512i table = iq4_table512();
  const __m512i mask = _mm512_set1_epi8(0x0F);
  const __m512i quad_index[2] = {_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)};
  __m512 acc[N];
  __m256 offset[N];  // sum of d * (a.d * a.qsum)
  for (int r = 0; r < N; ++r) acc[r] = _mm512_setzero_ps(), offset[r] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= n_blocks; b += 8) {
    __m512i act_lo[2], act_hi[2];
    act_quad(t.a, b, act_lo[0], act_hi[0]);
    act_quad(t.a, b + 4, act_lo[1], act_hi[1]);
    const __m256 ad = _mm256_loadu_ps(t.ad + b), adq = _mm256_loadu_ps(t.adq + b);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const BlockQ4_0* blk = row + r * n_blocks + b;
      prefetch(blk, 8 * sizeof(BlockQ4_0), ahead);
      const auto* p = reinterpret_cast<const char*>(blk);
      const __m512i z0 = load512(p), z1 = load512(p + 64), z2 = load512(p + 80);
      const __m256 ws = _mm256_cvtph_ps(
          _mm512_castsi512_si128(_mm512_permutex2var_epi16(z0, load512(Q4_0Row::kScaleIndex), z1)));
      offset[r] = _mm256_fmadd_ps(ws, adq, offset[r]);
      const __m512 scale = _mm512_zextps256_ps512(_mm256_mul_ps(ws, ad));
      const __m512i qs[2] = {_mm512_permutex2var_epi16(z0, quads.first, z1),
                             _mm512_permutex2var_epi16(z1, quads.second, z2)};
#pragma GCC unroll 2
      for (int g = 0; g < 2; ++g) {
        __m512i lo = _mm512_and_si512(qs[g], mask), hi = _mm512_and_si512(_mm512_srli_epi16(qs[g], 4), mask);
        if constexpr (kIQ4) lo = _mm512_shuffle_epi8(table, lo), hi = _mm512_shuffle_epi8(table, hi);
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, act_lo[g]), hi, act_hi[g]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(quad_index[g], scale), acc[r]);
      }
    }
  }
  add_tail_blocks<Tail, N>(reinterpret_cast<const typename Tail::Block*>(row), n_blocks, b, t, acc, offset);
  for (int r = 0; r < N; ++r)
    acc[r] = _mm512_fmadd_ps(_mm512_zextps256_ps512(offset[r]), _mm512_set1_ps(-kOffset), acc[r]);
  reduce_rows<N>(acc, out);
}

// Q4_K: bytes 64c..64c+63 of qs hold sub-blocks 4c (low nibbles of the first
// 32 bytes), 4c+1 (their high nibbles), 4c+2 and 4c+3 (the next 32), so the
// low nibbles of one zmm are sub-blocks 4c | 4c+2 and the high ones 4c+1 | 4c+3.
// Q5_K: sub-block j's fifth bits are bit j of qh[0..31]; with qh in both
// halves of a zmm, one variable 64-bit shift per half moves bits 4c | 4c+2
// (or 4c+1 | 4c+3) to bit 4: left for c = 0 (by 4 - j), right for c = 1 (by
// j - 4); what crosses from a neighbouring byte lands outside 0x10.
template <class Block>
inline __m512i k45_fifth_bits(const Block& blk, int c, int odd) {
  const __m512i qh = _mm512_broadcast_i64x4(load256(blk.qh));
  const int j_lo = 4 * c + odd, j_hi = j_lo + 2;  // the two halves' sub-blocks
  const __m512i moved =
      c == 0 ? _mm512_sllv_epi64(qh, _mm512_mask_set1_epi64(_mm512_set1_epi64(4 - j_lo), 0xF0, 4 - j_hi))
             : _mm512_srlv_epi64(qh, _mm512_mask_set1_epi64(_mm512_set1_epi64(j_lo - 4), 0xF0, j_hi - 4));
  return _mm512_and_si512(moved, _mm512_set1_epi8(0x10));
}

template <class Block, int N>
void dot_rows_k45(const Block* row, int64_t n_super, const TokenActs& t, int64_t ahead, float* out) {
  constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_K>;
  const __m512i index[2][2] = {{halves_index(0, 2), halves_index(1, 3)}, {halves_index(4, 6), halves_index(5, 7)}};
  const __m512i mask = _mm512_set1_epi8(0x0F);
  __m512 acc[N];
  __m256 mins_acc[N];
  for (int r = 0; r < N; ++r) acc[r] = _mm512_setzero_ps(), mins_acc[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const int64_t b = 8 * sb;
    __m512i act[2][2];
    for (int c = 0; c < 2; ++c) {
      act[c][0] = act_pair(t.a, b + 4 * c, b + 4 * c + 2);
      act[c][1] = act_pair(t.a, b + 4 * c + 1, b + 4 * c + 3);
    }
    const __m256 ad = _mm256_loadu_ps(t.ad + b), adq = _mm256_loadu_ps(t.adq + b);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const Block& blk = row[r * n_super + sb];
      prefetch(&blk, sizeof(blk), ahead);
      // [8 scales * d | 8 mins * dmin]
      const __m512 d_dmin = _mm512_cvtph_ps(_mm256_mask_set1_epi16(_mm256_set1_epi16(static_cast<int16_t>(blk.d)),
                                                                   0xFF00, static_cast<int16_t>(blk.dmin)));
      const __m512 sm = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(x86::q4k_scale_min_bytes(blk.scales))),
                                      d_dmin);
      mins_acc[r] = _mm256_fmadd_ps(_mm512_extractf32x8_ps(sm, 1), adq, mins_acc[r]);
      const __m512 scale = _mm512_zextps256_ps512(_mm256_mul_ps(_mm512_extractf32x8_ps(sm, 0), ad));
#pragma GCC unroll 2
      for (int c = 0; c < 2; ++c) {
        const __m512i z = load512(blk.qs + 64 * c);
        __m512i lo = _mm512_and_si512(z, mask), hi = _mm512_and_si512(_mm512_srli_epi16(z, 4), mask);
        if constexpr (kFifthBit) {
          lo = _mm512_or_si512(lo, k45_fifth_bits(blk, c, 0));
          hi = _mm512_or_si512(hi, k45_fifth_bits(blk, c, 1));
        }
        const __m512i dot_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, act[c][0]);
        const __m512i dot_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, act[c][1]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_lo), _mm512_permutexvar_ps(index[c][0], scale), acc[r]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_hi), _mm512_permutexvar_ps(index[c][1], scale), acc[r]);
      }
    }
  }
  for (int r = 0; r < N; ++r) acc[r] = _mm512_sub_ps(acc[r], _mm512_zextps256_ps512(mins_acc[r]));
  reduce_rows<N>(acc, out);
}

// Q6_K: half h's 64 bytes ql[64h..] give elements 0..63 of the half (low
// nibbles, sub-blocks g = 0, 1) and 64..127 (high nibbles, g = 2, 3); the two
// high bits of g come from bits 2g, 2g+1 of qh[32h..]. With Q = [qh | qh >> 2]
// masked to 0x33, (Q << 4) holds the high bits of elements 0..63 at bits 4, 5
// and Q itself those of elements 64..127; a bitwise select joins them to the
// nibbles. Each 128-bit lane of a zmm is one 16-element scale group.
template <int N>
void dot_rows_q6_k(const BlockQ6_K* row, int64_t n_super, const TokenActs& t, int64_t ahead, float* out) {
  const __m512i low4 = _mm512_set1_epi8(0x0F), mask33 = _mm512_set1_epi8(0x33);
  // lane j of zmm k (64 elements) takes scale group 4k + j
  const __m512i group_index[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7),
      _mm512_setr_epi32(8, 8, 8, 8, 9, 9, 9, 9, 10, 10, 10, 10, 11, 11, 11, 11),
      _mm512_setr_epi32(12, 12, 12, 12, 13, 13, 13, 13, 14, 14, 14, 14, 15, 15, 15, 15)};
  const __m512i block_of_group = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m512 acc[N], offset[N];  // offset: sum of d sc_h (a.d qsum_h)
  for (int r = 0; r < N; ++r) acc[r] = offset[r] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const int64_t b = 8 * sb;
    __m512i act[4];
    for (int k = 0; k < 4; ++k) act[k] = act_pair(t.a, b + 2 * k, b + 2 * k + 1);
    const __m512 act_scale =
        _mm512_permutexvar_ps(block_of_group, _mm512_zextps256_ps512(_mm256_loadu_ps(t.ad + b)));
    const __m512 half_sums = _mm512_loadu_ps(t.hs + 16 * sb);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const BlockQ6_K& blk = row[r * n_super + sb];
      prefetch(&blk, sizeof(blk), ahead);
      const __m512 group_scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(load128(blk.scales))),
                                               _mm512_set1_ps(f16(blk.d)));
      offset[r] = _mm512_fmadd_ps(group_scale, half_sums, offset[r]);
      const __m512 scale = _mm512_mul_ps(group_scale, act_scale);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const __m512i ql = load512(blk.ql + 64 * h);
        const __m256i qh = load256(blk.qh + 32 * h);
        const __m512i q = _mm512_and_si512(
            _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1), mask33);
        const __m512i lo = _mm512_ternarylogic_epi32(ql, _mm512_slli_epi16(q, 4), low4, kTernarySelect);
        const __m512i hi = _mm512_ternarylogic_epi32(_mm512_srli_epi16(ql, 4), q, low4, kTernarySelect);
        const __m512i dot_lo = _mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, act[2 * h]);
        const __m512i dot_hi = _mm512_dpbusd_epi32(_mm512_setzero_si512(), hi, act[2 * h + 1]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_lo), _mm512_permutexvar_ps(group_index[2 * h], scale), acc[r]);
        acc[r] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot_hi), _mm512_permutexvar_ps(group_index[2 * h + 1], scale), acc[r]);
      }
    }
  }
  for (int r = 0; r < N; ++r) acc[r] = _mm512_fmadd_ps(offset[r], _mm512_set1_ps(-32.0f), acc[r]);
  reduce_rows<N>(acc, out);
}

// Q3_K and Q2_K (kQ3 false), laid out for it as Q6_K is above: a zmm holds
// units j, j + 1 (one act pair; 128-bit lane i = 16-element scale group 2j + i),
// q = the low 2 bits (qs[32n..] >> 2k, both units' shifts in one vpsrlvw),
// for Q3_K plus 4 where bit j (or j + 1) of hmask[l] is set (vptestmb against
// both bits, then a masked add). Q3_K: value d (sc - 32) (q - 4), so the offset
// is -4 d (sc - 32) (a.d qsum_h); Q2_K: value d sc q - dmin m, the offset
// -dmin m (a.d qsum_h).
template <int N, bool kQ3>
void dot_rows_k23(const std::conditional_t<kQ3, BlockQ3_K, BlockQ2_K>* row, int64_t n_super, const TokenActs& t,
                  int64_t ahead, float* out) {
  const __m512i block_of_group = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  __m512 acc[N], offset[N];
  for (int r = 0; r < N; ++r) acc[r] = offset[r] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const int64_t b = 8 * sb;
    __m512i act[4];
    for (int k = 0; k < 4; ++k) act[k] = act_pair(t.a, b + 2 * k, b + 2 * k + 1);
    const __m512 act_scale = _mm512_permutexvar_ps(block_of_group, _mm512_zextps256_ps512(_mm256_loadu_ps(t.ad + b)));
    const __m512 half_sums = _mm512_loadu_ps(t.hs + 16 * sb);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const auto& blk = row[r * n_super + sb];
      prefetch(&blk, sizeof(blk), ahead);
      const __m128i sc8 = x86::k23_scale_bytes(blk);
      const __m512 group_scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(sc8)), _mm512_set1_ps(f16(blk.d)));
      if constexpr (kQ3) {
        offset[r] = _mm512_fmadd_ps(group_scale, half_sums, offset[r]);
      } else {
        const __m128i mins = _mm_and_si128(_mm_srli_epi16(load128(blk.scales), 4), _mm_set1_epi8(0x0F));
        const __m512 min_scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(mins)), _mm512_set1_ps(f16(blk.dmin)));
        offset[r] = _mm512_fmadd_ps(min_scale, half_sums, offset[r]);
      }
      const __m512 scale = _mm512_mul_ps(group_scale, act_scale);
#pragma GCC unroll 4
      for (int p = 0; p < 4; ++p) {  // units 2p, 2p + 1
        const int n = p / 2, k = 2 * (p % 2);
        const __m512i qs = _mm512_broadcast_i64x4(load256(blk.qs + 32 * n));
        const __m512i shifts = _mm512_mask_set1_epi16(_mm512_set1_epi16(static_cast<int16_t>(2 * k)),
                                                      0xFFFF0000u, static_cast<int16_t>(2 * k + 2));
        __m512i q = _mm512_and_si512(_mm512_srlv_epi16(qs, shifts), _mm512_set1_epi8(3));
        if constexpr (kQ3) {
          const __m512i hm = _mm512_broadcast_i64x4(load256(blk.hmask));
          const __m512i bits = _mm512_mask_set1_epi8(_mm512_set1_epi8(static_cast<char>(1 << (2 * p))),
                                                     0xFFFFFFFF00000000ull, static_cast<char>(1 << (2 * p + 1)));
          q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(hm, bits), q, _mm512_set1_epi8(4));
        }
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q, act[p]);
        const __m512i groups = _mm512_add_epi32(_mm512_set1_epi32(4 * p),
                                                _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(groups, scale), acc[r]);
      }
    }
  }
  for (int r = 0; r < N; ++r) acc[r] = _mm512_fmadd_ps(offset[r], _mm512_set1_ps(kQ3 ? -4.0f : -1.0f), acc[r]);
  reduce_rows<N>(acc, out);
}

// IQ4_XS: qs[64c..64c+63] hold units 4c..4c+3, 16 bytes each (128-bit lane
// j = unit 4c + j; low nibbles its elements 0..15, high 16..31): Q4_0's
// quads, with the activations of act_quad, the grid + 128 looked up, the 8
// 6-bit scales unpacked as one vector, and the offset -128.
template <int N>
void dot_rows_iq4_xs(const BlockIQ4_XS* row, int64_t n_super, const TokenActs& t, int64_t ahead, float* out) {
  const __m512i mask = _mm512_set1_epi8(0x0F), table = iq4_table512();
  const __m512i quad_index[2] = {_mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3),
                                 _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7)};
  __m512 acc[N];
  __m256 offset[N];
  for (int r = 0; r < N; ++r) acc[r] = _mm512_setzero_ps(), offset[r] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const int64_t b = 8 * sb;
    __m512i act_lo[2], act_hi[2];
    act_quad(t.a, b, act_lo[0], act_hi[0]);
    act_quad(t.a, b + 4, act_lo[1], act_hi[1]);
    const __m256 ad = _mm256_loadu_ps(t.ad + b), adq = _mm256_loadu_ps(t.adq + b);
#pragma GCC unroll 4
    for (int r = 0; r < N; ++r) {
      const BlockIQ4_XS& blk = row[r * n_super + sb];
      prefetch(&blk, sizeof(blk), ahead);
      uint32_t low;
      std::memcpy(&low, blk.scales_l, 4);
      const __m256i lo4 = _mm256_and_si256(
          _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(low)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
          _mm256_set1_epi32(0x0F));
      const __m256i hi2 = _mm256_and_si256(
          _mm256_srlv_epi32(_mm256_set1_epi32(blk.scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
          _mm256_set1_epi32(3));
      const __m256 ws = _mm256_mul_ps(
          _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_or_si256(lo4, _mm256_slli_epi32(hi2, 4)), _mm256_set1_epi32(32))),
          _mm256_set1_ps(f16(blk.d)));
      offset[r] = _mm256_fmadd_ps(ws, adq, offset[r]);
      const __m512 scale = _mm512_zextps256_ps512(_mm256_mul_ps(ws, ad));
#pragma GCC unroll 2
      for (int c = 0; c < 2; ++c) {
        const __m512i z = load512(blk.qs + 64 * c);
        const __m512i lo = _mm512_shuffle_epi8(table, _mm512_and_si512(z, mask));
        const __m512i hi = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(z, 4), mask));
        const __m512i dot = _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo, act_lo[c]), hi, act_hi[c]);
        acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_permutexvar_ps(quad_index[c], scale), acc[r]);
      }
    }
  }
  for (int r = 0; r < N; ++r)
    acc[r] = _mm512_fmadd_ps(_mm512_zextps256_ps512(offset[r]), _mm512_set1_ps(-128.0f), acc[r]);
  reduce_rows<N>(acc, out);
}

// Rows per call: four share each activation load and one reduction tree.
constexpr int kRowTile = 4;

// y[t * w.rows + r] for rows [row_begin, row_end) and every token;
// Dot<N>::run(first row, blocks per row, token, out[N]). Tokens are the inner
// loop, so a tile's rows are read from memory once (then from L1).
template <class Block, template <int> class Dot>
void rows_tokens(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end, int64_t blocks_per_row) {
  const int64_t n_sub = w.cols / kQK;
  const float* floats = avx2::act_floats(act, n_tokens, n_sub);
  const auto* base = static_cast<const Block*>(w.data);
  auto tile = [&]<int N>(int64_t r) {
    const int64_t tile_bytes = N * blocks_per_row * static_cast<int64_t>(sizeof(Block));
    const int64_t ahead = tile_bytes * ((kMinPrefetchBytes + tile_bytes - 1) / tile_bytes);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* f = floats + t * avx2::kActFloatsPerBlock * n_sub;
      const TokenActs acts{act + t * n_sub, f, f + n_sub, f + 2 * n_sub};
      Dot<N>::run(base + r * blocks_per_row, blocks_per_row, acts, ahead, y + t * w.rows + r);
    }
  };
  int64_t r = row_begin;
  for (; r + kRowTile <= row_end; r += kRowTile) tile.template operator()<kRowTile>(r);
  for (; r < row_end; ++r) tile.template operator()<1>(r);
}

template <int N>
struct Q4_0Dot {
  static void run(const BlockQ4_0* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_q4_0<N>(row, n, t, ahead, out);
  }
};
// The pairwise loop's types (Q8_0, Q4_1, Q5_0, Q5_1): Pairwise<R>::Dot.
template <class R>
struct Pairwise {
  template <int N>
  struct Dot {
    static void run(const typename R::Block* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
      dot_rows_32<R, N>(row, n, t, ahead, out);
    }
  };
};
template <int N>
struct Q4_KDot {
  static void run(const BlockQ4_K* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_k45<BlockQ4_K, N>(row, n, t, ahead, out);
  }
};
template <int N>
struct Q5_KDot {
  static void run(const BlockQ5_K* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_k45<BlockQ5_K, N>(row, n, t, ahead, out);
  }
};
template <int N>
struct IQ4_NLDot {
  static void run(const BlockIQ4_NL* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_q4_0<N, true>(reinterpret_cast<const BlockQ4_0*>(row), n, t, ahead, out);
  }
};
template <int N>
struct Q3_KDot {
  static void run(const BlockQ3_K* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_k23<N, true>(row, n, t, ahead, out);
  }
};
template <int N>
struct Q2_KDot {
  static void run(const BlockQ2_K* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_k23<N, false>(row, n, t, ahead, out);
  }
};
template <int N>
struct IQ4_XSDot {
  static void run(const BlockIQ4_XS* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_iq4_xs<N>(row, n, t, ahead, out);
  }
};
template <int N>
struct Q6_KDot {
  static void run(const BlockQ6_K* row, int64_t n, const TokenActs& t, int64_t ahead, float* out) {
    dot_rows_q6_k<N>(row, n, t, ahead, out);
  }
};

}  // namespace

bool decode_supports(DType dtype, int64_t n_tokens) {
  const bool typed = dtype == DType::kQ4_0 || dtype == DType::kQ4_1 || dtype == DType::kQ5_0 ||
                     dtype == DType::kQ5_1 || dtype == DType::kQ8_0 || dtype == DType::kQ4_K ||
                     dtype == DType::kQ5_K || dtype == DType::kQ6_K || dtype == DType::kQ3_K ||
                     dtype == DType::kQ2_K || dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS;
  return typed && n_tokens >= 1 && n_tokens <= kDecodeMaxTokens;
}

void matmul_rows_decode(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                        int64_t row_begin, int64_t row_end) {
  const int64_t n_sub = w.cols / kQK, n_super = w.cols / kQKK;
  switch (w.dtype) {
    case DType::kQ4_0:
      return rows_tokens<BlockQ4_0, Q4_0Dot>(w, act, n_tokens, y, row_begin, row_end, n_sub);
    case DType::kQ4_1:
      return rows_tokens<BlockQ4_1, Pairwise<OffsetRow<BlockQ4_1>>::Dot>(w, act, n_tokens, y, row_begin, row_end,
                                                                          n_sub);
    case DType::kQ5_0:
      return rows_tokens<BlockQ5_0, Pairwise<OffsetRow<BlockQ5_0>>::Dot>(w, act, n_tokens, y, row_begin, row_end,
                                                                          n_sub);
    case DType::kQ5_1:
      return rows_tokens<BlockQ5_1, Pairwise<OffsetRow<BlockQ5_1>>::Dot>(w, act, n_tokens, y, row_begin, row_end,
                                                                          n_sub);
    case DType::kQ8_0:
      return rows_tokens<BlockQ8_0, Pairwise<Q8_0Row>::Dot>(w, act, n_tokens, y, row_begin, row_end, n_sub);
    case DType::kQ4_K:
      return rows_tokens<BlockQ4_K, Q4_KDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    case DType::kQ5_K:
      return rows_tokens<BlockQ5_K, Q5_KDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    case DType::kQ6_K:
      return rows_tokens<BlockQ6_K, Q6_KDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    case DType::kQ3_K:
      return rows_tokens<BlockQ3_K, Q3_KDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    case DType::kQ2_K:
      return rows_tokens<BlockQ2_K, Q2_KDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    case DType::kIQ4_NL:
      return rows_tokens<BlockIQ4_NL, IQ4_NLDot>(w, act, n_tokens, y, row_begin, row_end, n_sub);
    case DType::kIQ4_XS:
      return rows_tokens<BlockIQ4_XS, IQ4_XSDot>(w, act, n_tokens, y, row_begin, row_end, n_super);
    default:
      return;
  }
}

}  // namespace llmpack::kernels::avx512
