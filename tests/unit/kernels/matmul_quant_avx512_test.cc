// The AVX-512 VNNI prefill GEMM (x86/matmul_packed_avx512.cc) against the
// scalar reference. It packs rows 16 at a time into panels, 64 rows per
// group, columns 1024 at a time, and tiles 32 rows x 6 tokens, so the shapes
// below leave partial panels (rows % 16), groups of 1 to 4 panels (a lone
// panel after the 2-panel tiles), several column chunks and every token tail
// (n_tokens % 6).
// Error bound: activations are quantized per 32 to int8 (step d = amax/127,
// error <= d/2 per element), so |y_simd - y_ref| <= sum_b (amax_b / 254) * sum_b |w|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::random_floats;


struct Case {
  std::vector<uint8_t> packed;
  WeightMatrix w;
  std::vector<float> x;
};

Case make_case(DType dtype, int64_t rows, int64_t cols, int64_t n_tokens, uint32_t seed) {
  Case c;
  const auto wf = random_floats(static_cast<size_t>(rows * cols), seed);
  const int64_t rb = row_bytes(*dtype_info(dtype), cols);
  c.packed.resize(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_GT(quantize_row(dtype, wf.data() + r * cols, cols, c.packed.data() + r * rb), 0u);
  c.w = WeightMatrix{dtype, rows, cols, c.packed.data()};
  c.x = random_floats(static_cast<size_t>(n_tokens * cols), seed + 1, 2.0f);
  c.x[0] = 40.0f;  // an outlier, as real activations have
  return c;
}

// AVX-512 result vs the scalar reference, within the activation rounding bound.
void check_avx512(DType dtype, int64_t rows, int64_t cols, int64_t n_tokens, ThreadPool& pool) {
  const Case c = make_case(dtype, rows, cols, n_tokens, static_cast<uint32_t>(7 * rows + cols + n_tokens));
  std::vector<float> wd(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(c.w, r, wd.data() + r * cols);
  const auto ref = testing::matmul_on_path(KernelPath::kScalar, c.w, c.x, n_tokens, pool);
  const auto y = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, n_tokens, pool);
  for (int64_t t = 0; t < n_tokens; ++t)
    for (int64_t r = 0; r < rows; ++r) {
      double bound = 0, mag = 0;
      for (int64_t b = 0; b < cols / 32; ++b) {
        double amax = 0, wsum = 0;
        for (int64_t c0 = b * 32; c0 < b * 32 + 32; ++c0) {
          amax = std::max(amax, double(std::fabs(c.x[t * cols + c0])));
          wsum += std::fabs(wd[r * cols + c0]);
          mag += std::fabs(double(wd[r * cols + c0]) * c.x[t * cols + c0]);
        }
        bound += amax / 254.0 * wsum;
      }
      ASSERT_NEAR(y[t * rows + r], ref[t * rows + r], 1.01 * bound + 1e-5 * mag)
          << dtype_name(dtype) << " rows=" << rows << " cols=" << cols << " tokens=" << n_tokens
          << " r=" << r << " t=" << t;
    }
}

class MatmulQuantAvx512Test : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    const auto paths = testing::simd_paths();  // empty in LLMPACK_FORCE_SCALAR builds
    if (std::find(paths.begin(), paths.end(), KernelPath::kAvx512) == paths.end())
      GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/DQ/VNNI (or the build has no AVX-512 path)";
  }
  int64_t block() const { return dtype_info(GetParam())->block_elems; }
};

TEST_P(MatmulQuantAvx512Test, PanelAndTokenTails) {
  ThreadPool pool1(1), pool2(2);
  const int64_t cols = 2 * 256;
  for (int64_t rows : {1, 15, 16, 17, 31, 33, 48, 63, 64, 81, 127})
    for (int64_t n_tokens : {4, 5, 6, 7, 11, 12, 13}) {
      check_avx512(GetParam(), rows, cols, n_tokens, rows % 2 ? pool1 : pool2);
      if (HasFatalFailure()) return;
    }
}

TEST_P(MatmulQuantAvx512Test, SeveralColumnChunks) {
  ThreadPool pool1(1), pool2(2);
  // 1024 columns per chunk: a partial second chunk, then three chunks exactly
  for (int64_t cols : {1024 + block(), int64_t{3072}})
    for (int64_t rows : {40, 97}) {
      check_avx512(GetParam(), rows, cols, 9, pool1);
      if (HasFatalFailure()) return;
      check_avx512(GetParam(), rows, cols, 16, pool2);
      if (HasFatalFailure()) return;
    }
}

// Two threads split rows with a grain of 32: each range packs its own panels
// and must give the same bits as one thread doing all rows.
TEST_P(MatmulQuantAvx512Test, ThreadSplitGivesSameBits) {
  ThreadPool pool1(1), pool2(2);
  const Case c = make_case(GetParam(), 203, 1024 + 2 * block(), 14, 5);
  const auto y1 = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, 14, pool1);
  const auto y2 = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, 14, pool2);
  ASSERT_EQ(y1.size(), y2.size());
  for (size_t i = 0; i < y1.size(); ++i) ASSERT_EQ(y1[i], y2[i]) << "i=" << i;
}

// Zero weights give exactly zero, whatever the offsets folded into the int32
// sums (Q4_0's -8, Q8_0's +128, Q6_K's -32) and the activations.
TEST_P(MatmulQuantAvx512Test, ZeroWeightsGiveZero) {
  ThreadPool pool(1);
  const int64_t rows = 37, cols = 512, n_tokens = 8;
  const std::vector<float> zeros(static_cast<size_t>(rows * cols), 0.0f);
  const int64_t rb = row_bytes(*dtype_info(GetParam()), cols);
  std::vector<uint8_t> packed(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    ASSERT_GT(quantize_row(GetParam(), zeros.data() + r * cols, cols, packed.data() + r * rb), 0u);
  const WeightMatrix w{GetParam(), rows, cols, packed.data()};
  const auto x = random_floats(static_cast<size_t>(n_tokens * cols), 9, 3.0f);
  const auto y = testing::matmul_on_path(KernelPath::kAvx512, w, x, n_tokens, pool);
  for (float v : y) ASSERT_EQ(v, 0.0f);
}

// A real-sized projection (Llama-3.2-1B q/o shape, 64 rows of it) over a
// prefill batch: many tiles, chunks and the tokens' tail.
TEST_P(MatmulQuantAvx512Test, PrefillShape) {
  ThreadPool pool(2);
  check_avx512(GetParam(), 64 + 5, 2048, 37, pool);
}

// The AVX-512 decode kernels (1 to 3 tokens) take rows 4 at a time and, for
// Q4_0 and Q8_0, blocks 8 at a time (Q4_0 in two groups of 4 gathered by one
// permute each) with single blocks after: every row tail (rows % 4) against
// every block tail (blocks % 8), and rows long enough for the prefetch to run
// past a tile.
TEST_P(MatmulQuantAvx512Test, DecodeRowAndBlockTails) {
  ThreadPool pool1(1), pool2(2);
  const int64_t unit = block() == 32 ? 32 : 256;
  for (int64_t blocks : {1, 3, 8, 11, 16, 69})
    for (int64_t rows : {1, 3, 4, 5, 9, 38})
      for (int64_t n_tokens : {1, 2, 3}) {
        if (unit == 256 && blocks > 16) continue;  // K types: 69 super-blocks add nothing
        check_avx512(GetParam(), rows, unit * blocks, n_tokens, rows % 2 ? pool1 : pool2);
        if (HasFatalFailure()) return;
      }
}

// set_avx512_decode(kOff) sends decode (1 to 3 tokens) on the AVX-512 path to
// the AVX2 kernels, bit for bit, and leaves prefill on the AVX-512 ones.
TEST_P(MatmulQuantAvx512Test, DecodeOffRunsTheAvx2KernelsAndLeavesPrefillAlone) {
  ThreadPool pool(2);
  for (int64_t n_tokens : {1, 2, 3, 4, 9}) {
    const Case c = make_case(GetParam(), 67, 512, n_tokens, 11);
    const auto off = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, n_tokens, pool, Avx512Decode::kOff);
    const auto on = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, n_tokens, pool, Avx512Decode::kOn);
    const auto avx2 = testing::matmul_on_path(KernelPath::kAvx2, c.w, c.x, n_tokens, pool);
    const auto& expected = n_tokens <= 3 ? avx2 : on;
    ASSERT_EQ(off.size(), expected.size());
    for (size_t i = 0; i < off.size(); ++i)
      ASSERT_EQ(off[i], expected[i]) << dtype_name(GetParam()) << " tokens=" << n_tokens << " i=" << i;
    if (n_tokens <= 3) check_avx512(GetParam(), 67, 512, n_tokens, pool);  // kOn: the AVX-512 kernels
  }
}

// kAuto decodes with the AVX-512 kernels unless the CPU splits 512-bit vectors
// into halves (Zen 4), and one-token results follow that choice.
TEST_P(MatmulQuantAvx512Test, AutoDecodeFollowsTheCpu) {
  ThreadPool pool(1);
  {
    testing::PathGuard guard;
    set_avx512_decode(Avx512Decode::kAuto);
    EXPECT_EQ(avx512_decode_in_use(), !cpu_splits_512_bit_vectors());
    set_avx512_decode(Avx512Decode::kOn);
    EXPECT_TRUE(avx512_decode_in_use());
    set_avx512_decode(Avx512Decode::kOff);
    EXPECT_FALSE(avx512_decode_in_use());
  }
  const Case c = make_case(GetParam(), 45, 768, 1, 3);
  const auto automatic = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, 1, pool, Avx512Decode::kAuto);
  const auto chosen = testing::matmul_on_path(KernelPath::kAvx512, c.w, c.x, 1, pool,
                                               cpu_splits_512_bit_vectors() ? Avx512Decode::kOff : Avx512Decode::kOn);
  for (size_t i = 0; i < automatic.size(); ++i) ASSERT_EQ(automatic[i], chosen[i]) << "i=" << i;
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulQuantAvx512Test,
                         ::testing::ValuesIn(testing::kBlockTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace llmpack::kernels
