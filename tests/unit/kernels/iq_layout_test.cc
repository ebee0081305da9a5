// The codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M):
// the codebooks against entries published with the format, and each block
// layout written out by hand from its description (where an index, a sign and
// a scale lie) and read back by the dequantizer. Files written by llama.cpp's
// own quantizer check the same layouts end to end (tests/golden/llama_cpp_lowbit_test.cc).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"

namespace llmpack::kernels {
namespace {

template <class Grid>
std::set<typename Grid::value_type::value_type> levels_of(const Grid& grid) {
  std::set<typename Grid::value_type::value_type> seen;
  for (const auto& entry : grid) seen.insert(entry.begin(), entry.end());
  return seen;
}

template <class Grid>
size_t distinct_entries(const Grid& grid) {
  return std::set<typename Grid::value_type>(grid.begin(), grid.end()).size();
}

TEST(IqCodebooks, HoldOnlyTheFormatsLevelsAndNoEntryTwice) {
  using S = std::set<uint8_t>;
  EXPECT_EQ(levels_of(kIq2xxsGrid), (S{8, 25, 43}));
  EXPECT_EQ(levels_of(kIq2xsGrid), (S{8, 25, 43}));
  EXPECT_EQ(levels_of(kIq2sGrid), (S{8, 25, 43}));
  EXPECT_EQ(levels_of(kIq3xxsGrid), (S{4, 12, 20, 28, 36, 44, 52, 62}));
  EXPECT_EQ(levels_of(kIq3sGrid), (S{1, 3, 5, 7, 9, 11, 13, 15}));
  EXPECT_EQ(levels_of(kIq1sGrid), (std::set<int8_t>{-1, 0, 1}));
  EXPECT_EQ(distinct_entries(kIq2xxsGrid), 256u);
  EXPECT_EQ(distinct_entries(kIq2xsGrid), 512u);
  EXPECT_EQ(distinct_entries(kIq2sGrid), 1024u);
  EXPECT_EQ(distinct_entries(kIq3xxsGrid), 256u);
  EXPECT_EQ(distinct_entries(kIq3sGrid), 512u);
  EXPECT_EQ(distinct_entries(kIq1sGrid), 2048u);
}

// Entries as ggml's source lists them (a uint64 / uint32 whose lowest byte is
// element 0): the first and last of iq2xxs_grid, iq2xs_grid's eighth,
// iq3xxs_grid's sixth, iq3s_grid's fourth, iq1s_grid's second.
TEST(IqCodebooks, MatchEntriesPublishedWithTheFormat) {
  EXPECT_EQ(kIq2xxsGrid[0], (IqGrid8{8, 8, 8, 8, 8, 8, 8, 8}));
  EXPECT_EQ(kIq2xxsGrid[255], (IqGrid8{0x08, 0x19, 0x08, 0x08, 0x19, 0x2b, 0x2b, 0x2b}));  // 0x2b2b2b1908081908
  EXPECT_EQ(kIq2xsGrid[7], (IqGrid8{0x2b, 0x19, 0x19, 0x08, 0x08, 0x08, 0x08, 0x08}));    // 0x080808080819192b
  EXPECT_EQ(kIq2sGrid[1], (IqGrid8{0x2b, 8, 8, 8, 8, 8, 8, 8}));                           // 0x080808080808082b
  EXPECT_EQ(kIq3xxsGrid[5], (IqGrid4{0x3e, 0x0c, 0x04, 0x04}));                            // 0x04040c3e
  EXPECT_EQ(kIq3sGrid[3], (IqGrid4{0x0b, 0x01, 0x01, 0x01}));                              // 0x0101010b
  EXPECT_EQ(kIq1sGrid[0], (IqSignedGrid8{-1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(kIq1sGrid[1], (IqSignedGrid8{1, -1, -1, -1, -1, -1, -1, -1}));                 // 0xffffffffffffff01
}

TEST(IqCodebooks, Iq1GridTimesEightIsEveryValueTimesEight) {
  for (size_t i = 0; i < kIq1sGrid.size(); ++i)
    for (size_t j = 0; j < 8; ++j) ASSERT_EQ(kIq1sGridTimes8[i][j], 8 * kIq1sGrid[i][j]) << i << " " << j;
}

TEST(IqCodebooks, SevenSignBitsGetAnEighthThatMakesTheNegativesEven) {
  for (uint32_t s = 0; s < 128; ++s) {
    const uint8_t signs = iq_signs_of_7(s);
    EXPECT_EQ(signs & 127, s);
    EXPECT_EQ(__builtin_popcount(signs) % 2, 0) << s;
  }
  EXPECT_EQ(iq_signs_of_7(1), 129);  // ggml's ksigns_iq2xs[1]
  EXPECT_EQ(iq_signs_of_7(3), 3);
  EXPECT_EQ(iq_signs_of_7(127 + 128), 255);  // bits above the 7 are ignored
}

std::vector<float> dequantize_iq_block(DType dtype, const void* block) {
  std::vector<float> out(256);
  dequantize_row(WeightMatrix{dtype, 1, 256, block}, 0, out.data());
  return out;
}

// What every layout below is checked against: weight 8k + j of a group of 8
// with magnitude m, sign bit s and scale `scale`.
float signed_weight(float scale, int m, uint8_t signs, int j) { return scale * m * ((signs >> j) & 1 ? -1.0f : 1.0f); }

constexpr uint16_t kOneF16 = 0x3C00;    // d = 1
constexpr uint16_t kHalfF16 = 0x3800;   // d = 0.5

TEST(IqLayout, IQ2_XXSBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(1);
  BlockIQ2_XXS b{};
  b.d = kHalfF16;
  uint8_t index[32], sign7[32], scale[8];
  for (int g = 0; g < 8; ++g) {
    scale[g] = rng() % 16;
    uint32_t hi = uint32_t{scale[g]} << 28;
    auto* bytes = reinterpret_cast<uint8_t*>(b.qs + 4 * g);
    for (int l = 0; l < 4; ++l) {
      index[4 * g + l] = rng() % 256;
      sign7[4 * g + l] = rng() % 128;
      bytes[l] = index[4 * g + l];
      hi |= uint32_t{sign7[4 * g + l]} << (7 * l);
    }
    std::memcpy(bytes + 4, &hi, 4);
  }
  const auto out = dequantize_iq_block(DType::kIQ2_XXS, &b);
  for (int k = 0; k < 32; ++k)
    for (int j = 0; j < 8; ++j)
      ASSERT_EQ(out[8 * k + j], signed_weight(0.5f * (0.5f + scale[k / 4]) / 4, kIq2xxsGrid[index[k]][j],
                                              iq_signs_of_7(sign7[k]), j))
          << k << " " << j;
}

TEST(IqLayout, IQ2_XSBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(2);
  BlockIQ2_XS b{};
  b.d = kOneF16;
  uint16_t index[32];
  uint8_t sign7[32];
  for (int k = 0; k < 32; ++k) {
    index[k] = rng() % 512;
    sign7[k] = rng() % 128;
    b.qs[k] = static_cast<uint16_t>(index[k] | (sign7[k] << 9));
  }
  for (int g = 0; g < 8; ++g) b.scales[g] = static_cast<uint8_t>(rng() % 256);
  const auto out = dequantize_iq_block(DType::kIQ2_XS, &b);
  for (int k = 0; k < 32; ++k) {
    const int s = (b.scales[k / 4] >> (k % 4 < 2 ? 0 : 4)) & 15;  // low nibble: first 16 of the 32
    for (int j = 0; j < 8; ++j)
      ASSERT_EQ(out[8 * k + j], signed_weight((0.5f + s) / 4, kIq2xsGrid[index[k]][j], iq_signs_of_7(sign7[k]), j))
          << k << " " << j;
  }
}

TEST(IqLayout, IQ2_SBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(3);
  BlockIQ2_S b{};
  b.d = kOneF16;
  int index[32];
  for (int k = 0; k < 32; ++k) {
    index[k] = static_cast<int>(rng() % 1024);
    b.qs[k] = static_cast<uint8_t>(index[k] & 255);
    b.qh[k / 4] |= static_cast<uint8_t>((index[k] >> 8) << (2 * (k % 4)));
    b.qs[32 + k] = static_cast<uint8_t>(rng() % 256);  // all 8 signs stored
  }
  for (int g = 0; g < 8; ++g) b.scales[g] = static_cast<uint8_t>(rng() % 256);
  const auto out = dequantize_iq_block(DType::kIQ2_S, &b);
  for (int k = 0; k < 32; ++k) {
    const int s = (b.scales[k / 4] >> (k % 4 < 2 ? 0 : 4)) & 15;
    for (int j = 0; j < 8; ++j)
      ASSERT_EQ(out[8 * k + j], signed_weight((0.5f + s) / 4, kIq2sGrid[index[k]][j], b.qs[32 + k], j))
          << k << " " << j;
  }
}

TEST(IqLayout, IQ3_XXSBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(4);
  BlockIQ3_XXS b{};
  b.d = kOneF16;
  uint8_t sign7[32], scale[8];
  for (int q = 0; q < 64; ++q) b.qs[q] = static_cast<uint8_t>(rng() % 256);  // a grid index per 4 weights
  for (int g = 0; g < 8; ++g) {
    scale[g] = rng() % 16;
    uint32_t word = uint32_t{scale[g]} << 28;
    for (int l = 0; l < 4; ++l) {
      sign7[4 * g + l] = rng() % 128;
      word |= uint32_t{sign7[4 * g + l]} << (7 * l);
    }
    std::memcpy(b.qs + 64 + 4 * g, &word, 4);
  }
  const auto out = dequantize_iq_block(DType::kIQ3_XXS, &b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8, j = e % 8;
    const int m = kIq3xxsGrid[b.qs[e / 4]][e % 4];
    ASSERT_EQ(out[e], signed_weight((0.5f + scale[k / 4]) / 2, m, iq_signs_of_7(sign7[k]), j)) << e;
  }
}

TEST(IqLayout, IQ3_SBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(5);
  BlockIQ3_S b{};
  b.d = kHalfF16;
  int index[64];
  for (int q = 0; q < 64; ++q) {
    index[q] = static_cast<int>(rng() % 512);
    b.qs[q] = static_cast<uint8_t>(index[q] & 255);
    b.qh[q / 8] |= static_cast<uint8_t>((index[q] >> 8) << (q % 8));
  }
  for (auto& s : b.signs) s = static_cast<uint8_t>(rng() % 256);
  for (auto& s : b.scales) s = static_cast<uint8_t>(rng() % 256);
  const auto out = dequantize_iq_block(DType::kIQ3_S, &b);
  for (int e = 0; e < 256; ++e) {
    const int g = e / 32, s = (b.scales[g / 2] >> (4 * (g % 2))) & 15;
    const int m = kIq3sGrid[index[e / 4]][e % 4];
    ASSERT_EQ(out[e], signed_weight(0.5f * (1 + 2 * s), m, b.signs[e / 8], e % 8)) << e;
  }
}

TEST(IqLayout, IQ1_SBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(6);
  BlockIQ1_S b{};
  b.d = kHalfF16;
  int index[32], scale[8];
  bool minus[8];
  for (int g = 0; g < 8; ++g) {
    scale[g] = static_cast<int>(rng() % 8);
    minus[g] = rng() % 2;
    b.qh[g] = static_cast<uint16_t>((scale[g] << 12) | (minus[g] ? 0x8000 : 0));
    for (int l = 0; l < 4; ++l) {
      const int k = 4 * g + l;
      index[k] = static_cast<int>(rng() % 2048);
      b.qs[k] = static_cast<uint8_t>(index[k] & 255);
      b.qh[g] = static_cast<uint16_t>(b.qh[g] | ((index[k] >> 8) << (3 * l)));
    }
  }
  const auto out = dequantize_iq_block(DType::kIQ1_S, &b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8, g = e / 32;
    const float delta = minus[g] ? -0.125f : 0.125f;
    ASSERT_EQ(out[e], 0.5f * (2 * scale[g] + 1) * (kIq1sGrid[index[k]][e % 8] + delta)) << e;
  }
}

TEST(IqLayout, IQ1_MBlocksDequantizeByTheGgufLayout) {
  std::mt19937 rng(7);
  BlockIQ1_M b{};
  int index[32], scale[16];
  bool minus[32];
  for (int k = 0; k < 32; ++k) {
    index[k] = static_cast<int>(rng() % 2048);
    minus[k] = rng() % 2;
    b.qs[k] = static_cast<uint8_t>(index[k] & 255);
    const int nibble = (index[k] >> 8) | (minus[k] ? 8 : 0);
    b.qh[k / 2] |= static_cast<uint8_t>(nibble << (4 * (k % 2)));
  }
  // Four uint16: 3-bit scales of 16 weights each in bits 0..11, and the f16
  // super-block scale 0.5 (0x3800) a nibble at a time in bits 12..15.
  uint16_t sc[4] = {};
  for (int h = 0; h < 16; ++h) {
    scale[h] = static_cast<int>(rng() % 8);
    sc[h / 4] = static_cast<uint16_t>(sc[h / 4] | (scale[h] << (3 * (h % 4))));
  }
  for (int n = 0; n < 4; ++n) sc[n] = static_cast<uint16_t>(sc[n] | (((kHalfF16 >> (4 * n)) & 15) << 12));
  std::memcpy(b.scales, sc, sizeof sc);
  const auto out = dequantize_iq_block(DType::kIQ1_M, &b);
  for (int e = 0; e < 256; ++e) {
    const int k = e / 8;
    const float delta = minus[k] ? -0.125f : 0.125f;
    ASSERT_EQ(out[e], 0.5f * (2 * scale[e / 16] + 1) * (kIq1sGrid[index[k]][e % 8] + delta)) << e;
  }
}

}  // namespace
}  // namespace llmpack::kernels
