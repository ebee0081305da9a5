// convert_to_f16 and quantize_row_q8_0, the kernels that write KV cache rows:
// the reference against IEEE half and the q8_0 formula, and every SIMD path
// against the reference bit for bit (lengths with tails, values at the edges
// of half's range, rounding ties, short last blocks).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/reference/reference.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::random_floats;

constexpr int64_t kRowLengths[] = {1, 3, 4, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 65, 100, 128, 263};

float float_from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Values where a conversion to half can go wrong: zeros, half's subnormals
// and their rounding ties, the largest half and the first value that
// overflows, ties between two normal halves (even and odd), infinities.
std::vector<float> half_edge_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, -65504.0f, 65519.99f, 65520.0f, 1e30f,
                          std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::ldexp(1.0f, -24), std::ldexp(1.0f, -25), std::ldexp(3.0f, -25),
                          std::ldexp(1.0f, -26), std::ldexp(1.0f, -14), std::ldexp(1023.0f, -24),
                          std::ldexp(1.0f, -130) /* an f32 subnormal */, 1.0f + std::ldexp(1.0f, -11),
                          1.0f + std::ldexp(3.0f, -11), -(1.0f + std::ldexp(1.0f, -11)), 2049.0f, 2051.0f};
  for (uint32_t bits = 0x33000000u; bits < 0x47800000u; bits += 0x00012345u) {  // a sweep of magnitudes
    v.push_back(float_from_bits(bits));
    v.push_back(-float_from_bits(bits));
  }
  return v;
}

TEST(KvRowsTest, ReferenceF16IsIeeeHalf) {
  const float x[] = {1.0f, -2.0f, 65504.0f, 65520.0f, std::ldexp(1.0f, -24), std::ldexp(1.0f, -25),
                     std::ldexp(3.0f, -25), 1.0f + std::ldexp(1.0f, -11), 1.0f + std::ldexp(3.0f, -11), -0.0f};
  const uint16_t want[] = {0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x0000, 0x0002, 0x3c00, 0x3c02, 0x8000};
  uint16_t got[std::size(x)];
  ref::convert_to_f16(x, std::size(x), got);
  for (size_t i = 0; i < std::size(x); ++i) EXPECT_EQ(got[i], want[i]) << "element " << i << " (" << x[i] << ")";
}

TEST(KvRowsTest, SimdF16MatchesReferenceBitForBit) {
  const std::vector<float> edges = half_edge_values();
  for (KernelPath p : testing::simd_paths()) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int64_t n : kRowLengths) {
      const auto x = random_floats(n, 11 + n, 8.0f);
      std::vector<uint16_t> a(n + 1, 0xdead), b(n + 1, 0xdead);
      convert_to_f16(x.data(), n, a.data());
      ref::convert_to_f16(x.data(), n, b.data());
      ASSERT_EQ(a, b) << kernel_path_name(p) << ", n = " << n;  // the guard element past n is untouched too
    }
    std::vector<uint16_t> a(edges.size()), b(edges.size());
    convert_to_f16(edges.data(), static_cast<int64_t>(edges.size()), a.data());
    ref::convert_to_f16(edges.data(), static_cast<int64_t>(edges.size()), b.data());
    for (size_t i = 0; i < edges.size(); ++i)
      ASSERT_EQ(a[i], b[i]) << kernel_path_name(p) << ": " << edges[i] << " (element " << i << ")";
    const float nan[9] = {NAN, -NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN};
    uint16_t h[9];
    convert_to_f16(nan, 9, h);
    for (uint16_t v : h) EXPECT_TRUE(std::isnan(f16_to_f32(v))) << kernel_path_name(p) << ": a NaN became " << v;
  }
}

std::vector<BlockQ8_0> q8_0_blocks_for(int64_t n) { return std::vector<BlockQ8_0>(static_cast<size_t>((n + 31) / 32) + 1); }

TEST(KvRowsTest, ReferenceQ8_0FollowsTheFormula) {
  for (int64_t n : kRowLengths) {
    const auto x = random_floats(n, 21 + n, 2.0f);
    auto blocks = q8_0_blocks_for(n);
    ref::quantize_row_q8_0(x.data(), n, blocks.data());
    for (int64_t b = 0; b * 32 < n; ++b) {
      const int64_t len = std::min<int64_t>(32, n - b * 32);
      float amax = 0.0f;
      for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[b * 32 + i]));
      const float d = f16_to_f32(blocks[b].d);
      ASSERT_NEAR(d, amax / 127.0f, amax / 127.0f * 1e-3f) << "n = " << n << ", block " << b;
      for (int64_t i = 0; i < 32; ++i) {
        if (i >= len) {
          ASSERT_EQ(blocks[b].qs[i], 0) << "padding of the short block, n = " << n;
          continue;
        }
        ASSERT_LE(std::abs(blocks[b].qs[i]), 127);
        // q rounds x / d (d before its f16 rounding): within half a step plus d's rounding.
        ASSERT_NEAR(d * blocks[b].qs[i], x[b * 32 + i], 0.5f * d + 127.0f * d * 1e-3f) << "n = " << n << ", i = " << i;
      }
    }
  }
  std::vector<float> zeros(40, 0.0f);
  auto blocks = q8_0_blocks_for(40);
  ref::quantize_row_q8_0(zeros.data(), 40, blocks.data());
  for (int b = 0; b < 2; ++b) {
    EXPECT_EQ(blocks[b].d, 0);
    for (int8_t q : blocks[b].qs) EXPECT_EQ(q, 0);
  }
}

TEST(KvRowsTest, SimdQ8_0MatchesReferenceByteForByte) {
  for (KernelPath p : testing::simd_paths()) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int64_t n : kRowLengths) {
      for (float scale : {1e-6f, 0.5f, 3.0f, 1e4f}) {
        auto x = random_floats(n, 31 + n, scale);
        if (n > 40) std::fill(x.begin() + 32, x.begin() + 40, 0.0f);  // part of a block at zero
        auto a = q8_0_blocks_for(n), b = q8_0_blocks_for(n);
        std::memset(a.data(), 0x5a, a.size() * sizeof(BlockQ8_0));
        std::memset(b.data(), 0x5a, b.size() * sizeof(BlockQ8_0));
        quantize_row_q8_0(x.data(), n, a.data());
        ref::quantize_row_q8_0(x.data(), n, b.data());
        ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(BlockQ8_0)), 0)
            << kernel_path_name(p) << ", n = " << n << ", scale " << scale;
      }
    }
    std::vector<float> zeros(33, 0.0f);
    auto a = q8_0_blocks_for(33), b = q8_0_blocks_for(33);
    quantize_row_q8_0(zeros.data(), 33, a.data());
    ref::quantize_row_q8_0(zeros.data(), 33, b.data());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), 2 * sizeof(BlockQ8_0)), 0) << kernel_path_name(p) << ": all zeros";
  }
}

}  // namespace
}  // namespace llmpack::kernels
