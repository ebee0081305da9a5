// AVX-512 VBMI decode of IQ2_XXS, a token at a time (1 to 3 tokens): a
// super-block's 256 weights are built in four zmm registers from its 64 bytes
// of indices, signs and scales by byte permutes, with no table read through
// memory per group of weights.
//
// The AVX2 register kernel (x86/iq_decode_avx2.cc) loads each group of 8
// weights' codebook entry and sign bytes from tables one at a time (64 scalar
// loads and the inserts that put them in vectors, a super-block) and was bound
// by that, not by memory. Here every lookup is a permute:
//   - the 32 grid indices (bytes 0..3 of each 8-byte group of 32) look up
//     their codebook entry's level code (2 bits a weight, kIq2xxsCodes) in
//     byte tables held in registers: vpermi2b on 128 entries, the index's top
//     bit choosing the half, for the code's low and its high byte; one more
//     vpermi2b joins them into 16-bit codes;
//   - vpmultishiftqb spreads a code's 8 two-bit levels over the 8 bytes of a
//     qword, and vpermb maps each level to its magnitude 8, 25 or 43;
//   - vpmultishiftqb also cuts the 7-bit sign fields out of each group's
//     uint32, and vpermi2b on a 128-entry table adds the eighth sign (the
//     count of negative weights is even); a third vpmultishiftqb lifts each
//     weight's sign bit to the top of its byte, and vpmovb2m makes that the
//     mask that negates its activation;
//   - magnitudes times signed activations by vpmaddubsw (pairs in int16,
//     <= 2 x 43 x 127), and vpdpwssd multiplies the pairs by their group's
//     scale 2s + 1 into int32 lanes; one convert and FMA a super-block.
// The sums are exact integers, as the AVX2 kernel's: the two agree to float
// rounding (MatmulIqTest holds both to the exact dot of the activations).
// docs/PERFORMANCE.md section 67 has the measurements.
#include <immintrin.h>

#include <array>
#include <cstring>
#include <vector>

#include "kernels/iq_blocks.h"
#include "kernels/x86/avx512_internal.h"

namespace llmpack::kernels::avx512 {
namespace {

#include "kernels/iq_grids_data.inc"  // kIq2xxsCodes: each entry's 8 levels, 2 bits each

using avx2::ActSuper;

// Byte tables, 64-byte aligned for zmm loads.
struct alignas(64) IqByteTables {
  std::array<uint8_t, 256> code_low, code_high;  // kIq2xxsCodes[i] & 0xFF, >> 8
  std::array<uint8_t, 128> even_signs;            // 7 sign bits | their parity << 7
  std::array<uint8_t, 64> magnitude;              // level (i & 3) -> 8, 25, 43 (3 never occurs)
};

constexpr IqByteTables make_tables() {
  IqByteTables t{};
  for (int i = 0; i < 256; ++i) {
    t.code_low[i] = static_cast<uint8_t>(kIq2xxsCodes[i] & 0xFF);
    t.code_high[i] = static_cast<uint8_t>(kIq2xxsCodes[i] >> 8);
  }
  for (int s = 0; s < 128; ++s) {
    int parity = 0;
    for (int j = 0; j < 7; ++j) parity ^= (s >> j) & 1;
    t.even_signs[s] = static_cast<uint8_t>(s | (parity << 7));
  }
  constexpr uint8_t kLevels[4] = {8, 25, 43, 0};
  for (int i = 0; i < 64; ++i) t.magnitude[i] = kLevels[i & 3];
  return t;
}
constexpr IqByteTables kTables = make_tables();

// The kernel's order of a super-block's 256 weights: zmm m holds, in qword
// g, group of 8 number m of group of 32 g (weights 32g + 8m .. 32g + 8m + 7).
// Then every zmm's int16 pair lanes 4g..4g+3 belong to group of 32 g, so one
// vector of scales serves all four, and the codes and signs of a zmm sit at
// the same place in every qword. The token's activations are put in this
// order once per call (permute_activations), not once per row.
struct alignas(64) PermutedActs {
  int8_t q[256];
};

void permute_activations(const ActSuper* token, int64_t n_super, PermutedActs* out) {
  for (int64_t sb = 0; sb < n_super; ++sb)
    for (int m = 0; m < 4; ++m)
      for (int g = 0; g < 8; ++g) std::memcpy(out[sb].q + 64 * m + 8 * g, token[sb].q + 32 * g + 8 * m, 8);
}

// Control vectors, built once.
struct alignas(64) Controls {
  // per qword (one group of 32): bytes j < 4 start at bit 32 + 7j, the sign
  // field of its group of 8 number j in their low 7 bits
  std::array<uint8_t, 64> sign_shift;
  // word 4g + j: the code of group of 8 j of group g, its low byte from
  // lane 8g + j of the first vpermi2b operand (the codes' low bytes), its
  // high byte from the same lane of the second (+64)
  std::array<uint8_t, 64> join_codes;
  // for zmm m, per qword: byte e starts at bit 16m + 2e, level e of code m
  // (of that qword's 4 codes) in its low 2 bits
  std::array<std::array<uint8_t, 64>, 4> level_shift;
  // for zmm m, per qword: byte e ends at bit 8m + e, sign e of sign byte m
  // (of that qword's 4) in its top bit
  std::array<std::array<uint8_t, 64>, 4> sign_bit_to_top;
};

constexpr Controls make_controls() {
  Controls c{};
  for (int i = 0; i < 64; ++i) {
    const int j = i % 8;
    c.sign_shift[i] = static_cast<uint8_t>(j < 4 ? 32 + 7 * j : 0);
    const int word = i / 2, g = word / 4, part = word % 4;
    c.join_codes[i] = static_cast<uint8_t>(8 * g + part + (i % 2 ? 64 : 0));
    for (int m = 0; m < 4; ++m) c.level_shift[m][i] = static_cast<uint8_t>(16 * m + 2 * j);
    for (int m = 0; m < 4; ++m) c.sign_bit_to_top[m][i] = static_cast<uint8_t>((8 * m + j - 7) & 63);
  }
  return c;
}
constexpr Controls kControls = make_controls();

inline __m512i load64(const void* p) { return _mm512_load_si512(p); }

// One row's dot with the token: per super-block, four zmm of 64 weights, their
// int32 sums times the group scales, one convert and FMA by d / 8 times the
// activations' scale.
float iq2xxs_row(const BlockIQ2_XXS* blocks, int64_t n_super, const ActSuper* token, const PermutedActs* acts) {
  const __m512i code_low0 = load64(kTables.code_low.data()), code_low1 = load64(kTables.code_low.data() + 64);
  const __m512i code_low2 = load64(kTables.code_low.data() + 128), code_low3 = load64(kTables.code_low.data() + 192);
  const __m512i code_high0 = load64(kTables.code_high.data()), code_high1 = load64(kTables.code_high.data() + 64);
  const __m512i code_high2 = load64(kTables.code_high.data() + 128);
  const __m512i code_high3 = load64(kTables.code_high.data() + 192);
  const __m512i signs0 = load64(kTables.even_signs.data()), signs1 = load64(kTables.even_signs.data() + 64);
  const __m512i magnitude = load64(kTables.magnitude.data());
  const __m512i sign_shift = load64(kControls.sign_shift.data());
  const __m512i join_codes = load64(kControls.join_codes.data());
  const __m512i one = _mm512_set1_epi64(1), zero = _mm512_setzero_si512();
  __m512 acc = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const BlockIQ2_XXS& b = blocks[sb];
    // qword g: group of 32 g (4 grid indices, then its signs and scale)
    const __m512i qs = _mm512_loadu_si512(b.qs);
    // lanes 8g + j (j < 4): the codes' low and high bytes of the grid indices
    const __mmask64 upper = _mm512_movepi8_mask(qs);  // entries 128..255
    const __m512i code_low = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(code_low0, qs, code_low1),
                                                    _mm512_permutex2var_epi8(code_low2, qs, code_low3));
    const __m512i code_high = _mm512_mask_blend_epi8(upper, _mm512_permutex2var_epi8(code_high0, qs, code_high1),
                                                     _mm512_permutex2var_epi8(code_high2, qs, code_high3));
    const __m512i codes = _mm512_permutex2var_epi8(code_low, join_codes, code_high);  // word 4g + j
    // lanes 8g + j (j < 4): the sign byte of group of 8 j of group g (bit e set: weight e negative)
    const __m512i fields = _mm512_multishift_epi64_epi8(sign_shift, qs);
    const __m512i signs = _mm512_permutex2var_epi8(signs0, fields, signs1);
    // every word of qword g: 2s + 1 for group of 32 g (s in bits 60..63)
    const __m512i scale = _mm512_or_si512(_mm512_slli_epi64(_mm512_srli_epi64(qs, 60), 1), one);
    const __m512i scale2 = _mm512_or_si512(scale, _mm512_slli_epi64(scale, 16));
    const __m512i scales = _mm512_or_si512(scale2, _mm512_slli_epi64(scale2, 32));
    __m512i sums = zero;
#pragma GCC unroll 4
    for (int m = 0; m < 4; ++m) {
      const __m512i levels = _mm512_multishift_epi64_epi8(load64(kControls.level_shift[m].data()), codes);
      const __m512i weights = _mm512_permutexvar_epi8(levels, magnitude);
      const __m512i x = _mm512_load_si512(acts[sb].q + 64 * m);
      const __m512i sign_bits = _mm512_multishift_epi64_epi8(load64(kControls.sign_bit_to_top[m].data()), signs);
      const __m512i signed_x = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(sign_bits), zero, x);
      sums = _mm512_dpwssd_epi32(sums, _mm512_maddubs_epi16(weights, signed_x), scales);
    }
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), _mm512_set1_ps(_cvtsh_ss(b.d) * 0.125f * token[sb].d), acc);
  }
  alignas(64) float lanes[16];  // summed through memory: GCC 12's reduce intrinsics warn (see CMakeLists.txt)
  _mm512_store_ps(lanes, acc);
  float total = 0.0f;
  for (float v : lanes) total += v;
  return total;
}

}  // namespace

bool iq_vbmi_decode_supports(DType dtype) {
  static const bool has_vbmi = __builtin_cpu_supports("avx512vbmi");
  return dtype == DType::kIQ2_XXS && has_vbmi;
}

void iq_vbmi_decode_rows(const WeightMatrix& w, const ActSuper* token, float* y, int64_t row_begin,
                         int64_t row_end) {
  const int64_t n_super = w.cols / kQKK;
  const auto* data = static_cast<const BlockIQ2_XXS*>(w.data);
  thread_local std::vector<PermutedActs> acts;
  if (acts.size() < static_cast<size_t>(n_super)) acts.resize(static_cast<size_t>(n_super));
  permute_activations(token, n_super, acts.data());
  for (int64_t r = row_begin; r < row_end; ++r) y[r] = iq2xxs_row(data + r * n_super, n_super, token, acts.data());
}

}  // namespace llmpack::kernels::avx512
