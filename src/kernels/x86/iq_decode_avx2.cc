// AVX2 decode of the codebook types, a token at a time (1 to 3 tokens): each
// group of 32 weights is built in registers from its codebook entries, sign
// bits and scales, and multiplied with the token's int8 activations at once;
// nothing is unpacked to memory (the several-token kernel,
// x86/matmul_iq_avx2.cc, unpacks chunks of rows once for all tokens instead).
//
// A group of 32 weights w = f * s[e / 16] * |w'| * sign, with f a float per
// super-block (from d), s a small odd integer per 16 weights and |w'| unsigned
// bytes: its sum against activations q (scale ad) is
//   f * ad * sum_e s[e / 16] * |w'[e]| * (sign[e] * q[e]),
// the signs applied to the activations, |w'| x signed q as maddubs, the
// integer scales as madd's int16 factors; the int32 sums of a super-block
// turn to float once, times f and the activations' scale (one per 256,
// ActSuper).
#include <algorithm>
#include <array>

#include "kernels/iq_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

// One group of 32 weights in registers: unsigned magnitudes, the signs as
// bytes whose sign is the weight's (_mm256_sign_epi8's operand: every byte
// nonzero), and the int16 scale of each madd lane (lanes 0..7 cover weights
// 0..15, lanes 8..15 weights 16..31).
struct IqGroup32 {
  __m256i magnitude;
  __m256i sign;
  __m256i scale;
};

// Bytes j = 0..7 of entry s: -1 where bit j of s is set, else +1.
constexpr std::array<uint64_t, 256> iqd_make_sign_bytes() {
  std::array<uint64_t, 256> m{};
  for (int s = 0; s < 256; ++s)
    for (int j = 0; j < 8; ++j) m[s] |= uint64_t{((s >> j) & 1) ? 0xFFu : 0x01u} << (8 * j);
  return m;
}
constexpr std::array<uint64_t, 256> kIqdSignBytes = iqd_make_sign_bytes();

// The same for 7 stored sign bits, the eighth making the count of negative
// weights even (iq_signs_of_7 without a popcount per group).
constexpr std::array<uint64_t, 128> iqd_make_even_sign_bytes() {
  std::array<uint64_t, 128> m{};
  for (int s = 0; s < 128; ++s) {
    int parity = 0;
    for (int j = 0; j < 7; ++j) parity ^= (s >> j) & 1;
    m[s] = kIqdSignBytes[s | (parity << 7)];
  }
  return m;
}
constexpr std::array<uint64_t, 128> kIqdEvenSignBytes = iqd_make_even_sign_bytes();

inline __m256i iqd_u64x4(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  return _mm256_setr_epi64x(static_cast<long long>(a), static_cast<long long>(b), static_cast<long long>(c),
                            static_cast<long long>(d));
}
inline uint64_t iqd_grid8(const IqGrid8& g) {
  uint64_t v;
  std::memcpy(&v, g.data(), 8);
  return v;
}
inline int iqd_grid4(const IqGrid4& g) {
  int v;
  std::memcpy(&v, g.data(), 4);
  return v;
}
inline __m256i iqd_scale(int lo, int hi) {  // weights 0..15 scaled by lo, 16..31 by hi
  return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(static_cast<int16_t>(lo))),
                                 _mm_set1_epi16(static_cast<int16_t>(hi)), 1);
}

// Each type's groups: `factor` is f (d and the type's constant), `prepare`
// the work done once a super-block before its groups (most types have none),
// `group(b, prepared, g)` the registers of group of 32 g (layouts in
// kernels/iq_blocks.h).
struct IqdNoPreparation {
  struct Prepared {};
  template <class Block>
  static void prepare(const Block&, Prepared&) {}
};
struct Iq2xxs : IqdNoPreparation {
  using Block = BlockIQ2_XXS;
  static float factor(const Block& b) { return _cvtsh_ss(b.d) * 0.125f; }  // d (0.5 + s) / 4 = d / 8 (2s + 1)
  static IqGroup32 group(const Block& b, const Prepared&, int g) {
    const auto* idx = reinterpret_cast<const uint8_t*>(b.qs + 4 * g);
    const uint32_t hi = iq_load_u32(idx + 4);
    return {iqd_u64x4(iqd_grid8(kIq2xxsGrid[idx[0]]), iqd_grid8(kIq2xxsGrid[idx[1]]), iqd_grid8(kIq2xxsGrid[idx[2]]),
                      iqd_grid8(kIq2xxsGrid[idx[3]])),
            iqd_u64x4(kIqdEvenSignBytes[hi & 127], kIqdEvenSignBytes[(hi >> 7) & 127],
                      kIqdEvenSignBytes[(hi >> 14) & 127], kIqdEvenSignBytes[(hi >> 21) & 127]),
            _mm256_set1_epi16(static_cast<int16_t>(2 * (hi >> 28) + 1))};
  }
};

struct Iq2xs : IqdNoPreparation {
  using Block = BlockIQ2_XS;
  static float factor(const Block& b) { return _cvtsh_ss(b.d) * 0.125f; }
  static IqGroup32 group(const Block& b, const Prepared&, int g) {
    const uint16_t* v = b.qs + 4 * g;
    return {iqd_u64x4(iqd_grid8(kIq2xsGrid[v[0] & 511]), iqd_grid8(kIq2xsGrid[v[1] & 511]),
                      iqd_grid8(kIq2xsGrid[v[2] & 511]), iqd_grid8(kIq2xsGrid[v[3] & 511])),
            iqd_u64x4(kIqdEvenSignBytes[v[0] >> 9], kIqdEvenSignBytes[v[1] >> 9], kIqdEvenSignBytes[v[2] >> 9],
                      kIqdEvenSignBytes[v[3] >> 9]),
            iqd_scale(2 * (b.scales[g] & 15) + 1, 2 * (b.scales[g] >> 4) + 1)};
  }
};

// Grid indices whose high bits sit in qh, kPerByte indices to a qh byte
// (8 / kPerByte bits each, from bit 0 up): index k = qs[k] | field k of
// qh[k / kPerByte] << 8, for k < count (a multiple of 16). 16 indices a step:
// the step's qh bytes repeated for their indices by a shuffle, each field
// lifted to the top of its 16-bit lane's low byte by a multiply with a power
// of two, masked, and moved up to bit 8 over the qs byte.
template <int kPerByte>
void iqd_qh_indices(const uint8_t* qs, const uint8_t* qh_bytes, int count, uint16_t* out) {
  constexpr int kBits = 8 / kPerByte;
  alignas(16) static constexpr std::array<uint8_t, 16> kRepeat = [] {
    std::array<uint8_t, 16> r{};
    for (int i = 0; i < 16; ++i) r[i] = static_cast<uint8_t>(i / kPerByte);
    return r;
  }();
  alignas(32) static constexpr std::array<int16_t, 16> kToTop = [] {
    std::array<int16_t, 16> m{};
    for (int i = 0; i < 16; ++i) m[i] = static_cast<int16_t>(1 << (8 - kBits * (i % kPerByte + 1)));
    return m;
  }();
  const __m128i qh = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(qh_bytes));
  const __m128i repeat = _mm_load_si128(reinterpret_cast<const __m128i*>(kRepeat.data()));
  const __m256i to_top = _mm256_load_si256(reinterpret_cast<const __m256i*>(kToTop.data()));
  const __m256i top = _mm256_set1_epi16(static_cast<int16_t>(((1 << kBits) - 1) << (8 - kBits)));
  for (int step = 0; step < count / 16; ++step) {
    const __m128i bytes =
        _mm_shuffle_epi8(qh, _mm_add_epi8(repeat, _mm_set1_epi8(static_cast<char>(step * 16 / kPerByte))));
    const __m256i field = _mm256_and_si256(_mm256_mullo_epi16(_mm256_cvtepu8_epi16(bytes), to_top), top);
    const __m128i low = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16 * step));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 16 * step),
                       _mm256_or_si256(_mm256_slli_epi16(field, kBits), _mm256_cvtepu8_epi16(low)));
  }
}

struct Iq2s {
  using Block = BlockIQ2_S;
  static float factor(const Block& b) { return _cvtsh_ss(b.d) * 0.125f; }
  // The 10-bit indices of the 32 groups of 8: qs[k] | bits 2 (k % 4), +1 of
  // qh[k / 4] as bits 8, 9.
  struct Prepared {
    alignas(32) uint16_t index[32];
  };
  static void prepare(const Block& b, Prepared& p) { iqd_qh_indices<4>(b.qs, b.qh, 32, p.index); }
  static IqGroup32 group(const Block& b, const Prepared& p, int g) {
    const uint16_t* index = p.index + 4 * g;
    const uint8_t* signs = b.qs + 32 + 4 * g;
    return {iqd_u64x4(iqd_grid8(kIq2sGrid[index[0]]), iqd_grid8(kIq2sGrid[index[1]]), iqd_grid8(kIq2sGrid[index[2]]),
                      iqd_grid8(kIq2sGrid[index[3]])),
            iqd_u64x4(kIqdSignBytes[signs[0]], kIqdSignBytes[signs[1]], kIqdSignBytes[signs[2]],
                      kIqdSignBytes[signs[3]]),
            iqd_scale(2 * (b.scales[g] & 15) + 1, 2 * (b.scales[g] >> 4) + 1)};
  }
};

struct Iq3xxs : IqdNoPreparation {
  using Block = BlockIQ3_XXS;
  static float factor(const Block& b) { return _cvtsh_ss(b.d) * 0.25f; }  // d (0.5 + s) / 2 = d / 4 (2s + 1)
  static IqGroup32 group(const Block& b, const Prepared&, int g) {
    const uint8_t* idx = b.qs + 8 * g;
    const uint32_t hi = iq_load_u32(b.qs + 64 + 4 * g);
    return {_mm256_setr_epi32(iqd_grid4(kIq3xxsGrid[idx[0]]), iqd_grid4(kIq3xxsGrid[idx[1]]),
                              iqd_grid4(kIq3xxsGrid[idx[2]]), iqd_grid4(kIq3xxsGrid[idx[3]]),
                              iqd_grid4(kIq3xxsGrid[idx[4]]), iqd_grid4(kIq3xxsGrid[idx[5]]),
                              iqd_grid4(kIq3xxsGrid[idx[6]]), iqd_grid4(kIq3xxsGrid[idx[7]])),
            iqd_u64x4(kIqdEvenSignBytes[hi & 127], kIqdEvenSignBytes[(hi >> 7) & 127],
                      kIqdEvenSignBytes[(hi >> 14) & 127], kIqdEvenSignBytes[(hi >> 21) & 127]),
            _mm256_set1_epi16(static_cast<int16_t>(2 * (hi >> 28) + 1))};
  }
};

struct Iq3s {
  using Block = BlockIQ3_S;
  static float factor(const Block& b) { return _cvtsh_ss(b.d); }  // d (1 + 2s)
  // The 9-bit indices of the 64 quads: qs[q] | bit q % 8 of qh[q / 8] as bit 8.
  struct Prepared {
    alignas(32) uint16_t index[64];
  };
  static void prepare(const Block& b, Prepared& p) { iqd_qh_indices<8>(b.qs, b.qh, 64, p.index); }
  static IqGroup32 group(const Block& b, const Prepared& p, int g) {
    const uint16_t* index = p.index + 8 * g;
    const auto entry = [&](int quad) { return iqd_grid4(kIq3sGrid[index[quad]]); };
    const uint8_t* signs = b.signs + 4 * g;
    const int s = 2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 15) + 1;
    return {_mm256_setr_epi32(entry(0), entry(1), entry(2), entry(3), entry(4), entry(5), entry(6), entry(7)),
            iqd_u64x4(kIqdSignBytes[signs[0]], kIqdSignBytes[signs[1]], kIqdSignBytes[signs[2]],
                      kIqdSignBytes[signs[3]]),
            _mm256_set1_epi16(static_cast<int16_t>(s))};
  }
};

// IQ1: weights 8 g +/- 1 (g in {-1, 0, 1}, so never 0): the grid entries of
// kIq1sGridTimes8 plus the deltas' +/-1 bytes; magnitude and sign from that.
inline IqGroup32 iqd_iq1_group(__m256i grid_times8, __m256i delta, __m256i scale) {
  const __m256i w = _mm256_add_epi8(grid_times8, delta);
  return {_mm256_abs_epi8(w), w, scale};
}
inline uint64_t iqd_iq1_grid(int index) {
  uint64_t v;
  std::memcpy(&v, kIq1sGridTimes8[index].data(), 8);
  return v;
}

struct Iq1s {
  using Block = BlockIQ1_S;
  static float factor(const Block& b) { return _cvtsh_ss(b.d) * 0.125f; }  // d (2s + 1) (g +/- 1/8)
  // The 11-bit indices of the 32 groups of 8: qs[k] | bits 3 (k % 4)..+2 of
  // the uint16 qh[k / 4] as bits 8..10 (each qh repeated for its 4 groups,
  // its field lifted to bits 13..15, then moved down to 8..10).
  struct Prepared {
    alignas(32) uint16_t index[32];
  };
  static void prepare(const Block& b, Prepared& p) {
    const __m256i to_top = _mm256_setr_epi16(1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4,
                                             1 << 13, 1 << 10, 1 << 7, 1 << 4, 1 << 13, 1 << 10, 1 << 7, 1 << 4);
    for (int half = 0; half < 2; ++half) {
      // qh[4 half .. 4 half + 3], each uint16 repeated 4 times
      const __m256i qh = _mm256_shuffle_epi8(
          _mm256_broadcastsi128_si256(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qh + 4 * half))),
          _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3,    // lane 0: uint16 0, 1
                           4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7));  // lane 1: uint16 2, 3
      const __m256i field = _mm256_srli_epi16(
          _mm256_and_si256(_mm256_mullo_epi16(qh, to_top), _mm256_set1_epi16(static_cast<int16_t>(0xE000))), 5);
      const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16 * half));
      _mm256_store_si256(reinterpret_cast<__m256i*>(p.index + 16 * half),
                         _mm256_or_si256(field, _mm256_cvtepu8_epi16(qs)));
    }
  }
  static IqGroup32 group(const Block& b, const Prepared& p, int g) {
    const int qh = b.qh[g];
    const uint16_t* index = p.index + 4 * g;
    const __m256i grid = iqd_u64x4(iqd_iq1_grid(index[0]), iqd_iq1_grid(index[1]), iqd_iq1_grid(index[2]),
                                   iqd_iq1_grid(index[3]));
    const __m256i delta = _mm256_set1_epi8(static_cast<char>((qh & 0x8000) ? -1 : 1));
    return iqd_iq1_group(grid, delta, _mm256_set1_epi16(static_cast<int16_t>(2 * ((qh >> 12) & 7) + 1)));
  }
};

struct Iq1m {
  using Block = BlockIQ1_M;
  static float factor(const Block& b) { return _cvtsh_ss(iq1m_d_bits(b)) * 0.125f; }
  // The deltas of group of 32 g: qh[2g] and qh[2g + 1] hold a nibble per group
  // of 8 (3 index bits, then the delta's sign bit): all 16 bits broadcast, each
  // 64-bit lane tests its nibble's bit 3, -1 bytes where set, else +1.
  static __m256i deltas(const Block& b, int g) {
    const __m256i nibbles = _mm256_set1_epi16(static_cast<int16_t>(iq_load_u16(b.qh + 2 * g)));
    const __m256i bit = _mm256_setr_epi64x(0x8, 0x80, 0x800, 0x8000);
    const __m256i minus = _mm256_cmpeq_epi64(_mm256_and_si256(nibbles, bit), bit);
    return _mm256_or_si256(minus, _mm256_set1_epi8(1));
  }
  // The 3-bit scales of weights 0..15 and 16..31 of group g (iq1m_scale's
  // h = 2g, 2g + 1), as 2s + 1 in every int16 lane of their half: the scales'
  // uint16 g / 2 in both halves of each 32-bit lane, each lane shifted by its
  // field's offset (bits shifted in from the copy above stay clear of bits 0..2).
  static __m256i scales(const Block& b, int g) {
    const __m256i word = _mm256_set1_epi16(static_cast<int16_t>(iq_load_u16(b.scales + 2 * (g / 2))));
    const __m256i shift =
        (g % 2) ? _mm256_setr_epi32(6, 6, 6, 6, 9, 9, 9, 9) : _mm256_setr_epi32(0, 0, 0, 0, 3, 3, 3, 3);
    const __m256i s = _mm256_and_si256(_mm256_srlv_epi32(word, shift), _mm256_set1_epi16(7));
    return _mm256_or_si256(_mm256_slli_epi16(s, 1), _mm256_set1_epi16(1));
  }
  // The 11-bit grid indices of the super-block's 32 groups of 8: qs[k] as the
  // low byte, nibble k of qh (k even: low nibble of qh[k / 2]) & 7 as the high.
  struct Prepared {
    alignas(16) uint16_t index[32];
  };
  static void prepare(const Block& b, Prepared& p) {
    const __m128i qh = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qh));
    const __m128i seven = _mm_set1_epi8(7);
    const __m128i low = _mm_and_si128(qh, seven), high = _mm_and_si128(_mm_srli_epi16(qh, 4), seven);
    const __m128i nib0 = _mm_unpacklo_epi8(low, high), nib1 = _mm_unpackhi_epi8(low, high);  // groups 0..15, 16..31
    const __m128i qs0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs));
    const __m128i qs1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + 16));
    auto* out = reinterpret_cast<__m128i*>(p.index);
    _mm_store_si128(out + 0, _mm_unpacklo_epi8(qs0, nib0));
    _mm_store_si128(out + 1, _mm_unpackhi_epi8(qs0, nib0));
    _mm_store_si128(out + 2, _mm_unpacklo_epi8(qs1, nib1));
    _mm_store_si128(out + 3, _mm_unpackhi_epi8(qs1, nib1));
  }
  static IqGroup32 group(const Block& b, const Prepared& p, int g) {
    const uint16_t* index = p.index + 4 * g;
    const __m256i grid = iqd_u64x4(iqd_iq1_grid(index[0]), iqd_iq1_grid(index[1]), iqd_iq1_grid(index[2]),
                                   iqd_iq1_grid(index[3]));
    return iqd_iq1_group(grid, deltas(b, g), scales(b, g));
  }
};

// One row's dots with kTokens tokens (their activations a scale per 256):
// per super-block, each group of 32 weights built once for every token, each
// token's 8 groups' int32 sums added up in integers, then one convert and FMA
// by the block's factor times that token's activation scale. `flip` undoes
// the a + 128 form the preparation stores for 4 tokens and more (a ^ 0x80 as
// bytes). A token's dot has the same bits whatever kTokens is.
template <class Type, int kTokens>
void iqd_row(const uint8_t* row, int64_t n_super, const ActSuper* const* token, __m256i flip, float* out) {
  const auto* blocks = reinterpret_cast<const typename Type::Block*>(row);
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  typename Type::Prepared prepared;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const auto& b = blocks[sb];
    __m256i block_sums[kTokens];
    for (int t = 0; t < kTokens; ++t) block_sums[t] = _mm256_setzero_si256();
    Type::prepare(b, prepared);
#pragma GCC unroll 8  // g a constant in each copy: the groups' offsets and shifts fold
    for (int g = 0; g < 8; ++g) {
      const IqGroup32 w = Type::group(b, prepared, g);
      for (int t = 0; t < kTokens; ++t) {
        const __m256i a = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(token[t][sb].q + 32 * g)),
                                           flip);
        const __m256i q = _mm256_sign_epi8(a, w.sign);
        block_sums[t] =
            _mm256_add_epi32(block_sums[t], _mm256_madd_epi16(_mm256_maddubs_epi16(w.magnitude, q), w.scale));
      }
    }
    const float factor = Type::factor(b);
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_sums[t]), _mm256_set1_ps(factor * token[t][sb].d), acc[t]);
  }
  for (int t = 0; t < kTokens; ++t) out[t] = hsum(acc[t]);
}

template <class Type, int kTokens>
void iqd_rows(const WeightMatrix& w, const ActSuper* const* token, __m256i flip, float* y, int64_t row_begin,
              int64_t row_end) {
  const int64_t n_super = w.cols / kQKK;
  const int64_t stride = n_super * static_cast<int64_t>(sizeof(typename Type::Block));
  const auto* data = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    float dots[kTokens];
    iqd_row<Type, kTokens>(data + r * stride, n_super, token, flip, dots);
    for (int t = 0; t < kTokens; ++t) y[t * w.rows + r] = dots[t];
  }
}

template <class Type>
void iqd_rows_tokens(const WeightMatrix& w, const ActSuper* const* token, int64_t n_tokens, __m256i flip, float* y,
                     int64_t row_begin, int64_t row_end) {
  switch (n_tokens) {
    case 1: return iqd_rows<Type, 1>(w, token, flip, y, row_begin, row_end);
    case 2: return iqd_rows<Type, 2>(w, token, flip, y, row_begin, row_end);
    case 3: return iqd_rows<Type, 3>(w, token, flip, y, row_begin, row_end);
    default: return iqd_rows<Type, 4>(w, token, flip, y, row_begin, row_end);
  }
}

}  // namespace

void iq_decode_rows(const WeightMatrix& w, const ActSuper* tokens, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end) {
  const int64_t n_super = w.cols / kQKK;
  // as the preparation stored them (quantize_activations_super's offset)
  const __m256i flip = _mm256_set1_epi8(n_tokens >= kIqRegisterDecodeBelow ? static_cast<char>(0x80) : 0);
  constexpr int64_t kPass = 4;  // tokens a pass over the rows (iqd_rows' largest tile)
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kPass) {
    const int64_t n = std::min(kPass, n_tokens - t0);
    const ActSuper* token[kPass];
    for (int64_t t = 0; t < n; ++t) token[t] = tokens + (t0 + t) * n_super;
    float* out = y + t0 * w.rows;
    switch (w.dtype) {
      case DType::kIQ2_XXS: iqd_rows_tokens<Iq2xxs>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ2_XS: iqd_rows_tokens<Iq2xs>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ2_S: iqd_rows_tokens<Iq2s>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ3_XXS: iqd_rows_tokens<Iq3xxs>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ3_S: iqd_rows_tokens<Iq3s>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ1_S: iqd_rows_tokens<Iq1s>(w, token, n, flip, out, row_begin, row_end); break;
      case DType::kIQ1_M: iqd_rows_tokens<Iq1m>(w, token, n, flip, out, row_begin, row_end); break;
      default: return;
    }
  }
}

}  // namespace llmpack::kernels::avx2
