// Quantized block layouts, bit-exact with GGUF (ggml) so tensors of GGUF
// files are used in place. Blocks need 2-byte alignment (every block size is
// even and GGUF aligns tensor data to 32 bytes).
#pragma once

#include <cstdint>

namespace llmpack::kernels {

constexpr int kQK = 32;    // elements per Q8_0 / Q4_0 block
constexpr int kQKK = 256;  // elements per K-quant super-block

// value[i] = qs[i] * d
struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
static_assert(sizeof(BlockQ8_0) == 34);

// value[i] = ((qs[i] & 15) - 8) * d for i < 16, ((qs[i - 16] >> 4) - 8) * d after.
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// 5-bit quants q in 0..31: the low 4 bits as in Q4_0 (qs[i] low nibble for
// element i < 16, high nibble for element i + 16), the fifth bit of element i
// at bit i of qh (read as a little-endian uint32).
// Q5_0: value[i] = (q[i] - 16) * d. (llama.cpp's Q4_K_M falls back to it for
// matrices whose rows are not whole 256-element super-blocks, such as
// SmolLM2-135M's 576 columns and Qwen2.5-0.5B's 896.)
struct BlockQ5_0 {
  uint16_t d;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: value[i] = q[i] * d + m (Q5_K_M's fallback, as Q5_0 is Q4_K_M's).
struct BlockQ5_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qh[4];
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// Q4_1: value[i] = q[i] * d + m, q the nibble as in Q4_0 (0..15).
struct BlockQ4_1 {
  uint16_t d;  // f16
  uint16_t m;  // f16
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Which of the 32-element types with an offset carry a min m (value = d q +
// m; else d (q - 16)) and a fifth bit (qh): Q4_1, Q5_0, Q5_1.
template <class Block>
inline constexpr bool kBlockHasMin = false;
template <>
inline constexpr bool kBlockHasMin<BlockQ4_1> = true;
template <>
inline constexpr bool kBlockHasMin<BlockQ5_1> = true;
template <class Block>
inline constexpr bool kBlockHasQh = false;
template <>
inline constexpr bool kBlockHasQh<BlockQ5_0> = true;
template <>
inline constexpr bool kBlockHasQh<BlockQ5_1> = true;

// The 5-bit quant of element i (0..31) of a Q5_0 / Q5_1 block.
inline int q5_quant(const uint8_t* qs, const uint8_t* qh, int i) {
  const uint32_t high = static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
                        static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
  const int low = i < kQK / 2 ? qs[i] & 0x0F : qs[i - kQK / 2] >> 4;
  return low | static_cast<int>((high >> i) & 1) << 4;
}

// 8 sub-blocks of 32 with 6-bit scale and min each, packed in `scales`
// (see unpack_q4k_scale). Elements 64c..64c+31 are the low nibbles of
// qs[32c..32c+31] (sub-block 2c), 64c+32..64c+63 the high nibbles (2c+1).
// value = d * scale_j * q - dmin * min_j.
struct BlockQ4_K {
  uint16_t d;     // f16 super-scale of the scales
  uint16_t dmin;  // f16 super-scale of the mins
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// As Q4_K plus a fifth bit per element: bit (2c) of qh[l] for element 64c+l,
// bit (2c+1) for element 64c+32+l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kQKK / 8];
  uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// 16 sub-blocks of 16 with int8 scales; 6-bit quants q in 0..63, value =
// d * scales[s] * (q - 32). Each half h (128 elements) uses ql[64h..], qh[32h..],
// scales[8h..]; group g (0..3) of 32 inside it: low 4 bits from ql[64h + 32(g&1) + l]
// (low nibble for g < 2, high for g >= 2), high 2 bits from (qh[32h + l] >> 2g) & 3,
// scale scales[8h + 2g + l/16].
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];
  uint8_t qh[kQKK / 4];
  int8_t scales[kQKK / 16];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ6_K) == 210);

// 16 sub-blocks of 16, each with a 4-bit scale (low nibble of scales[s]) and
// a 4-bit min (high nibble); 2-bit quants q in 0..3, value = d * sc_s * q -
// dmin * m_s. Elements 128n + 32k + l (n = 0, 1; k = 0..3; l = 0..31) are bits
// 2k, 2k + 1 of qs[32n + l]; sub-block s = 8n + 2k + l / 16 (so the 32-element
// unit j = 4n + k has sub-blocks 2j and 2j + 1).
struct BlockQ2_K {
  uint8_t scales[kQKK / 16];
  uint8_t qs[kQKK / 4];
  uint16_t d;     // f16 super-scale of the scales
  uint16_t dmin;  // f16 super-scale of the mins
};
static_assert(sizeof(BlockQ2_K) == 84);

// 16 sub-blocks of 16 with 6-bit scales (see q3k_scale); 3-bit quants:
// the low 2 bits placed as Q2_K's, the third bit of element 128n + 32k + l at
// bit 4n + k of hmask[l]. value = d * (sc_s - 32) * (q - 4), where the third
// bit set means q = low bits + 4 (llama.cpp writes it as "subtract 4 when the
// bit is clear").
struct BlockQ3_K {
  uint8_t hmask[kQKK / 8];
  uint8_t qs[kQKK / 4];
  uint8_t scales[12];
  uint16_t d;  // f16
};
static_assert(sizeof(BlockQ3_K) == 110);

// The 6-bit scale (0..63, used as scale - 32) of Q3_K sub-block s (0..15):
// its low 4 bits are the low nibble of scales[s] for s < 8 and the high
// nibble of scales[s - 8] after; its high 2 bits are bits 2(s / 4)..+1 of
// scales[8 + s % 4].
inline int q3k_scale(const uint8_t* scales, int s) {
  const int low = s < 8 ? scales[s] & 0x0F : scales[s - 8] >> 4;
  const int high = (scales[8 + s % 4] >> (2 * (s / 4))) & 3;
  return low | high << 4;
}

// Inverse of q3k_scale for 16 scales in 0..63.
inline void pack_q3k_scales(const uint8_t* scale, uint8_t* scales) {
  for (int i = 0; i < 12; ++i) scales[i] = 0;
  for (int s = 0; s < 16; ++s) {
    scales[s % 8] |= static_cast<uint8_t>((scale[s] & 0x0F) << (s < 8 ? 0 : 4));
    scales[8 + s % 4] |= static_cast<uint8_t>((scale[s] >> 4) << (2 * (s / 4)));
  }
}

// The 16 values a 4-bit IQ4_NL / IQ4_XS index stands for (a fixed non-linear
// grid, denser near zero; llama.cpp's kvalues_iq4nl).
inline constexpr int8_t kIQ4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// value[i] = d * kIQ4Values[index i], the indices as Q4_0's nibbles.
struct BlockIQ4_NL {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

// 8 sub-blocks of 32, each laid out as one IQ4_NL block's indices (qs[16j..]),
// with a 6-bit scale (see iq4xs_scale): value = d * (scale_j - 32) * kIQ4Values[index].
struct BlockIQ4_XS {
  uint16_t d;  // f16
  uint16_t scales_h;
  uint8_t scales_l[kQKK / 64];
  uint8_t qs[kQKK / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// The 6-bit scale (0..63) of IQ4_XS sub-block j: low 4 bits from nibble j % 2
// of scales_l[j / 2], high 2 bits from bits 2j, 2j + 1 of scales_h.
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
  return ((b.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F) | ((b.scales_h >> (2 * j)) & 3) << 4;
}

// 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block.
inline void unpack_q4k_scale(const uint8_t* scales, int j, uint8_t* scale, uint8_t* min) {
  if (j < 4) {
    *scale = scales[j] & 63;
    *min = scales[j + 4] & 63;
  } else {
    *scale = static_cast<uint8_t>((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    *min = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Inverse of unpack_q4k_scale for 8 scales and 8 mins, each in 0..63.
inline void pack_q4k_scales(const uint8_t* scale, const uint8_t* min, uint8_t* scales) {
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>((scale[j] & 63) | ((scale[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>((min[j] & 63) | ((min[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((scale[j + 4] & 0x0F) | ((min[j + 4] & 0x0F) << 4));
  }
}

}  // namespace llmpack::kernels
