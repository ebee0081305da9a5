// matmul on quantized weights. The scalar reference must equal dequantize +
// exact dot (in double); SIMD paths quantize the activations per block of 32
// to int8 (step d = amax/127, error <= d/2 per element), so for one output
//   |y_simd - y_ref| <= sum_b (amax_b / 254) * sum_{i in b} |w_i|  (+ float rounding)
// which is the bound checked below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::quantize_like_the_kernels;
using testing::QuantizedActs;
using testing::random_floats;


void check(DType dtype, int64_t rows, int64_t cols, int64_t n_tokens, ThreadPool& pool) {
  const auto wf = random_floats(static_cast<size_t>(rows * cols), 100 + rows + cols);
  const int64_t rb = row_bytes(*dtype_info(dtype), cols);
  std::vector<uint8_t> packed(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    ASSERT_GT(quantize_row(dtype, wf.data() + r * cols, cols, packed.data() + r * rb), 0u);
  const WeightMatrix w{dtype, rows, cols, packed.data()};
  auto x = random_floats(static_cast<size_t>(n_tokens * cols), 200 + n_tokens, 2.0f);
  x[0] = 40.0f;  // an outlier, as real activations have
  std::vector<float> wd(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(w, r, wd.data() + r * cols);

  const auto ref = testing::matmul_on_path(KernelPath::kScalar, w, x, n_tokens, pool);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t t = 0; t < n_tokens; ++t) {
      double exact = 0, mag = 0;
      for (int64_t c = 0; c < cols; ++c) {
        exact += double(wd[r * cols + c]) * x[t * cols + c];
        mag += std::fabs(double(wd[r * cols + c]) * x[t * cols + c]);
      }
      ASSERT_NEAR(ref[t * rows + r], exact, 1e-6 * mag + 1e-7) << dtype_name(dtype);
    }

  for (KernelPath p : testing::simd_paths()) {
    const auto y = testing::matmul_on_path(p, w, x, n_tokens, pool);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t t = 0; t < n_tokens; ++t) {
        double bound = 0, mag = 0;
        for (int64_t b = 0; b < cols / 32; ++b) {
          double amax = 0, wsum = 0;
          for (int i = 0; i < 32; ++i) {
            const int64_t c = b * 32 + i;
            amax = std::max(amax, double(std::fabs(x[t * cols + c])));
            wsum += std::fabs(wd[r * cols + c]);
            mag += std::fabs(double(wd[r * cols + c]) * x[t * cols + c]);
          }
          bound += amax / 254.0 * wsum;
        }
        ASSERT_NEAR(y[t * rows + r], ref[t * rows + r], 1.01 * bound + 1e-5 * mag)
            << kernel_path_name(p) << " " << dtype_name(dtype) << " rows=" << rows
            << " cols=" << cols << " tokens=" << n_tokens << " r=" << r << " t=" << t;
      }
  }
}

class MatmulQuantTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulQuantTest, OddShapesMatchReference) {
  ThreadPool pool1(1), pool2(2);
  const int64_t block = dtype_info(GetParam())->block_elems;
  for (int64_t rows : {1, 3, 4, 5, 17, 37})
    for (int64_t cols : {block, 2 * block, 3 * block, 9 * block})
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 9}) {  // 1..3: decode kernels
        check(GetParam(), rows, cols, n_tokens, rows % 2 ? pool1 : pool2);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// The prefill path packs rows 8 at a time into panels of 32 rows and columns
// 1024 at a time, and sums blocks of up to 192 tokens in a buffer: shapes that
// leave partial panels, several column chunks, token tails (n_tokens % 4) and
// more tokens than one sum block, split over 1 and 2 threads.
TEST_P(MatmulQuantTest, PackedPrefillPanelsChunksAndTails) {
  ThreadPool pool1(1), pool2(2);
  const int64_t block = dtype_info(GetParam())->block_elems;
  const int64_t cols = block == 32 ? 41 * 32 : 5 * 256;  // > one 1024-column chunk
  for (int64_t rows : {8, 13, 40, 71})
    for (int64_t n_tokens : {4, 6, 11}) {
      check(GetParam(), rows, cols, n_tokens, rows % 2 ? pool1 : pool2);
      if (::testing::Test::HasFatalFailure()) return;
    }
  check(GetParam(), 33, 2048 + block, 8, pool2);  // three column chunks, a 1-row panel
  if (::testing::Test::HasFatalFailure()) return;
  for (int64_t n_tokens : {192, 197, 390}) {
    check(GetParam(), 19, 2 * block * (block == 32 ? 17 : 3), n_tokens, n_tokens % 2 ? pool1 : pool2);
    if (::testing::Test::HasFatalFailure()) return;
  }
  check(GetParam(), 19, 3 * block, 200, pool2);  // one column chunk: stored straight to y
}

// Decode (1-3 tokens) of rows of several 8-block steps with and without a
// tail of n_blocks % 8: the Q4_0 and Q8_0 decode kernels step 8 blocks at a
// time (Q4_0 through the paired activations) and take the rest one by one.
TEST_P(MatmulQuantTest, DecodeStepsAndTails) {
  ThreadPool pool1(1), pool2(2);
  const int64_t block = dtype_info(GetParam())->block_elems;
  for (int64_t cols : {int64_t{768}, int64_t{2048}, int64_t{15 * 32}, int64_t{29 * 32}, int64_t{7 * 256}})
    for (int64_t n_tokens : {1, 2, 3}) {
      if (cols % block != 0) continue;
      check(GetParam(), 35, cols, n_tokens, n_tokens == 2 ? pool1 : pool2);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

// Every block tail (n_blocks % 8 = 0..7, with and without whole steps before
// it), every row tail of the AVX-512 decode's 4-row tiles, 1-3 tokens: each
// SIMD path against the exact dot of the dequantized weights and the
// activations quantized as above, so only float rounding is allowed (about
// 1e-5 of the largest intermediate sums, where the activation rounding bound
// of `check` would hide a tail block weighted 1% wrong). A path without a
// kernel for the type (simd_matmul_takes false) must give the reference's
// exact dot of the unquantized activations instead.
TEST(MatmulQuantTest, DecodeTailsMatchTheQuantizedActivationsExactly) {
  ThreadPool pool(2);
  for (DType dtype : testing::kBlockTypes) {
    const int64_t block = dtype_info(dtype)->block_elems;
    const int64_t max_blocks = block == 32 ? 23 : 3;
    for (int64_t n_blocks = 1; n_blocks <= max_blocks; ++n_blocks)
      for (int64_t rows : {1, 6}) {
        const int64_t cols = n_blocks * block, n_tokens = 1 + (n_blocks + rows) % 3;
        const auto wf = random_floats(static_cast<size_t>(rows * cols), static_cast<uint32_t>(11 + cols + rows));
        const auto packed = testing::pack_rows(dtype, wf, rows, cols);
        const WeightMatrix w{dtype, rows, cols, packed.data()};
        const auto x = random_floats(static_cast<size_t>(n_tokens * cols), static_cast<uint32_t>(5 + cols), 2.0f);
        std::vector<float> wd(static_cast<size_t>(rows * cols));
        for (int64_t r = 0; r < rows; ++r) dequantize_row(w, r, wd.data() + r * cols);
        for (KernelPath p : testing::simd_paths()) {
          const auto y = testing::matmul_on_path(p, w, x, n_tokens, pool);
          const bool quantizes = simd_matmul_takes(p, dtype);
          for (int64_t t = 0; t < n_tokens; ++t) {
            const QuantizedActs a = quantize_like_the_kernels(x.data() + t * cols, cols);
            for (int64_t r = 0; r < rows; ++r) {
              double exact = 0, scale = 0;
              for (int64_t c = 0; c < cols; ++c) {
                exact += double(wd[r * cols + c]) * (quantizes ? a.d[c / 32] * a.q[c] : double(x[t * cols + c]));
                scale += (std::fabs(double(wd[r * cols + c])) + 1.0) * a.d[c / 32] * 128.0;
              }
              ASSERT_NEAR(y[t * rows + r], exact, 1e-5 * scale)
                  << kernel_path_name(p) << " " << dtype_name(dtype) << " blocks=" << n_blocks << " rows=" << rows
                  << " tokens=" << n_tokens << " r=" << r << " t=" << t;
            }
          }
        }
      }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulQuantTest,
                         ::testing::ValuesIn(testing::kBlockTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

// y = w . x of a one-row matrix must equal the dequantized dot exactly (to
// float rounding) on every SIMD path, for x all +1 and all -1 (quantized
// exactly to +-127 with d = 1/127).
// n_tokens > 3 takes the packed prefill path (every token the same x).
void expect_exact_at_limits(DType dtype, const std::vector<uint8_t>& row, int64_t cols, const char* what,
                            int64_t n_tokens = 1) {
  const WeightMatrix w{dtype, 1, cols, row.data()};
  std::vector<float> wd(static_cast<size_t>(cols));
  dequantize_row(w, 0, wd.data());
  ThreadPool pool(1);
  for (float sign : {1.0f, -1.0f}) {
    const std::vector<float> x(static_cast<size_t>(cols * n_tokens), sign);
    double exact = 0;
    for (int64_t c = 0; c < cols; ++c) exact += double(wd[c]) * x[c];
    for (KernelPath p : testing::simd_paths()) {
      const auto y = testing::matmul_on_path(p, w, x, n_tokens, pool);
      for (int64_t t = 0; t < n_tokens; ++t)
        EXPECT_NEAR(y[t], exact, 1e-5 * std::fabs(exact) + 1e-3)
            << kernel_path_name(p) << " " << dtype_name(dtype) << " cols=" << cols << " " << what
            << " sign=" << sign << " tokens=" << n_tokens << " t=" << t;
    }
  }
}

// Q4_0, Q4_K and Q6_K decode sum a step's 8 block dots in int16 and int32
// lanes: the largest dots (every nibble 15 or 0, every activation at +-127)
// must come out exact, not saturated. Q4_0: weights 15 - 8 = 7 or 0 - 8 = -8
// with d = 1. Q4_K: every 6-bit scale and min 63 (all scale bytes 0xFF), d = 1,
// dmin = 0 or 1. Q6_K: every q 63 (two groups' products fold to 32004 in
// int16) or 0, the 16-element scales all 127 or all -128, d = 1.
TEST(MatmulQuantTest, DecodeAtTheInt16Limits) {
  const uint16_t one = f32_to_f16(1.0f), zero = 0;
  for (int64_t n_blocks : {8, 24, 29})
    for (uint8_t nibbles : {uint8_t{0xFF}, uint8_t{0x00}, uint8_t{0x0F}}) {
      std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * 18, nibbles);
      for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(row.data() + 18 * b, &one, 2);
      expect_exact_at_limits(DType::kQ4_0, row, 32 * n_blocks, nibbles == 0xFF ? "15s" : nibbles ? "15/0" : "0s");
    }
  for (int64_t n_super : {1, 3})
    for (uint16_t dmin : {zero, one})
      for (uint8_t nibbles : {uint8_t{0xFF}, uint8_t{0x00}}) {
        std::vector<uint8_t> row(static_cast<size_t>(n_super) * 144, 0xFF);
        for (int64_t b = 0; b < n_super; ++b) {
          std::memcpy(row.data() + 144 * b, &one, 2);
          std::memcpy(row.data() + 144 * b + 2, &dmin, 2);
          std::memset(row.data() + 144 * b + 16, nibbles, 128);
        }
        expect_exact_at_limits(DType::kQ4_K, row, 256 * n_super, nibbles ? "15s" : "0s");
      }
  static_assert(sizeof(BlockQ6_K) == 210);
  for (int64_t n_super : {1, 3})
    for (int8_t scale : {int8_t{127}, int8_t{-128}})
      for (uint8_t bits : {uint8_t{0xFF}, uint8_t{0x00}}) {
        std::vector<uint8_t> row(static_cast<size_t>(n_super) * 210, bits);  // ql and qh: q = 63 or 0
        for (int64_t b = 0; b < n_super; ++b) {
          std::memset(row.data() + 210 * b + 192, static_cast<uint8_t>(scale), 16);
          std::memcpy(row.data() + 210 * b + 208, &one, 2);
        }
        expect_exact_at_limits(DType::kQ6_K, row, 256 * n_super, bits ? "63s" : "0s");
      }
}

// Q5_0 and Q5_1 keep q unsigned (0..31): decode sums one vpmaddubsw result
// (lanes up to 2 * 31 * 127 = 7874) per vpmaddwd, the packed prefill four
// (31496). Every q 31 (qs and qh all ones) or 0, or 31 / 0 by nibble, with
// activations at +-127, in decode (1 token) and prefill (8 tokens).
TEST(MatmulQuantTest, Q5AndQ4_1DecodeAndPrefillAtTheInt16Limits) {
  const uint16_t one = f32_to_f16(1.0f), minus = f32_to_f16(-3.0f);
  for (DType dtype : {DType::kQ5_0, DType::kQ5_1}) {
    const int64_t bytes = dtype_info(dtype)->block_bytes, quants = bytes - 20;  // qh and qs after d (and m)
    for (int64_t n_blocks : {8, 24, 29})
      for (uint8_t bits : {uint8_t{0xFF}, uint8_t{0x00}, uint8_t{0x0F}}) {
        std::vector<uint8_t> row(static_cast<size_t>(n_blocks * bytes), bits);
        for (int64_t b = 0; b < n_blocks; ++b) {
          std::memcpy(row.data() + bytes * b, &one, 2);
          if (dtype == DType::kQ5_1) std::memcpy(row.data() + bytes * b + 2, &minus, 2);
          if (bits == 0x0F) std::memset(row.data() + bytes * b + quants, 0xFF, 2);  // qh: elements 0..15 high
        }
        const char* what = bits == 0xFF ? "31s" : bits ? "mixed" : "0s";
        expect_exact_at_limits(dtype, row, 32 * n_blocks, what);
        expect_exact_at_limits(dtype, row, 32 * n_blocks, what, 8);
      }
  }
  // Q4_1: nibbles 15 (or 15 / 0), d = 1, m = -3; the packed prefill sums 8
  // vpmaddubsw results in int16 as for Q4_0
  for (int64_t n_blocks : {8, 29})
    for (uint8_t nibbles : {uint8_t{0xFF}, uint8_t{0x0F}}) {
      std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * 20, nibbles);
      for (int64_t b = 0; b < n_blocks; ++b) {
        std::memcpy(row.data() + 20 * b, &one, 2);
        std::memcpy(row.data() + 20 * b + 2, &minus, 2);
      }
      expect_exact_at_limits(DType::kQ4_1, row, 32 * n_blocks, nibbles == 0xFF ? "15s" : "15/0");
      expect_exact_at_limits(DType::kQ4_1, row, 32 * n_blocks, nibbles == 0xFF ? "15s" : "15/0", 8);
    }
}

// Q8_0's signed quants at their extremes (every q -128, the value no
// quantizer writes but a file may hold; every q 127; or alternating), d = 1,
// with activations at +-127, in decode and in the packed prefill: the AVX2
// prefill takes |q| by vpsignb, the AVX-VNNI one stores q + 128 (0 and 255
// here) and subtracts 128 * qsum, so both ends of the byte must come out
// exact. Q6_K's extremes (q 63 or 0, scales 127 or -128) in the prefill too
// (two groups' products folded in int16, 32004 at most, then its scales).
TEST(MatmulQuantTest, Q8_0AndQ6_KPrefillAtTheirExtremesOnEveryPath) {
  const uint16_t one = f32_to_f16(1.0f);
  for (int64_t n_blocks : {8, 29})
    for (int fill : {-128, 127, 0}) {
      std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * 34);
      for (int64_t b = 0; b < n_blocks; ++b) {
        std::memcpy(row.data() + 34 * b, &one, 2);
        for (int i = 0; i < 32; ++i)
          row[34 * b + 2 + i] = static_cast<uint8_t>(fill != 0 ? fill : (i % 2 ? 127 : -128));
      }
      const char* what = fill == -128 ? "-128s" : fill == 127 ? "127s" : "-128/127";
      expect_exact_at_limits(DType::kQ8_0, row, 32 * n_blocks, what);
      expect_exact_at_limits(DType::kQ8_0, row, 32 * n_blocks, what, 8);
    }
  for (int8_t scale : {int8_t{127}, int8_t{-128}})
    for (uint8_t bits : {uint8_t{0xFF}, uint8_t{0x00}}) {
      std::vector<uint8_t> row(2 * 210, bits);  // ql and qh: q = 63 or 0
      for (int64_t b = 0; b < 2; ++b) {
        std::memset(row.data() + 210 * b + 192, static_cast<uint8_t>(scale), 16);
        std::memcpy(row.data() + 210 * b + 208, &one, 2);
      }
      expect_exact_at_limits(DType::kQ6_K, row, 512, bits ? "63s" : "0s", 8);
    }
}

// IQ4_NL and IQ4_XS rows whose indices cover the grid's ends (0 -> -127,
// 15 -> 113) and everything between, against activations of +-1 (exact at
// +-127): decode must be exact on every path. The AVX-VNNI decode looks the
// indices up in the grid + 128 and takes 128 * qsum back per unit; qsum is
// +-127 * 32 here, so a wrong offset shows at once (random activations of
// either sign mostly cancel it). IQ4_XS: every 6-bit scale from 0 to 63 once
// over the row's 8 super-blocks.
TEST(MatmulQuantTest, Iq4DecodeOfExactActivationsIsExactOnEveryPath) {
  const uint16_t half = f32_to_f16(0.5f);
  for (int64_t n_blocks : {8, 16, 29}) {
    std::vector<uint8_t> row(static_cast<size_t>(n_blocks) * sizeof(BlockIQ4_NL));
    for (int64_t b = 0; b < n_blocks; ++b) {
      std::memcpy(row.data() + 18 * b, &half, 2);
      for (int i = 0; i < 16; ++i) row[18 * b + 2 + i] = static_cast<uint8_t>((3 * b + 5 * i) % 16 | (i + b) % 16 << 4);
    }
    for (int64_t n_tokens : {1, 2, 3}) expect_exact_at_limits(DType::kIQ4_NL, row, 32 * n_blocks, "grid", n_tokens);
  }
  std::vector<BlockIQ4_XS> blocks(8);
  for (int sb = 0; sb < 8; ++sb) {
    BlockIQ4_XS& b = blocks[static_cast<size_t>(sb)];
    b.d = half;
    b.scales_h = 0;
    for (int j = 0; j < 8; ++j) {
      const int scale = 8 * sb + j;  // 0..63 over the row
      b.scales_h = static_cast<uint16_t>(b.scales_h | (scale >> 4) << (2 * j));
      if (j % 2 == 0) b.scales_l[j / 2] = static_cast<uint8_t>(scale & 15);
      else b.scales_l[j / 2] = static_cast<uint8_t>(b.scales_l[j / 2] | (scale & 15) << 4);
    }
    for (int i = 0; i < 128; ++i) b.qs[i] = static_cast<uint8_t>((sb + 7 * i) % 16 | (2 * i + sb) % 16 << 4);
  }
  std::vector<uint8_t> row(sizeof(BlockIQ4_XS) * blocks.size());
  std::memcpy(row.data(), blocks.data(), row.size());
  for (int64_t n_tokens : {1, 2, 3}) expect_exact_at_limits(DType::kIQ4_XS, row, 256 * 8, "scales 0..63", n_tokens);
}

// Callers size the scratch once for their largest call (the engine: its
// chunk), then make calls of fewer tokens; decode's calls (1-3 tokens) use
// more bytes per token than prefill's (the paired copy), so the size must
// still grow with the token count. Then a 1-token call in a buffer sized for 4.
TEST(MatmulQuantTest, ScratchForMoreTokensServesFewer) {
  for (DType dtype : testing::kBlockTypes)
    for (int64_t cols : {int64_t{256}, int64_t{2048}, int64_t{29 * 256}})
      for (int64_t n = 1; n < 9; ++n)
        EXPECT_LE(matmul_scratch_bytes(dtype, cols, n), matmul_scratch_bytes(dtype, cols, n + 1))
            << dtype_name(dtype) << " cols=" << cols << " n=" << n;
  const int64_t cols = 24 * 32;
  const auto wf = random_floats(static_cast<size_t>(5 * cols), 7);
  std::vector<uint8_t> q(5 * row_bytes(*dtype_info(DType::kQ4_0), cols));
  for (int r = 0; r < 5; ++r)
    quantize_row(DType::kQ4_0, wf.data() + r * cols, cols, q.data() + r * row_bytes(*dtype_info(DType::kQ4_0), cols));
  const WeightMatrix w{DType::kQ4_0, 5, cols, q.data()};
  const auto x = random_floats(static_cast<size_t>(cols), 8);
  ThreadPool pool(2);
  std::vector<uint8_t> big(matmul_scratch_bytes(DType::kQ4_0, cols, 4)), exact(matmul_scratch_bytes(DType::kQ4_0, cols, 1));
  std::vector<float> y_big(5), y_exact(5);
  matmul(w, x.data(), 1, y_big.data(), big.data(), pool);
  matmul(w, x.data(), 1, y_exact.data(), exact.data(), pool);
  EXPECT_EQ(y_big, y_exact);
}

// A hand-built Q5_K super-block (bytes no quantizer chose: every scale, min
// and fifth-bit pattern the byte sequence gives): the scalar path equals the
// dequantized dot, each SIMD path the dot with the activations quantized as
// the kernels do, in decode (1 token) and prefill (6 tokens); a path without
// a Q5_K kernel, the unquantized dot as the reference.
TEST(MatmulQuantTest, Q5KHandBuiltBlockOnEveryPath) {
  std::vector<uint8_t> block(176);
  for (size_t i = 0; i < block.size(); ++i) block[i] = static_cast<uint8_t>(i * 37 + 11);
  const uint16_t d = f32_to_f16(0.01f), dmin = f32_to_f16(0.02f);
  std::memcpy(block.data(), &d, 2);
  std::memcpy(block.data() + 2, &dmin, 2);
  const WeightMatrix w{DType::kQ5_K, 1, 256, block.data()};
  std::vector<float> wd(256);
  dequantize_row(w, 0, wd.data());
  EXPECT_NE(wd[0], wd[1]);
  const auto x1 = random_floats(256, 3);
  const QuantizedActs a = quantize_like_the_kernels(x1.data(), 256);
  double exact = 0, exact_q = 0, scale = 0;
  for (int i = 0; i < 256; ++i) {
    exact += double(wd[i]) * x1[i];
    exact_q += double(wd[i]) * a.d[i / 32] * a.q[i];
    scale += (std::fabs(double(wd[i])) + 1.0) * a.d[i / 32] * 128.0;
  }
  ThreadPool pool(1);
  for (int64_t n_tokens : {1, 6}) {
    std::vector<float> x;
    for (int64_t t = 0; t < n_tokens; ++t) x.insert(x.end(), x1.begin(), x1.end());
    const auto ref = testing::matmul_on_path(KernelPath::kScalar, w, x, n_tokens, pool);
    for (int64_t t = 0; t < n_tokens; ++t) EXPECT_NEAR(ref[t], exact, 1e-4 * std::fabs(exact) + 1e-5);
    for (KernelPath p : testing::simd_paths()) {
      const auto y = testing::matmul_on_path(p, w, x, n_tokens, pool);
      const double expect = simd_matmul_takes(p, DType::kQ5_K) ? exact_q : exact;
      for (int64_t t = 0; t < n_tokens; ++t)
        EXPECT_NEAR(y[t], expect, 1e-5 * scale) << kernel_path_name(p) << " tokens=" << n_tokens << " t=" << t;
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
