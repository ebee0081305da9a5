// AVX-512 VBMI decode of the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS
// and IQ3_S, a token at a time (1 to 3 tokens): a super-block's 256 weights
// are built in four zmm registers from its indices, signs and scales by
// permutes, with no table read per group of weights through a scalar load.
// (IQ1_S and IQ1_M, 2048 entries, stay on the AVX2 kernel.)
//
// The AVX2 register kernel (x86/iq_decode_avx2.cc) loads each group of 8
// weights' codebook entries and sign bytes from tables one at a time (64 to
// 96 scalar loads and the inserts that put them in vectors, a super-block)
// and was bound by that, not by memory. Here every lookup is a permute:
//   - the grid indices (one per 8 weights for IQ2_*, per 4 for IQ3_*) look
//     up their codebook entry's level code (2 bits a weight for IQ2_*, 3 for
//     IQ3_*; the codes of iq_grids_data.inc) in tables held in registers or
//     read as whole vectors: vpermi2b on 128 bytes (or vpermi2w on 64 words)
//     a lookup, the index's higher bits choosing among lookups by blends;
//   - vpmultishiftqb spreads a qword's codes over its 8 bytes, one level in
//     the low bits of each, and vpermb maps the levels to their magnitudes;
//   - the sign bytes (IQ2_S, IQ3_S: stored; IQ2_XXS, IQ2_XS, IQ3_XXS: 7 bits
//     cut out by vpmultishiftqb, the eighth, making the count of negative
//     weights even, added by vpermi2b on a 128-entry table) are lifted bit by
//     bit to the top of each byte by another vpmultishiftqb, and vpmovb2m
//     makes that the mask that negates each activation;
//   - magnitudes times signed activations by vpmaddubsw (pairs in int16,
//     <= 2 x 62 x 127), and vpdpwssd multiplies the pairs by their scale
//     2s + 1 into int32 lanes; one convert and FMA a super-block.
// The sums are exact integers, as the AVX2 kernel's: the two agree to float
// rounding (MatmulIqTest holds both to the exact dot of the activations).
// docs/PERFORMANCE.md section 67 has the measurements.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/iq_blocks.h"
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {
namespace {

#include "kernels/iq_grids_data.inc"  // kIq2xxsCodes, ...: each codebook entry's levels

using avx2::ActSuper;

inline __m512i load64(const void* p) { return _mm512_load_si512(p); }

// A codebook's level codes (kIq2xxsCodes: 8 levels of 2 bits; kIq3xxsCodes
// and kIq3sCodes: 4 levels of 3 bits) as two byte tables, 64-byte aligned for
// zmm loads: 128 entries a vpermi2b.
template <size_t N>
struct alignas(64) ByteCodeTables {
  std::array<uint8_t, N> low, high;
};
template <size_t N>
constexpr ByteCodeTables<N> make_byte_code_tables(const uint16_t (&codes)[N]) {
  ByteCodeTables<N> t{};
  for (size_t i = 0; i < N; ++i) {
    t.low[i] = static_cast<uint8_t>(codes[i] & 0xFF);
    t.high[i] = static_cast<uint8_t>(codes[i] >> 8);
  }
  return t;
}
constexpr ByteCodeTables<256> kIq2xxsTables = make_byte_code_tables(kIq2xxsCodes);
constexpr ByteCodeTables<256> kIq3xxsTables = make_byte_code_tables(kIq3xxsCodes);
constexpr ByteCodeTables<512> kIq3sTables = make_byte_code_tables(kIq3sCodes);

// IQ2_XS's 512 and IQ2_S's 1024 codes as 16-bit words, for vpermi2w (64
// entries a lookup).
template <size_t N>
struct alignas(64) WordCodeTable {
  std::array<uint16_t, N> codes;
};
template <size_t N>
constexpr WordCodeTable<N> make_word_code_table(const uint16_t (&codes)[N]) {
  WordCodeTable<N> t{};
  for (size_t i = 0; i < N; ++i) t.codes[i] = codes[i];
  return t;
}
constexpr WordCodeTable<512> kIq2xsTable = make_word_code_table(kIq2xsCodes);
constexpr WordCodeTable<1024> kIq2sTable = make_word_code_table(kIq2sCodes);

// The codes of the words of `index` (their low 10 bits; entries below N):
// N / 64 vpermi2w of 64 entries each (index bit 5 choosing between their two
// tables), then a tree of blends on index bits 6, 7, ...
template <size_t N>
__m512i lookup_codes(const WordCodeTable<N>& table, __m512i index) {
  constexpr int kLookups = static_cast<int>(N / 64);
  __m512i level[kLookups];
  for (int t = 0; t < kLookups; ++t) {
    const uint16_t* entries = table.codes.data() + 64 * t;
    level[t] = _mm512_permutex2var_epi16(load64(entries), index, load64(entries + 32));
  }
  for (int n = kLookups, bit = 6; n > 1; n /= 2, ++bit) {
    const __mmask32 set = _mm512_test_epi16_mask(index, _mm512_set1_epi16(static_cast<int16_t>(1 << bit)));
    for (int t = 0; t < n / 2; ++t) level[t] = _mm512_mask_blend_epi16(set, level[2 * t], level[2 * t + 1]);
  }
  return level[0];
}

// Lane i: byte table[index byte i] of a 256-byte table given as four zmm,
// two vpermi2b of 128 entries, the index's top bit (`upper`) choosing.
inline __m512i lookup256(const __m512i (&table)[4], __m512i index, __mmask64 upper) {
  return _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(table[0], index, table[1]),
                                _mm512_permutex2var_epi8(table[2], index, table[3]));
}
inline void load_table256(const uint8_t* bytes, __m512i (&table)[4]) {
  for (int i = 0; i < 4; ++i) table[i] = load64(bytes + 64 * i);
}

// The codes' bytes of 64 indices at once: vpermi2b on 128-entry tables held
// in registers, each index's top bit choosing the half.
struct CodeLookup {
  __m512i low[4], high[4];
  explicit CodeLookup(const ByteCodeTables<256>& t) {
    load_table256(t.low.data(), low);
    load_table256(t.high.data(), high);
  }
  // Lane i of low_out / high_out: the low / high byte of the code of index byte i.
  void operator()(__m512i index, __m512i& low_out, __m512i& high_out) const {
    const __mmask64 upper = _mm512_movepi8_mask(index);  // entries 128..255
    low_out = lookup256(low, index, upper);
    high_out = lookup256(high, index, upper);
  }
};

// Tables and controls the types share.
struct alignas(64) SharedTables {
  std::array<uint8_t, 128> even_signs;       // 7 sign bits | their parity << 7
  std::array<uint8_t, 64> iq2_magnitude;     // level (i & 3) -> 8, 25, 43 (3 never occurs)
  std::array<uint8_t, 64> iq3_magnitude;     // level (i & 7) -> 4, 12, ..., 52, 62
  std::array<uint8_t, 64> iq3s_magnitude;    // level (i & 7) -> 1, 3, ..., 15
  // per qword (one group of 32), for the sign word at bit 32 (IQ2_XXS) or 0
  // (IQ3_XXS): bytes j < 4 start at the word's bit 7j, the sign field of its
  // group of 8 number j in their low 7 bits
  std::array<uint8_t, 64> sign_shift_at32, sign_shift_at0;
  // IQ2_XS, per qword (4 uint16, one a group of 8): byte j < 4 starts at bit
  // 16j + 9, the 7 sign bits of uint16 j
  std::array<uint8_t, 64> sign_shift_iq2xs;
  // for zmm m, per qword: byte e ends at bit 8m + e, sign e of sign byte m
  // (of that qword's 4) in its top bit
  std::array<std::array<uint8_t, 64>, 4> sign_bit_to_top;
  // IQ2_XXS, per qword: word j = the code of group of 8 j of group g, its
  // low byte from lane 8g + j of the first vpermi2b operand (the codes' low
  // bytes), its high byte from that lane of the second (+64)
  std::array<uint8_t, 64> iq2_join_codes;
  // The IQ2 types, for zmm m, per qword: byte e starts at bit 16m + 2e,
  // level e of code m (of that qword's 4) in its low 2 bits
  std::array<std::array<uint8_t, 64>, 4> iq2_level_shift;
  // IQ3_XXS and IQ3_S, for zmm m, per qword g: words 0 and 1 = the codes of indices
  // 8g + 2m and 8g + 2m + 1 (group of 8 m of group g), low bytes from the
  // first operand, high from the second
  std::array<std::array<uint8_t, 64>, 4> iq3_place_codes;
  // IQ3_XXS and IQ3_S, per qword: byte e starts at bit 3e (e < 4) or 16 + 3 (e - 4),
  // level e in its low 3 bits
  std::array<uint8_t, 64> iq3_level_shift;
};

constexpr SharedTables make_shared_tables() {
  SharedTables t{};
  for (int s = 0; s < 128; ++s) {
    int parity = 0;
    for (int j = 0; j < 7; ++j) parity ^= (s >> j) & 1;
    t.even_signs[s] = static_cast<uint8_t>(s | (parity << 7));
  }
  constexpr uint8_t kIq2Levels[4] = {8, 25, 43, 0};
  constexpr uint8_t kIq3Levels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
  for (int i = 0; i < 64; ++i) {
    t.iq2_magnitude[i] = kIq2Levels[i & 3];
    t.iq3_magnitude[i] = kIq3Levels[i & 7];
    t.iq3s_magnitude[i] = static_cast<uint8_t>(2 * (i & 7) + 1);
    const int e = i % 8, g = i / 8;
    t.sign_shift_at32[i] = static_cast<uint8_t>(e < 4 ? 32 + 7 * e : 0);
    t.sign_shift_at0[i] = static_cast<uint8_t>(e < 4 ? 7 * e : 0);
    t.sign_shift_iq2xs[i] = static_cast<uint8_t>(e < 4 ? 16 * e + 9 : 0);
    const int word = i / 2;
    t.iq2_join_codes[i] = static_cast<uint8_t>(8 * (word / 4) + word % 4 + (i % 2 ? 64 : 0));
    t.iq3_level_shift[i] = static_cast<uint8_t>(e < 4 ? 3 * e : 16 + 3 * (e - 4));
    for (int m = 0; m < 4; ++m) {
      t.sign_bit_to_top[m][i] = static_cast<uint8_t>((8 * m + e - 7) & 63);
      t.iq2_level_shift[m][i] = static_cast<uint8_t>(16 * m + 2 * e);
      const int index = 8 * g + 2 * m + e / 2;  // bytes 0, 1: index 2m; 2, 3: index 2m + 1
      t.iq3_place_codes[m][i] = static_cast<uint8_t>(e < 4 ? index + (e % 2 ? 64 : 0) : 0);
    }
  }
  return t;
}
constexpr SharedTables kShared = make_shared_tables();

// The kernel's order of a super-block's 256 weights: zmm m holds, in qword
// g, group of 8 number m of group of 32 g (weights 32g + 8m .. 32g + 8m + 7).
// Then every zmm's int16 pair lanes 4g..4g+3 belong to group of 32 g, so one
// vector of scales serves all four, and the codes and signs of a zmm sit at
// the same place in every qword. The token's activations are put in this
// order once per call (permute_activations), not once per row.
struct alignas(64) PermutedActs {
  int8_t q[256];
};

// offset: the activations were stored as a + 128 (the prefill kernels'
// form, quantize_activations_super), a ^ 0x80 as bytes: flipped back here.
void permute_activations(const ActSuper* token, int64_t n_super, bool offset, PermutedActs* out) {
  const uint64_t flip = offset ? 0x8080808080808080ull : 0;
  for (int64_t sb = 0; sb < n_super; ++sb)
    for (int m = 0; m < 4; ++m)
      for (int g = 0; g < 8; ++g) {
        uint64_t eight;
        std::memcpy(&eight, token[sb].q + 32 * g + 8 * m, 8);
        eight ^= flip;
        std::memcpy(out[sb].q + 64 * m + 8 * g, &eight, 8);
      }
}

// 2s + 1 in every int16 of qword g, from s in the qword's low 4 bits (and
// zeros above them).
inline __m512i odd_scales(__m512i s) {
  const __m512i scale = _mm512_or_si512(_mm512_slli_epi64(s, 1), _mm512_set1_epi64(1));
  const __m512i scale2 = _mm512_or_si512(scale, _mm512_slli_epi64(scale, 16));
  return _mm512_or_si512(scale2, _mm512_slli_epi64(scale2, 32));
}

// What every type's parts hold besides its codes: lanes 8g + j (j < 4) the
// sign byte of group of 8 j of group of 32 g (bit e set: weight e negative),
// and the scales 2s + 1 of zmm 0, 1 and of zmm 2, 3 (the two halves of each
// group of 32; the same vector where a group of 32 has one scale).
struct SignsAndScales {
  __m512i signs, scales_low, scales_high;
};

// Sign bytes from 7-bit fields in lanes 8g + j (the top bit not read): the
// eighth sign makes the count of negative weights even.
inline __m512i even_signs(__m512i fields) {
  return _mm512_permutex2var_epi8(load64(kShared.even_signs.data()), fields, load64(kShared.even_signs.data() + 64));
}

// IQ2_XXS and IQ3_XXS: qword g of `words` holds group of 32 g's uint32 of
// 4 x 7 sign bits and the scale in its top 4 bits, at bit kWordAt.
template <int kWordAt>
SignsAndScales from_sign_words(__m512i words) {
  const __m512i shift = load64(kWordAt ? kShared.sign_shift_at32.data() : kShared.sign_shift_at0.data());
  const __m512i scales = odd_scales(_mm512_srli_epi64(words, kWordAt + 28));
  return {even_signs(_mm512_multishift_epi64_epi8(shift, words)), scales, scales};
}

// Each type: `parts(b)` does a super-block's per-block work (its codes, and
// its SignsAndScales); `magnitudes(parts, m)` the 64 unsigned weights of zmm
// m. Weight = d x kFactor x (2s + 1) x magnitude x sign.

// The IQ2 types' parts: 2-bit levels 8, 25, 43.
struct Iq2Parts {
  __m512i codes;  // word 4g + j: the code of group of 8 j of group of 32 g
  SignsAndScales signs;
};
inline __m512i iq2_magnitudes(const Iq2Parts& p, int m) {
  const __m512i levels = _mm512_multishift_epi64_epi8(load64(kShared.iq2_level_shift[m].data()), p.codes);
  return _mm512_permutexvar_epi8(levels, load64(kShared.iq2_magnitude.data()));
}

struct Iq2xxsVbmi {
  using Block = BlockIQ2_XXS;
  static constexpr float kFactor = 0.125f;  // d (0.5 + s) / 4
  CodeLookup lookup{kIq2xxsTables};
  __m512i join = load64(kShared.iq2_join_codes.data());
  using Parts = Iq2Parts;
  Parts parts(const Block& b) const {
    const __m512i qs = _mm512_loadu_si512(b.qs);  // qword g: 4 grid indices, then the uint32
    __m512i low, high;
    lookup(qs, low, high);
    return {_mm512_permutex2var_epi8(low, join, high), from_sign_words<32>(qs)};
  }
  __m512i magnitudes(const Parts& p, int m) const { return iq2_magnitudes(p, m); }
};

// The IQ3 types' parts: 3-bit levels, two codes to a group of 8.
struct Iq3Parts {
  __m512i low, high;  // lane i: the code bytes of grid index i (group of 32 i / 8)
  SignsAndScales signs;
};
inline __m512i iq3_magnitudes(const Iq3Parts& p, int m, __m512i level_shift, __m512i magnitude) {
  const __m512i codes = _mm512_permutex2var_epi8(p.low, load64(kShared.iq3_place_codes[m].data()), p.high);
  return _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(level_shift, codes), magnitude);
}

struct Iq3xxsVbmi {
  using Block = BlockIQ3_XXS;
  static constexpr float kFactor = 0.25f;  // d (0.5 + s) / 2
  CodeLookup lookup{kIq3xxsTables};
  __m512i level_shift = load64(kShared.iq3_level_shift.data()), magnitude = load64(kShared.iq3_magnitude.data());
  using Parts = Iq3Parts;
  Parts parts(const Block& b) const {
    Parts p;
    lookup(_mm512_loadu_si512(b.qs), p.low, p.high);
    // qword g: the uint32 of group of 32 g (they follow the 64 indices)
    p.signs = from_sign_words<0>(
        _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 64))));
    return p;
  }
  __m512i magnitudes(const Parts& p, int m) const { return iq3_magnitudes(p, m, level_shift, magnitude); }
};

// The scales of IQ2_XS and IQ2_S: scales[g] holds group of 32 g's, the low
// nibble for its groups of 8 0 and 1 (zmm 0, 1), the high one for 2 and 3.
struct HalfGroupScales {
  __m512i low, high;
};
inline HalfGroupScales half_group_scales(const uint8_t* scales) {
  const __m512i bytes = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales)));
  return {odd_scales(_mm512_and_si512(bytes, _mm512_set1_epi64(15))), odd_scales(_mm512_srli_epi64(bytes, 4))};
}

// IQ2_XS: qword g of qs is group of 32 g's 4 uint16, each a 9-bit index
// (512 entries: 8 vpermi2w of 64 words, selected by index bits 6, 7 and 8)
// and 7 sign bits; scales[g] holds the scales of its two halves.
struct Iq2xsVbmi {
  using Block = BlockIQ2_XS;
  static constexpr float kFactor = 0.125f;  // d (0.5 + s) / 4
  __m512i sign_shift = load64(kShared.sign_shift_iq2xs.data());
  using Parts = Iq2Parts;
  Parts parts(const Block& b) const {
    const __m512i qs = _mm512_loadu_si512(b.qs);  // word 4g + j: index bits 0..8, then 7 sign bits
    const HalfGroupScales scales = half_group_scales(b.scales);
    const SignsAndScales signs = {even_signs(_mm512_multishift_epi64_epi8(sign_shift, qs)), scales.low, scales.high};
    return {lookup_codes(kIq2xsTable, qs), signs};
  }
  __m512i magnitudes(const Parts& p, int m) const { return iq2_magnitudes(p, m); }
};

// IQ2_S: group of 8 j of group of 32 g has index qs[4g + j] | bits 2j, 2j + 1
// of qh[g] as bits 8, 9 (1024 entries), its sign byte qs[32 + 4g + j] stored
// whole, and IQ2_XS's scales.
struct Iq2sVbmi {
  using Block = BlockIQ2_S;
  static constexpr float kFactor = 0.125f;  // d (0.5 + s) / 4
  using Parts = Iq2Parts;
  Parts parts(const Block& b) const {
    const __m512i low = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs)));
    // every word of qword g: qh[g]; word j shifted right by 2j, its low 2 bits kept
    const __m512i qh = _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(b.qh)));
    const __m512i qh2 = _mm512_or_si512(qh, _mm512_slli_epi64(qh, 16));
    const __m512i qh4 = _mm512_or_si512(qh2, _mm512_slli_epi64(qh2, 32));
    const __m512i high = _mm512_and_si512(_mm512_srlv_epi16(qh4, _mm512_set1_epi64(0x0006000400020000)),
                                          _mm512_set1_epi16(3));
    const __m512i index = _mm512_or_si512(low, _mm512_slli_epi16(high, 8));
    // qword g: the sign bytes of its 4 groups of 8 in its low 4 bytes
    const __m512i sign_bytes = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32)));
    const HalfGroupScales scales = half_group_scales(b.scales);
    return {lookup_codes(kIq2sTable, index), {sign_bytes, scales.low, scales.high}};
  }
  __m512i magnitudes(const Parts& p, int m) const { return iq2_magnitudes(p, m); }
};

// IQ3_S: IQ3_XXS's layout of codes (4 weights an index, 64 indices), with a
// ninth index bit from qh (bit q of the 8 qh bytes read as one uint64: index
// q's, which selects between two lookups of 256 entries), its sign bytes
// stored whole, and a nibble scale per group of 32.
struct Iq3sVbmi {
  using Block = BlockIQ3_S;
  static constexpr float kFactor = 1.0f;  // d (1 + 2s)
  __m512i level_shift = load64(kShared.iq3_level_shift.data()), magnitude = load64(kShared.iq3s_magnitude.data());
  using Parts = Iq3Parts;
  // a 256-entry half of a code byte table (512 entries), read from memory
  static __m512i half_lookup(const uint8_t* half, __m512i index, __mmask64 upper) {
    __m512i table[4];
    load_table256(half, table);
    return lookup256(table, index, upper);
  }
  Parts parts(const Block& b) const {
    Parts p;
    const __m512i qs = _mm512_loadu_si512(b.qs);
    const __mmask64 bit7 = _mm512_movepi8_mask(qs);
    uint64_t qh;
    std::memcpy(&qh, b.qh, 8);
    const __mmask64 bit8 = _cvtu64_mask64(qh);
    p.low = _mm512_mask_blend_epi8(bit8, half_lookup(kIq3sTables.low.data(), qs, bit7),
                                   half_lookup(kIq3sTables.low.data() + 256, qs, bit7));
    p.high = _mm512_mask_blend_epi8(bit8, half_lookup(kIq3sTables.high.data(), qs, bit7),
                                    half_lookup(kIq3sTables.high.data() + 256, qs, bit7));
    // qword g: signs[4g..4g+3] in its low bytes; the nibble of scales[g / 2] in its low bits
    p.signs.signs = _mm512_cvtepu32_epi64(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.signs)));
    uint32_t packed;
    std::memcpy(&packed, b.scales, 4);
    const __m128i repeat = _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0);  // byte g: scales[g / 2]
    const __m512i bytes = _mm512_cvtepu8_epi64(_mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<int>(packed)), repeat));
    const __m512i nibbles = _mm512_and_si512(_mm512_srlv_epi64(bytes, _mm512_setr_epi64(0, 4, 0, 4, 0, 4, 0, 4)),
                                             _mm512_set1_epi64(15));
    p.signs.scales_low = p.signs.scales_high = odd_scales(nibbles);
    return p;
  }
  __m512i magnitudes(const Parts& p, int m) const { return iq3_magnitudes(p, m, level_shift, magnitude); }
};

// One row's dots with kTokens tokens: per super-block, four zmm of 64
// weights (built once, for every token: the codes, magnitudes and sign
// masks), each token's int32 sums times the group scales, one convert and FMA
// by d x kFactor times that token's activation scale. A token's dot has the
// same bits whatever kTokens is.
template <class Type, int kTokens>
void iq_row(const Type& type, const typename Type::Block* blocks, int64_t n_super, const ActSuper* const* token,
            const PermutedActs* const* acts, float* out) {
  const __m512i zero = _mm512_setzero_si512();
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const typename Type::Block& b = blocks[sb];
    const typename Type::Parts parts = type.parts(b);
    const __m512i signs = parts.signs.signs;
    __m512i sums[kTokens];
    for (int t = 0; t < kTokens; ++t) sums[t] = zero;
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const __m512i sign_bits = _mm512_multishift_epi64_epi8(load64(kShared.sign_bit_to_top[m].data()), signs);
      const __mmask64 negative = _mm512_movepi8_mask(sign_bits);
      const __m512i scales = m < 2 ? parts.signs.scales_low : parts.signs.scales_high;
      const __m512i magnitudes = type.magnitudes(parts, m);
      for (int t = 0; t < kTokens; ++t) {
        const __m512i x = _mm512_load_si512(acts[t][sb].q + 64 * m);
        const __m512i signed_x = _mm512_mask_sub_epi8(x, negative, zero, x);
        sums[t] = _mm512_dpwssd_epi32(sums[t], _mm512_maddubs_epi16(magnitudes, signed_x), scales);
      }
    }
    const float d = _cvtsh_ss(b.d) * Type::kFactor;
    for (int t = 0; t < kTokens; ++t)
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[t]), _mm512_set1_ps(d * token[t][sb].d), acc[t]);
  }
  for (int t = 0; t < kTokens; ++t) {
    alignas(64) float lanes[16];  // summed through memory: GCC 12's reduce intrinsics warn (see CMakeLists.txt)
    _mm512_store_ps(lanes, acc[t]);
    float total = 0.0f;
    for (float v : lanes) total += v;
    out[t] = total;
  }
}

template <class Type, int kTokens>
void iq_rows(const WeightMatrix& w, const ActSuper* const* token, const PermutedActs* const* acts, float* y,
             int64_t row_begin, int64_t row_end) {
  const Type type;
  const int64_t n_super = w.cols / kQKK;
  const auto* data = static_cast<const typename Type::Block*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r) {
    float dots[kTokens];
    iq_row<Type, kTokens>(type, data + r * n_super, n_super, token, acts, dots);
    for (int t = 0; t < kTokens; ++t) y[t * w.rows + r] = dots[t];
  }
}

template <class Type>
void iq_rows_tokens(const WeightMatrix& w, const ActSuper* const* token, const PermutedActs* const* acts,
                    int64_t n_tokens, float* y, int64_t row_begin, int64_t row_end) {
  switch (n_tokens) {
    case 1: return iq_rows<Type, 1>(w, token, acts, y, row_begin, row_end);
    case 2: return iq_rows<Type, 2>(w, token, acts, y, row_begin, row_end);
    case 3: return iq_rows<Type, 3>(w, token, acts, y, row_begin, row_end);
    case 4: return iq_rows<Type, 4>(w, token, acts, y, row_begin, row_end);
    case 5: return iq_rows<Type, 5>(w, token, acts, y, row_begin, row_end);
    case 6: return iq_rows<Type, 6>(w, token, acts, y, row_begin, row_end);
    case 7: return iq_rows<Type, 7>(w, token, acts, y, row_begin, row_end);
    default: return iq_rows<Type, 8>(w, token, acts, y, row_begin, row_end);
  }
}

}  // namespace

bool iq_vbmi_decode_supports(DType dtype) {
  static const bool has_vbmi = __builtin_cpu_supports("avx512vbmi");
  const bool type = dtype == DType::kIQ2_XXS || dtype == DType::kIQ2_XS || dtype == DType::kIQ2_S ||
                    dtype == DType::kIQ3_XXS || dtype == DType::kIQ3_S;
  return type && has_vbmi;
}

void iq_vbmi_decode_rows(const WeightMatrix& w, const ActSuper* tokens, int64_t n_tokens, float* y,
                         int64_t row_begin, int64_t row_end) {
  const int64_t n_super = w.cols / kQKK;
  const bool offset = n_tokens >= avx2::kIqRegisterDecodeBelow;  // as the preparation stored them
  constexpr int64_t kChunk = 8;  // tokens a pass over the rows (iq_rows_tokens' largest tile)
  thread_local std::vector<PermutedActs> permuted;
  if (permuted.size() < static_cast<size_t>(kChunk * n_super)) permuted.resize(static_cast<size_t>(kChunk * n_super));
  for (int64_t t0 = 0; t0 < n_tokens; t0 += kChunk) {
    const int64_t n = std::min(kChunk, n_tokens - t0);
    const ActSuper* token[8];
    const PermutedActs* acts[8];
    for (int64_t t = 0; t < n; ++t) {
      token[t] = tokens + (t0 + t) * n_super;
      acts[t] = permuted.data() + t * n_super;
      permute_activations(token[t], n_super, offset, permuted.data() + t * n_super);
    }
    float* out = y + t0 * w.rows;
    if (w.dtype == DType::kIQ2_XXS) iq_rows_tokens<Iq2xxsVbmi>(w, token, acts, n, out, row_begin, row_end);
    if (w.dtype == DType::kIQ2_XS) iq_rows_tokens<Iq2xsVbmi>(w, token, acts, n, out, row_begin, row_end);
    if (w.dtype == DType::kIQ2_S) iq_rows_tokens<Iq2sVbmi>(w, token, acts, n, out, row_begin, row_end);
    if (w.dtype == DType::kIQ3_XXS) iq_rows_tokens<Iq3xxsVbmi>(w, token, acts, n, out, row_begin, row_end);
    if (w.dtype == DType::kIQ3_S) iq_rows_tokens<Iq3sVbmi>(w, token, acts, n, out, row_begin, row_end);
  }
}

}  // namespace llmpack::kernels::avx512
