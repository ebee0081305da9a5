// Block-quantized types: quantize -> dequantize error bounds, round trips,
// dequantizers against tensors quantized by llama.cpp (eco fixtures) versus
// the F32 originals, and matmul (scalar reference and SIMD) on quantized weights.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/fixtures.h"
#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "unit/kernels/mini_gguf.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::random_floats;

std::vector<uint8_t> quantize(DType dtype, const std::vector<float>& x) {
  std::vector<uint8_t> out(static_cast<size_t>(row_bytes(*dtype_info(dtype), x.size())));
  EXPECT_EQ(quantize_row(dtype, x.data(), static_cast<int64_t>(x.size()), out.data()), out.size());
  return out;
}

std::vector<float> dequantize(DType dtype, const std::vector<uint8_t>& q, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  dequantize_row(WeightMatrix{dtype, 1, n, q.data()}, 0, out.data());
  return out;
}

// RMS(a - b) / RMS(b)
double rel_rms(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]), s += double(b[i]) * b[i];
  return std::sqrt(e / s);
}

struct QuantBound {
  DType dtype;
  double max_rel_rms;  // measured on N(0,1) data, with margin
};

// Measured on this data: f16 0.00021, bf16 0.0017, q8_0 0.0054, q4_0 0.086,
// q4_k 0.070, q6_k 0.017 (llama.cpp's own quantizer gives 0.071 and 0.017 on
// the eco fixtures), q5_0 0.043, q5_1 0.038, q5_k 0.035 (llama.cpp's: 0.036 on
// the eco fixture), q4_1 0.078, q2_k 0.265, q3_k 0.144, iq4_nl 0.0744, iq4_xs
// 0.0751, iq2_xxs 0.332, iq2_xs 0.288, iq2_s 0.240, iq3_xxs 0.179, iq3_s 0.132,
// iq1_s 0.454, iq1_m 0.421;
// bounds carry 10-20% margin.
constexpr QuantBound kBounds[] = {
    {DType::kF16, 0.00025}, {DType::kBF16, 0.002}, {DType::kQ8_0, 0.0062},
    {DType::kQ4_0, 0.095},  {DType::kQ4_K, 0.08},  {DType::kQ6_K, 0.02},
    {DType::kQ5_0, 0.048},  {DType::kQ5_1, 0.043},  {DType::kQ5_K, 0.042}, {DType::kQ4_1, 0.09},
    {DType::kQ2_K, 0.30},   {DType::kQ3_K, 0.16},  {DType::kIQ4_NL, 0.082}, {DType::kIQ4_XS, 0.083},
    {DType::kIQ2_XXS, 0.37}, {DType::kIQ2_XS, 0.32}, {DType::kIQ2_S, 0.27}, {DType::kIQ3_XXS, 0.20},
    {DType::kIQ3_S, 0.15},   {DType::kIQ1_S, 0.50}, {DType::kIQ1_M, 0.47},
};

TEST(QuantizeTest, ErrorWithinBoundPerType) {
  const auto x = random_floats(256 * 64, 42);
  for (const auto& b : kBounds) {
    const auto q = quantize(b.dtype, x);
    const double err = rel_rms(dequantize(b.dtype, q, x.size()), x);
    RecordProperty(std::string(dtype_name(b.dtype)), std::to_string(err));
    EXPECT_LT(err, b.max_rel_rms) << dtype_name(b.dtype);
    EXPECT_GT(err, 0.0) << dtype_name(b.dtype);
    std::printf("  %s rel rms error %.5f\n", std::string(dtype_name(b.dtype)).c_str(), err);
  }
}

// The quantizers' output bytes for a fixed input, recorded: every machine
// (any x86 CPU, whatever vector width the compiler used; aarch64, where CI
// runs this suite under qemu) and every rewrite of a search must write the
// same bytes, as a package exported twice must be the same file. The input
// is built with exact float operations (sums of 24-bit fractions), so it is
// the same everywhere. A deliberate change of a quantizer updates its hash.
using testing::fnv1a;

TEST(QuantizeTest, EachTypeWritesTheRecordedBytes) {
  std::vector<float> x(64 * 512);
  uint32_t state = 77;
  const auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;
  };
  for (float& v : x) v = (((uniform() + uniform()) + (uniform() + uniform())) - 2.0f) * 0.05f;
  x[100] = 0.9f;  // an outlier, as real weights have
  const struct {
    DType dtype;
    uint64_t hash;
  } kRecorded[] = {
      {DType::kQ8_0, 0xcfe80f30b79487c7},   {DType::kQ4_0, 0x9f17d5626a292d47},
      {DType::kQ4_1, 0x352f7738d17faf77},   {DType::kQ5_0, 0x85bf83d19d802591},
      {DType::kQ5_1, 0x0e763b1d0455747a},   {DType::kQ2_K, 0x2fff73301b15b78d},
      {DType::kQ3_K, 0x3bb9f3a15e7a2458},   {DType::kQ4_K, 0xb92ed9cf15ad82bd},
      {DType::kQ5_K, 0x4fb27ea0d80e3e95},   {DType::kQ6_K, 0xb5856789c8e13b17},
      {DType::kIQ4_NL, 0x5f7ac851fb5a2934}, {DType::kIQ4_XS, 0x3fca2440c9681a63},
      {DType::kIQ2_XXS, 0xef547769665d19ca}, {DType::kIQ2_XS, 0x8c75ad566671fdab},
      {DType::kIQ2_S, 0xc306c061053b772e},   {DType::kIQ3_XXS, 0x48fdbab418e0f40c},
      {DType::kIQ3_S, 0xcdf8900ffe436f66},   {DType::kIQ1_S, 0xb0d1b5a0962bf2d8},
      {DType::kIQ1_M, 0x4fe53f5020868084},
  };
  for (const auto& r : kRecorded) {
    EXPECT_EQ(fnv1a(quantize(r.dtype, x)), r.hash) << dtype_name(r.dtype) << ": 0x" << std::hex
                                                   << fnv1a(quantize(r.dtype, x));
  }
}

TEST(QuantizeTest, RejectsUnsupportedAndPartialBlocks) {
  std::vector<float> x(48, 1.0f);
  std::vector<uint8_t> out(1024);
  EXPECT_EQ(quantize_row(DType::kQ8_0, x.data(), 48, out.data()), 0u);  // not a multiple of 32
  EXPECT_EQ(quantize_row(DType::kQ4_K, x.data(), 32, out.data()), 0u);
  EXPECT_FALSE(quantize_supports(DType::kQ8_K));  // a GGUF type no model file stores
  EXPECT_EQ(quantize_row(DType::kQ8_K, x.data(), 256, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kQ3_K, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kIQ4_XS, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kIQ2_XXS, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kIQ3_S, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kIQ1_M, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kQ5_K, x.data(), 32, out.data()), 0u);
  EXPECT_EQ(quantize_row(DType::kQ8_0, x.data(), 32, out.data()), 34u);
}

TEST(QuantizeTest, ZeroBlocksStayZero) {
  const std::vector<float> x(256, 0.0f);
  for (const auto& b : kBounds) {
    const auto y = dequantize(b.dtype, quantize(b.dtype, x), 256);
    for (float v : y) ASSERT_EQ(v, 0.0f) << dtype_name(b.dtype);
  }
}

// quantize(dequantize(q)) == q byte for byte where the quantizer's scale
// choice is a fixed point (Q8_0, Q4_0, Q5_0); Q5_1's (max - min) / 31 and the
// K-quants' fits only come close.
TEST(QuantizeTest, RoundTripIsBitExactForQ8_0Q4_0AndQ5_0) {
  const auto x = random_floats(32 * 40, 7);
  for (DType dtype : {DType::kQ8_0, DType::kQ4_0, DType::kQ5_0}) {
    const auto q = quantize(dtype, x);
    const auto q2 = quantize(dtype, dequantize(dtype, q, x.size()));
    EXPECT_EQ(q, q2) << dtype_name(dtype);
  }
  for (DType dtype : {DType::kQ4_1, DType::kQ5_1, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K}) {
    const auto y = dequantize(dtype, quantize(dtype, x), x.size());
    const auto y2 = dequantize(dtype, quantize(dtype, y), x.size());
    EXPECT_LT(rel_rms(y2, y), 0.5 * rel_rms(y, x)) << dtype_name(dtype);
  }
}

// Values exactly halfway between two levels (common in F16 and BF16 weights)
// round as llama.cpp's quantizer rounds them, so that a file's bytes equal
// llama-quantize's: Q8_0 away from zero (roundf), Q4_0 / Q5_0 / Q4_1 / Q5_1
// upward (their truncation of x / d + offset + 0.5). Each block has a step of
// exactly 1 (its largest value sets it), so x / d is x.
TEST(QuantizeTest, HalvesRoundAsLlamaCppsQuantizer) {
  const auto levels = [](DType dtype, std::vector<float> x) {
    x.resize(32, 0.0f);
    const auto q = dequantize(dtype, quantize(dtype, x), 32);
    return std::vector<float>(q.begin(), q.begin() + 8);
  };
  // Q8_0: d = 127 / 127.
  EXPECT_EQ(levels(DType::kQ8_0, {127, 64.5f, -64.5f, 0.5f, -0.5f, 2.5f, -2.5f, 126.5f}),
            (std::vector<float>{127, 65, -65, 1, -1, 3, -3, 127}));
  // Q4_0: d = -8 / -8 = 1, levels x + 8 in 0..15.
  EXPECT_EQ(levels(DType::kQ4_0, {-8, 0.5f, -0.5f, 2.5f, -2.5f, 6.5f, -7.5f, 1}),
            (std::vector<float>{-8, 1, 0, 3, -2, 7, -7, 1}));
  // Q5_0: d = -16 / -16 = 1, levels x + 16 in 0..31.
  EXPECT_EQ(levels(DType::kQ5_0, {-16, 0.5f, -0.5f, 2.5f, -2.5f, 14.5f, -15.5f, 3}),
            (std::vector<float>{-16, 1, 0, 3, -2, 15, -15, 3}));
  // Q4_1: min 0, max 15: d = 1. Q5_1: min 0, max 31.
  EXPECT_EQ(levels(DType::kQ4_1, {15, 0.5f, 1.5f, 2.5f, 13.5f, 14.5f, 7.5f, 4}),
            (std::vector<float>{15, 1, 2, 3, 14, 15, 8, 4}));
  EXPECT_EQ(levels(DType::kQ5_1, {31, 0.5f, 1.5f, 2.5f, 29.5f, 30.5f, 15.5f, 4}),
            (std::vector<float>{31, 1, 2, 3, 30, 31, 16, 4}));
}

// Q4_1 by hand: d, m, then element i's nibble in qs[i % 16] (low for i < 16).
TEST(QuantizeTest, Q4_1BlocksDequantizeByTheGgufLayout) {
  uint8_t block[20] = {};
  const uint16_t d = f32_to_f16(0.25f), m = f32_to_f16(-1.5f);
  std::memcpy(block, &d, 2);
  std::memcpy(block + 2, &m, 2);
  for (int j = 0; j < 16; ++j) block[4 + j] = static_cast<uint8_t>(j | (15 - j) << 4);
  std::vector<float> out(32);
  dequantize_row(WeightMatrix{DType::kQ4_1, 1, 32, block}, 0, out.data());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 0.25f * (i < 16 ? i : 31 - i) - 1.5f) << "element " << i;
}

// The GGUF layout of Q5_0 and Q5_1 written out by hand: element i's low 4
// bits are qs[i]'s low nibble (i < 16) or qs[i - 16]'s high nibble, its
// fifth bit is bit i of the little-endian uint32 qh.
TEST(QuantizeTest, Q5BlocksDequantizeByTheGgufLayout) {
  uint8_t block[24] = {};
  const uint16_t d = f32_to_f16(0.5f), m = f32_to_f16(-2.0f);
  const uint32_t qh = 0xA5C3'0F01u;
  for (DType dtype : {DType::kQ5_0, DType::kQ5_1}) {
    const bool q5_1 = dtype == DType::kQ5_1;
    uint8_t* p = block;
    std::memcpy(p, &d, 2), p += 2;
    if (q5_1) std::memcpy(p, &m, 2), p += 2;
    std::memcpy(p, &qh, 4), p += 4;
    for (int j = 0; j < 16; ++j) p[j] = static_cast<uint8_t>(j | (15 - j) << 4);
    std::vector<float> out(32);
    dequantize_row(WeightMatrix{dtype, 1, 32, block}, 0, out.data());
    for (int i = 0; i < 32; ++i) {
      const int low = i < 16 ? i : 15 - (i - 16);
      const int q = low + 16 * static_cast<int>((qh >> i) & 1);
      const float want = q5_1 ? 0.5f * q - 2.0f : 0.5f * (q - 16);
      EXPECT_EQ(out[i], want) << dtype_name(dtype) << " element " << i;
    }
  }
}

// Dequantizes a tensor of a llama.cpp-quantized eco model and compares it
// with the same tensor of the F32 model.
struct EcoCase {
  const char* file;
  const char* tensor;
  DType dtype;
  double max_rel_rms;
};

constexpr EcoCase kEcoCases[] = {
    {"eco-llama-Q8_0.gguf", "token_embd.weight", DType::kQ8_0, 0.0062},
    {"eco-llama-Q8_0.gguf", "blk.0.ffn_down.weight", DType::kQ8_0, 0.0062},
    {"eco-llama-Q4_0.gguf", "blk.0.attn_q.weight", DType::kQ4_0, 0.095},
    {"eco-llama-Q4_0.gguf", "output.weight", DType::kQ6_K, 0.02},
    {"eco-llama-Q4_K_M.gguf", "blk.0.attn_q.weight", DType::kQ4_K, 0.08},
    {"eco-llama-Q4_K_M.gguf", "blk.0.ffn_down.weight", DType::kQ4_K, 0.08},
    {"eco-llama-Q5_K_M.gguf", "blk.0.attn_q.weight", DType::kQ5_K, 0.042},
    {"eco-llama-Q6_K.gguf", "blk.0.ffn_up.weight", DType::kQ6_K, 0.02},
    {"eco-llama-F16.gguf", "blk.0.ffn_up.weight", DType::kF16, 0.00025},
    {"eco-llama-BF16.gguf", "blk.0.ffn_up.weight", DType::kBF16, 0.002},
};

TEST(EcoDequantizeTest, MatchesF32ModelWithinTypeError) {
  LLMPACK_REQUIRE_FIXTURE(f32_path, "gguf/ecosystem/eco-llama-F32.gguf");
  testing::MiniGguf f32;
  ASSERT_TRUE(f32.load(f32_path));
  for (const auto& c : kEcoCases) {
    testing::MiniGguf q;
    ASSERT_TRUE(q.load(::llmpack::testing::fixture_path(std::string("gguf/ecosystem/") + c.file))) << c.file;
    const auto* tq = q.find(c.tensor);
    const auto* tf = f32.find(c.tensor);
    ASSERT_TRUE(tq && tf) << c.tensor;
    ASSERT_EQ(tq->type, static_cast<uint32_t>(c.dtype)) << c.file << " " << c.tensor;
    ASSERT_EQ(tq->ne, tf->ne);
    const int64_t cols = tq->ne[0], rows = tq->ne[1];
    const WeightMatrix wq{c.dtype, rows, cols, tq->data};
    std::vector<float> got(static_cast<size_t>(rows * cols)), want(got.size());
    for (int64_t r = 0; r < rows; ++r) dequantize_row(wq, r, got.data() + r * cols);
    std::memcpy(want.data(), tf->data, want.size() * 4);
    const double err = rel_rms(got, want);
    std::printf("  %s %s rel rms error %.5f\n", c.file, c.tensor, err);
    EXPECT_LT(err, c.max_rel_rms) << c.file << " " << c.tensor;
    // Our quantizer on the F32 original: no worse than llama.cpp's by much.
    if (quantize_supports(c.dtype)) {
      std::vector<uint8_t> mine(static_cast<size_t>(row_bytes(*dtype_info(c.dtype), cols) * rows));
      const int64_t rb = row_bytes(*dtype_info(c.dtype), cols);
      for (int64_t r = 0; r < rows; ++r)
        ASSERT_GT(quantize_row(c.dtype, want.data() + r * cols, cols, mine.data() + r * rb), 0u);
      std::vector<float> back(want.size());
      const WeightMatrix wm{c.dtype, rows, cols, mine.data()};
      for (int64_t r = 0; r < rows; ++r) dequantize_row(wm, r, back.data() + r * cols);
      const double mine_err = rel_rms(back, want);
      std::printf("    ours %.5f\n", mine_err);
      EXPECT_LT(mine_err, 1.15 * err + 1e-6) << c.file << " " << c.tensor;
      // Q8_0, Q4_0, F16, BF16 are deterministic round-to-nearest: our bytes equal llama.cpp's.
      if (c.dtype == DType::kQ8_0 || c.dtype == DType::kQ4_0 || c.dtype == DType::kF16 ||
          c.dtype == DType::kBF16) {
        size_t diff = 0;
        for (size_t i = 0; i < mine.size(); ++i) diff += mine[i] != tq->data[i];
        EXPECT_EQ(diff, 0u) << c.file << " " << c.tensor;
      }
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
