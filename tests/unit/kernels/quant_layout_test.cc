// The GGUF layouts of Q2_K, Q3_K, IQ4_NL and IQ4_XS written out by hand, each
// from its own description of where a quant and a scale lie (no fixture
// written by llama.cpp has these types), and the quantizers' round trips.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

// The IQ4 grid as published with the format.
constexpr int kGrid[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

std::vector<float> dequantize_block(DType dtype, const void* block, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(WeightMatrix{dtype, 1, n, block}, 0, out.data());
  return out;
}

// Q2_K: scales[16] (scale in the low nibble, min in the high), qs[64], d,
// dmin. Element e's two bits sit in byte 32 (e / 128) + e % 32 of qs at bit
// 2 ((e / 32) % 4); its 16-element sub-block is e / 16.
TEST(QuantLayoutTest, Q2_KBlocksDequantizeByTheGgufLayout) {
  uint8_t block[84];
  for (int s = 0; s < 16; ++s) block[s] = static_cast<uint8_t>((s + 1) % 16 | (15 - s) << 4);
  for (int i = 0; i < 64; ++i) block[16 + i] = static_cast<uint8_t>(i * 37 + 11);
  const uint16_t d = f32_to_f16(0.5f), dmin = f32_to_f16(0.25f);
  std::memcpy(block + 80, &d, 2);
  std::memcpy(block + 82, &dmin, 2);
  const auto out = dequantize_block(DType::kQ2_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    const int q = (block[16 + 32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
    const uint8_t sc = block[e / 16];
    EXPECT_EQ(out[e], 0.5f * (sc & 15) * q - 0.25f * (sc >> 4)) << "element " << e;
  }
}

// Q3_K's 12 scale bytes as llama.cpp's dequantizer reads them: as three
// little-endian words, remixed with 0x0F0F0F0F and 0x03030303 masks into four
// words whose 16 bytes are the 6-bit scales.
void q3k_scales_by_words(const uint8_t* bytes, uint8_t* scales) {
  uint32_t w[3];
  std::memcpy(w, bytes, 12);
  const uint32_t lo4 = 0x0F0F0F0Fu, lo2 = 0x03030303u;
  const uint32_t out[4] = {(w[0] & lo4) | ((w[2] & lo2) << 4), (w[1] & lo4) | (((w[2] >> 2) & lo2) << 4),
                           ((w[0] >> 4) & lo4) | (((w[2] >> 4) & lo2) << 4),
                           ((w[1] >> 4) & lo4) | (((w[2] >> 6) & lo2) << 4)};
  std::memcpy(scales, out, 16);
}

TEST(QuantLayoutTest, Q3_KScalesUnpackAsTheWordwiseReading) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    uint8_t bytes[12], want[16];
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    q3k_scales_by_words(bytes, want);
    for (int s = 0; s < 16; ++s) ASSERT_EQ(q3k_scale(bytes, s), want[s]) << "sub-block " << s;
    uint8_t repacked[12];
    pack_q3k_scales(want, repacked);
    ASSERT_EQ(std::memcmp(repacked, bytes, 12), 0);
  }
}

// Q3_K: hmask[32], qs[64], scales[12], d. Element e: low bits as Q2_K's, and
// 4 is subtracted when bit e / 32 of hmask[e % 32] is clear.
TEST(QuantLayoutTest, Q3_KBlocksDequantizeByTheGgufLayout) {
  uint8_t block[110];
  for (int i = 0; i < 32; ++i) block[i] = static_cast<uint8_t>(i * 53 + 7);
  for (int i = 0; i < 64; ++i) block[32 + i] = static_cast<uint8_t>(i * 29 + 5);
  for (int i = 0; i < 12; ++i) block[96 + i] = static_cast<uint8_t>(i * 71 + 13);
  const uint16_t d = f32_to_f16(0.125f);
  std::memcpy(block + 108, &d, 2);
  uint8_t scales[16];
  q3k_scales_by_words(block + 96, scales);
  const auto out = dequantize_block(DType::kQ3_K, block, 256);
  for (int e = 0; e < 256; ++e) {
    const int low = (block[32 + 32 * (e / 128) + e % 32] >> (2 * ((e / 32) % 4))) & 3;
    const bool high = (block[e % 32] >> (e / 32)) & 1;
    EXPECT_EQ(out[e], 0.125f * (scales[e / 16] - 32) * (low - (high ? 0 : 4))) << "element " << e;
  }
}

// IQ4_NL: d, then element i's grid index in qs[i % 16] (low nibble for i < 16).
TEST(QuantLayoutTest, IQ4_NLBlocksDequantizeByTheGgufLayout) {
  uint8_t block[18];
  const uint16_t d = f32_to_f16(0.5f);
  std::memcpy(block, &d, 2);
  for (int j = 0; j < 16; ++j) block[2 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const auto out = dequantize_block(DType::kIQ4_NL, block, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 0.5f * kGrid[i < 16 ? i : 31 - i]) << "element " << i;
}

// IQ4_XS: d, scales_h, scales_l[4], qs[128]. Sub-block scales 0, 17, 34, 51,
// 63, 32, 5, 40: low nibbles 0 1 2 3 15 0 5 8 two to a byte, high 2 bits
// 0 1 2 3 3 2 0 2 two bits each in scales_h = 0x8BE4.
TEST(QuantLayoutTest, IQ4_XSBlocksDequantizeByTheGgufLayout) {
  uint8_t block[136];
  const uint16_t d = f32_to_f16(0.25f), scales_h = 0x8BE4;
  std::memcpy(block, &d, 2);
  std::memcpy(block + 2, &scales_h, 2);
  const uint8_t scales_l[4] = {0x10, 0x32, 0x0F, 0x85};
  std::memcpy(block + 4, scales_l, 4);
  for (int i = 0; i < 128; ++i) block[8 + i] = static_cast<uint8_t>(i * 13 + 9);
  const int scale[8] = {0, 17, 34, 51, 63, 32, 5, 40};
  const auto out = dequantize_block(DType::kIQ4_XS, block, 256);
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32, i = e % 32;
    const uint8_t byte = block[8 + 16 * j + i % 16];
    const int index = i < 16 ? byte & 15 : byte >> 4;
    EXPECT_EQ(out[e], 0.25f * (scale[j] - 32) * kGrid[index]) << "element " << e;
  }
}

// quantize(dequantize(q)) stays close to dequantize(q): the quantizers find
// (nearly) the grid they were given.
TEST(QuantLayoutTest, LowBitQuantizersNearlyReproduceTheirOwnGrids) {
  const auto x = testing::random_floats(256 * 16, 21);
  for (DType dtype : {DType::kQ2_K, DType::kQ3_K, DType::kIQ4_NL, DType::kIQ4_XS}) {
    const int64_t n = static_cast<int64_t>(x.size());
    std::vector<uint8_t> q(static_cast<size_t>(row_bytes(*dtype_info(dtype), n))), q2(q.size());
    ASSERT_EQ(quantize_row(dtype, x.data(), n, q.data()), q.size());
    const auto y = dequantize_block(dtype, q.data(), n);
    ASSERT_EQ(quantize_row(dtype, y.data(), n, q2.data()), q2.size());
    const auto y2 = dequantize_block(dtype, q2.data(), n);
    double e_first = 0, e_again = 0;
    for (size_t i = 0; i < x.size(); ++i)
      e_first += (double(y[i]) - x[i]) * (double(y[i]) - x[i]), e_again += (double(y2[i]) - y[i]) * (double(y2[i]) - y[i]);
    EXPECT_LT(e_again, 0.25 * e_first) << dtype_name(dtype);
  }
}

}  // namespace
}  // namespace llmpack::kernels
