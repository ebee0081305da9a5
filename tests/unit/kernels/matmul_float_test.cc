// matmul with F32 / F16 / BF16 weights: the scalar reference against a
// direct double computation, and every SIMD path against the reference over
// odd shapes (cols not a multiple of 8, rows 1..37, n_tokens 1..9).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::pack_float;
using testing::random_floats;
using testing::Shape;


// Error bound per output: float rounding of a dot of `cols` terms is below
// cols * 2^-23 * sum|w x|; use 4x margin plus a floor.
void check_shape(DType dtype, const Shape& s, ThreadPool& pool) {
  const auto wf = random_floats(static_cast<size_t>(s.rows * s.cols), 11 + s.rows * 7 + s.cols);
  const auto x = random_floats(static_cast<size_t>(s.n_tokens * s.cols), 5 + s.cols);
  const auto packed = pack_float(dtype, wf);
  const WeightMatrix w{dtype, s.rows, s.cols, packed.data()};
  // The weights as the kernels see them (after f16/bf16 rounding).
  std::vector<float> wd(static_cast<size_t>(s.cols));
  const auto ref = testing::matmul_on_path(KernelPath::kScalar, w, x, s.n_tokens, pool);
  for (int64_t r = 0; r < s.rows; ++r) {
    dequantize_row(w, r, wd.data());
    for (int64_t t = 0; t < s.n_tokens; ++t) {
      double exact = 0.0, mag = 0.0;
      for (int64_t c = 0; c < s.cols; ++c) {
        exact += static_cast<double>(wd[c]) * x[t * s.cols + c];
        mag += std::fabs(static_cast<double>(wd[c]) * x[t * s.cols + c]);
      }
      const float got = ref[t * s.rows + r];
      ASSERT_NEAR(got, exact, 1e-6 * mag + 1e-7) << "scalar r=" << r << " t=" << t;
    }
  }
  for (KernelPath p : testing::simd_paths()) {
    const auto y = testing::matmul_on_path(p, w, x, s.n_tokens, pool);
    for (int64_t r = 0; r < s.rows; ++r) {
      for (int64_t t = 0; t < s.n_tokens; ++t) {
        double mag = 0.0;
        dequantize_row(w, r, wd.data());
        for (int64_t c = 0; c < s.cols; ++c) mag += std::fabs(wd[c] * x[t * s.cols + c]);
        const double bound = 4.0 * static_cast<double>(s.cols) * 1.2e-7 * mag + 1e-6;
        ASSERT_NEAR(y[t * s.rows + r], ref[t * s.rows + r], bound)
            << kernel_path_name(p) << " " << dtype_name(dtype) << " rows=" << s.rows
            << " cols=" << s.cols << " tokens=" << s.n_tokens << " r=" << r << " t=" << t;
      }
    }
  }
}

class MatmulFloatTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulFloatTest, OddShapesMatchReference) {
  ThreadPool pool1(1), pool2(2);
  for (int64_t rows : {1, 2, 3, 4, 5, 7, 16, 17, 33, 37})
    for (int64_t cols : {1, 7, 8, 9, 31, 32, 33, 100, 263})
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 9}) {
        check_shape(GetParam(), {rows, cols, n_tokens}, (rows + cols) % 2 ? pool1 : pool2);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

TEST_P(MatmulFloatTest, LargeMatrixSplitOverThreads) {
  ThreadPool pool(2);
  check_shape(GetParam(), {96, 512, 7}, pool);
}

// Decode (one token) reads rows of up to 2 KiB one at a time and longer rows
// 8 at a time: both sides of that line, with row tails (rows % 8) and column
// tails (cols % 8, and a partial cache line).
TEST_P(MatmulFloatTest, DecodeShortAndLongRows) {
  ThreadPool pool1(1), pool2(2);
  for (int64_t rows : {9, 17, 23})
    for (int64_t cols : {255, 512, 1000, 1024, 1031, 2100}) {
      check_shape(GetParam(), {rows, cols, 1}, rows % 2 ? pool1 : pool2);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

// The 8-row decode tiles of long rows prefetch each row some bytes ahead, as
// far as kernels::set_float_decode_prefetch says (0: not at all; past a row's
// end they prefetch the next tile's rows, and past the matrix's end memory
// that is not there, which a prefetch may touch). Every distance matches the
// reference and gives the very same floats: a prefetch moves no data.
TEST_P(MatmulFloatTest, DecodePrefetchDistancesGiveTheSameResults) {
  PathGuard guard;
  ThreadPool pool(2);
  for (const Shape& s : {Shape{23, 1031, 1}, Shape{16, 2100, 1}, Shape{41, 4099, 1}}) {
    const auto packed = pack_float(GetParam(), random_floats(static_cast<size_t>(s.rows * s.cols), 3 + s.cols));
    const auto x = random_floats(static_cast<size_t>(s.cols), 4 + s.cols);
    const WeightMatrix w{GetParam(), s.rows, s.cols, packed.data()};
    for (KernelPath p : testing::simd_paths()) {
      set_float_decode_prefetch(0);
      const auto none = testing::matmul_on_path(p, w, x, 1, pool);
      for (int64_t bytes : {64, 1024, 4096, 65536}) {
        set_float_decode_prefetch(bytes);
        ASSERT_EQ(float_decode_prefetch(), bytes);
        EXPECT_EQ(testing::matmul_on_path(p, w, x, 1, pool), none)
            << kernel_path_name(p) << " prefetch " << bytes << " cols " << s.cols;
      }
    }
    check_shape(GetParam(), s, pool);  // this CPU's own distance against the reference
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// The prefill path (n_tokens >= 4) packs 32 rows as 2 panels of 16 (f16
// panels for F16 weights, f32 for the others) and 512 columns at a time, in
// 6-token tiles, and sums blocks of up to 192 tokens in a buffer: partial
// panels and blocks, several column chunks, a column tail (cols % 8), token
// tails, and more tokens than one sum block.
TEST_P(MatmulFloatTest, PackedPrefillPanelsChunksAndTails) {
  ThreadPool pool1(1), pool2(2);
  for (int64_t rows : {16, 21, 32, 64, 75, 100, 130})
    for (int64_t cols : {256, 600, 1100})
      for (int64_t n_tokens : {4, 6, 13}) {
        check_shape(GetParam(), {rows, cols, n_tokens}, (rows + n_tokens) % 2 ? pool1 : pool2);
        if (::testing::Test::HasFatalFailure()) return;
      }
  for (int64_t n_tokens : {192, 200, 389}) {
    check_shape(GetParam(), {n_tokens == 200 ? 100 : 37, 523, n_tokens}, n_tokens % 2 ? pool1 : pool2);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulFloatTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MatmulTest, UnsupportedTypeGivesNanNotCrash) {
  ThreadPool pool(1);
  std::vector<uint8_t> bytes(64);
  const WeightMatrix w{DType::kI32, 2, 4, bytes.data()};
  EXPECT_FALSE(matmul_supports(DType::kI32));
  std::vector<float> x(4, 1.0f), y(2, 0.0f);
  matmul(w, x.data(), 1, y.data(), nullptr, pool);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

// The float decode prefetch distance: a set value until it is set back to
// kFloatDecodePrefetchAuto (or any negative value), which gives this CPU's
// default: 1 KiB on AMD family 1Ah (Zen 5), none elsewhere.
TEST(DispatchTest, FloatDecodePrefetchAutoFollowsTheCpu) {
  PathGuard guard;
  set_float_decode_prefetch(kFloatDecodePrefetchAuto);
  EXPECT_EQ(float_decode_prefetch(), cpu_float_decode_prefetch());
  EXPECT_TRUE(cpu_float_decode_prefetch() == 0 || cpu_float_decode_prefetch() == 1024) << cpu_float_decode_prefetch();
  set_float_decode_prefetch(512);
  EXPECT_EQ(float_decode_prefetch(), 512);
  set_float_decode_prefetch(0);
  EXPECT_EQ(float_decode_prefetch(), 0);
  set_float_decode_prefetch(-5);
  EXPECT_EQ(float_decode_prefetch(), cpu_float_decode_prefetch());
}

TEST(DispatchTest, PathsAreConsistent) {
  PathGuard guard;
  EXPECT_TRUE(cpu_supports(KernelPath::kScalar));
  EXPECT_TRUE(set_kernel_path(KernelPath::kScalar));
  EXPECT_EQ(active_kernel_path(), KernelPath::kScalar);
  EXPECT_EQ(kernel_path_name(KernelPath::kAvx2), "avx2");
  EXPECT_EQ(kernel_path_name(KernelPath::kAvxVnni), "avx_vnni");
  if (cpu_supports(KernelPath::kAvxVnni)) {  // the AVX2 path with a VNNI prefill
    EXPECT_TRUE(cpu_supports(KernelPath::kAvx2));
  }
  EXPECT_EQ(kernel_path_name(KernelPath::kNeon), "neon");
  EXPECT_EQ(kernel_path_name(KernelPath::kNeonDotprod), "neon_dotprod");
  EXPECT_EQ(kernel_path_name(KernelPath::kNeonI8mm), "neon_i8mm");
  if (cpu_supports(KernelPath::kNeonDotprod)) {
    EXPECT_TRUE(cpu_supports(KernelPath::kNeon));
  }
  if (cpu_supports(KernelPath::kNeonI8mm)) {  // its decode is the dotprod kernels
    EXPECT_TRUE(cpu_supports(KernelPath::kNeonDotprod));
  }
  for (KernelPath p : testing::kSimdKernelPaths) {
    if (!cpu_supports(p)) {
      EXPECT_FALSE(set_kernel_path(p)) << kernel_path_name(p);
    }
  }
  // The scalar path has no SIMD kernels; the SIMD paths have them for the
  // types of the Q4_K_M / Q8_0 / F16 files users download.
  for (DType d : testing::kBlockTypes) EXPECT_FALSE(simd_matmul_takes(KernelPath::kScalar, d));
  for (KernelPath p : testing::kSimdKernelPaths) {
    if (!cpu_supports(p)) continue;
    for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K})
      EXPECT_TRUE(simd_matmul_takes(p, d)) << kernel_path_name(p) << " " << dtype_name(d);
  }
  // x86 and ARM paths never both exist on one CPU.
  EXPECT_FALSE(cpu_supports(KernelPath::kAvx2) && cpu_supports(KernelPath::kNeon));
#if defined(__aarch64__)
  EXPECT_TRUE(cpu_supports(KernelPath::kNeon));  // Advanced SIMD is in the base AArch64 ISA
#endif
#if !defined(LLMPACK_FORCE_SCALAR)
  // The SIMD comparisons below only mean something where a SIMD path runs.
  if (cpu_supports(KernelPath::kAvx2) || cpu_supports(KernelPath::kNeon)) {
    EXPECT_FALSE(testing::simd_paths().empty());
  }
#endif
#if defined(LLMPACK_FORCE_SCALAR)
  for (KernelPath p : testing::kSimdKernelPaths) EXPECT_FALSE(set_kernel_path(p));
#endif
}

}  // namespace
}  // namespace llmpack::kernels
