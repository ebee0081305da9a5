// Block layouts of the codebook ("i-quant") GGUF types of 1 to 3 bits a weight:
// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M, bit-exact with ggml.
// Each super-block of 256 weights stores, per group of 8 (or 4) weights, an
// index into a fixed codebook of magnitudes (the grids below), the group's
// signs, and a few bits of scale per 32 (or 16) weights.
//
// The codebooks are part of the format; kernels/iq_grids_data.inc holds them
// as level codes (scripts/iq-grids reads them out of a ggml build) and
// iq_grids.cc expands them to the byte tables declared here.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "core/dtype.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels {

// IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M.
inline bool is_codebook_type(DType t) {
  switch (t) {
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
      return true;
    default:
      return false;
  }
}

// Codebooks: entry i holds the magnitudes of one group.
using IqGrid8 = std::array<uint8_t, 8>;  // IQ2_*: 8 magnitudes, each 8, 25 or 43
using IqGrid4 = std::array<uint8_t, 4>;  // IQ3_XXS: 4, 12, ..., 52, 62; IQ3_S: odd 1..15
using IqSignedGrid8 = std::array<int8_t, 8>;  // IQ1_*: 8 values, each -1, 0 or +1

extern const std::array<IqGrid8, 256> kIq2xxsGrid;
extern const std::array<IqGrid8, 512> kIq2xsGrid;
extern const std::array<IqGrid8, 1024> kIq2sGrid;
extern const std::array<IqGrid4, 256> kIq3xxsGrid;
extern const std::array<IqGrid4, 512> kIq3sGrid;
extern const std::array<IqSignedGrid8, 2048> kIq1sGrid;
// kIq1sGrid's values times 8 (-8, 0, 8): the kernels' int8 IQ1 weight 8 g +/- 1
// is then one byte add of the delta.
extern const std::array<IqSignedGrid8, 2048> kIq1sGridTimes8;

// IQ2_XXS, IQ2_XS and IQ3_XXS store the signs of 8 weights in 7 bits: the
// eighth sign makes the number of negative weights even. Bit j set: weight j
// is negative.
inline uint8_t iq_signs_of_7(uint32_t seven_bits) {
  const uint32_t s = seven_bits & 127;
  return static_cast<uint8_t>(s | ((__builtin_popcount(s) & 1) << 7));
}

// Little-endian 16- and 32-bit reads at any byte offset (IQ1_M's scales, the
// uint32 runs of IQ2_XXS and IQ3_XXS).
inline uint32_t iq_load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint16_t iq_load_u16(const void* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// 2.06 bits a weight. Group of 32 g (0..7): qs[4g..4g+3] as two uint32 a, b:
// the 4 bytes of a index kIq2xxsGrid for its 4 groups of 8; b holds 4 x 7 sign
// bits (bits 7l..7l+6 for group l) and, in bits 28..31, the scale s:
// weight = d * (0.5 + s) / 4 * magnitude * sign.
struct BlockIQ2_XXS {
  uint16_t d;  // f16
  uint16_t qs[kQKK / 8];
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

// 2.31 bits a weight. qs[4g + l] (group of 8 number l of group of 32 g): bits
// 0..8 index kIq2xsGrid, bits 9..15 the 7 sign bits. scales[g]: low nibble
// for groups l = 0, 1, high nibble for l = 2, 3; weight = d * (0.5 + s) / 4 *
// magnitude * sign.
struct BlockIQ2_XS {
  uint16_t d;  // f16
  uint16_t qs[kQKK / 8];
  uint8_t scales[kQKK / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74);

// 2.56 bits a weight. Group l of 8 in group g of 32: index qs[4g + l] | bits
// 2l, 2l + 1 of qh[g] as bits 8, 9 (into kIq2sGrid); its 8 sign bits are
// qs[32 + 4g + l] (all 8 stored); scales as IQ2_XS.
struct BlockIQ2_S {
  uint16_t d;  // f16
  uint8_t qs[kQKK / 4];
  uint8_t qh[kQKK / 32];
  uint8_t scales[kQKK / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82);

// 3.06 bits a weight. qs[0..63]: one kIq3xxsGrid index per 4 weights
// (group of 32 g uses qs[8g..8g+7]); qs[64 + 4g..] as a uint32: 4 x 7 sign
// bits and the scale in bits 28..31: weight = d * (0.5 + s) / 2 * magnitude * sign.
struct BlockIQ3_XXS {
  uint16_t d;  // f16
  uint8_t qs[3 * kQKK / 8];
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

// 3.44 bits a weight. Quad q (0..63) of 4 weights: index qs[q] | bit q % 8 of
// qh[q / 8] as bit 8 (into kIq3sGrid); the sign bits of the 8 weights of
// group of 8 k are signs[k]; scales: one nibble per 32 weights (low nibble
// first): weight = d * (1 + 2 s) * magnitude * sign.
struct BlockIQ3_S {
  uint16_t d;  // f16
  uint8_t qs[kQKK / 4];
  uint8_t qh[kQKK / 32];
  uint8_t signs[kQKK / 8];
  uint8_t scales[kQKK / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110);

// The shift every IQ1 weight carries: value = scale * (grid value +/- 1/8).
inline constexpr float kIq1Delta = 0.125f;

// 1.56 bits a weight. Group of 32 g: qh[g] bits 3l..3l+2 are the high bits of
// group-of-8 l's 11-bit index (low bits qs[4g + l]) into kIq1sGrid, bits 12..14
// the scale s, bit 15 the delta's sign (set: -1/8): weight = d * (2 s + 1) *
// (grid value + delta).
struct BlockIQ1_S {
  uint16_t d;  // f16
  uint8_t qs[kQKK / 8];
  uint16_t qh[kQKK / 32];
};
static_assert(sizeof(BlockIQ1_S) == 50);

// 1.75 bits a weight, no separate d: the f16 super-block scale is spread over
// the top nibbles of the 4 uint16 in scales. Group of 8 k (0..31): index
// qs[k] | (nibble k % 2 of qh[k / 2]) bits 0..2 as bits 8..10, that nibble's
// bit 3 the delta's sign; 3-bit scale per 16 weights: bits 3m..3m+2 of
// scales (as uint16 g / 2 for group of 32 g, m = 2 (g % 2) + half).
struct BlockIQ1_M {
  uint8_t qs[kQKK / 8];
  uint8_t qh[kQKK / 16];
  uint8_t scales[kQKK / 32];
};
static_assert(sizeof(BlockIQ1_M) == 56);

// IQ1_M's f16 super-block scale, gathered from the top nibbles of its scales.
inline uint16_t iq1m_d_bits(const BlockIQ1_M& b) {
  uint16_t sc[4];
  std::memcpy(sc, b.scales, sizeof sc);
  return static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                               (sc[3] & 0xF000));
}

// IQ1_M's 3-bit scale (0..7) of weights 16h..16h+15 (h: 0..15).
inline int iq1m_scale(const BlockIQ1_M& b, int h) {
  const uint16_t sc = iq_load_u16(b.scales + 2 * (h / 4));
  return (sc >> (3 * (h % 4))) & 7;
}

}  // namespace llmpack::kernels
