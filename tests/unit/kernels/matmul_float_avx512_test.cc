// The AVX-512 float matmul (x86/matmul_float_avx512.cc) on shapes around its
// blocking: panels of 32 rows (two per packing, so 64-row blocks), 256-column
// chunks packed 16 columns at a time (masked tails), tiles of up to 12 tokens.
// Outputs are compared with a double-precision dot product of the weights as
// stored (after f16/bf16 rounding).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/avx512_internal.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::pack_float;
using testing::random_floats;
using testing::Shape;


// The CPU has the features and this build has the path (a LLMPACK_FORCE_SCALAR
// build compiles the AVX-512 files but never selects them).
bool avx512_available() {
  const auto paths = testing::simd_paths();
  return std::find(paths.begin(), paths.end(), KernelPath::kAvx512) != paths.end();
}

#define SKIP_WITHOUT_AVX512()                                                           \
  if (!avx512_available()) GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/DQ/VNNI " \
                                           "or the build forces scalar kernels"

// Checks y[t * w.rows + r] for r in [row_begin, row_end) against a double dot
// product; the bound is float rounding of a dot of `cols` terms (below
// cols * 2^-23 * sum|w x|) with a 4x margin, plus a floor.
void expect_close(const WeightMatrix& w, const std::vector<float>& x, int64_t n_tokens,
                  const std::vector<float>& y, int64_t row_begin, int64_t row_end,
                  const char* what) {
  std::vector<float> wd(static_cast<size_t>(w.cols));
  for (int64_t r = row_begin; r < row_end; ++r) {
    dequantize_row(w, r, wd.data());
    for (int64_t t = 0; t < n_tokens; ++t) {
      double exact = 0.0, mag = 0.0;
      for (int64_t c = 0; c < w.cols; ++c) {
        const double p = static_cast<double>(wd[c]) * x[t * w.cols + c];
        exact += p;
        mag += std::fabs(p);
      }
      const double bound = 4.0 * static_cast<double>(w.cols) * 1.2e-7 * mag + 1e-6;
      ASSERT_NEAR(y[t * w.rows + r], exact, bound)
          << what << " " << dtype_name(w.dtype) << " rows=" << w.rows << " cols=" << w.cols
          << " tokens=" << n_tokens << " r=" << r << " t=" << t;
    }
  }
}

// matmul on the AVX-512 path, through dispatch (rows split over `pool`).
void check_shape_avx512(DType dtype, const Shape& s, ThreadPool& pool) {
  ASSERT_TRUE(avx512::float_supports(dtype, s.n_tokens)) << "the shape would not reach the kernel";
  const auto wf = random_floats(static_cast<size_t>(s.rows * s.cols), 3 + s.rows * 5 + s.cols);
  const auto x = random_floats(static_cast<size_t>(s.n_tokens * s.cols), 9 + s.n_tokens);
  const auto packed = pack_float(dtype, wf);
  const WeightMatrix w{dtype, s.rows, s.cols, packed.data()};
  PathGuard guard;
  ASSERT_TRUE(set_kernel_path(KernelPath::kAvx512));
  std::vector<float> y(static_cast<size_t>(s.n_tokens * s.rows), -7.0f);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(dtype, s.cols, s.n_tokens));
  matmul(w, x.data(), s.n_tokens, y.data(), scratch.data(), pool);
  expect_close(w, x, s.n_tokens, y, 0, s.rows, "avx512");
}

class MatmulFloatAvx512Test : public ::testing::TestWithParam<DType> {};

// Row counts around the 16-row halves, 32-row panels and 64-row blocks.
TEST_P(MatmulFloatAvx512Test, RowTails) {
  SKIP_WITHOUT_AVX512();
  ThreadPool pool(1);
  for (int64_t rows : {1, 15, 16, 17, 31, 32, 33, 47, 63, 64, 65, 97, 130}) {
    check_shape_avx512(GetParam(), {rows, 272, 13}, pool);
    if (HasFatalFailure()) return;
  }
}

// Column counts around 16-column packing steps and 256-column chunks.
TEST_P(MatmulFloatAvx512Test, ColumnTails) {
  SKIP_WITHOUT_AVX512();
  ThreadPool pool(1);
  for (int64_t cols : {1, 2, 15, 16, 17, 100, 255, 256, 257, 271, 512, 513, 777}) {
    check_shape_avx512(GetParam(), {37, cols, 12}, pool);
    if (HasFatalFailure()) return;
  }
}

// Token counts around the 12-token tiles, from the smallest the path takes.
TEST_P(MatmulFloatAvx512Test, TokenTails) {
  SKIP_WITHOUT_AVX512();
  ThreadPool pool(1);
  for (int64_t n_tokens : {4, 5, 7, 11, 12, 13, 23, 24, 25, 37}) {
    check_shape_avx512(GetParam(), {45, 300, n_tokens}, pool);
    if (HasFatalFailure()) return;
  }
}

// Two threads split rows in 32-row grains, so each thread's range starts
// mid-matrix and the last one ends in a partial panel.
TEST_P(MatmulFloatAvx512Test, TwoThreads) {
  SKIP_WITHOUT_AVX512();
  ThreadPool pool(2);
  check_shape_avx512(GetParam(), {211, 600, 26}, pool);
  if (HasFatalFailure()) return;
  check_shape_avx512(GetParam(), {64, 33, 4}, pool);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulFloatAvx512Test,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MatmulFloatAvx512Test, DecodeStaysOnAvx2AndOtherTypesAreNotClaimed) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16}) {
    EXPECT_FALSE(avx512::float_supports(d, 1));
    EXPECT_FALSE(avx512::float_supports(d, 3));
    EXPECT_TRUE(avx512::float_supports(d, 4));
    EXPECT_TRUE(avx512::float_supports(d, 512));
  }
  EXPECT_FALSE(avx512::float_supports(DType::kQ8_0, 64));
  EXPECT_FALSE(avx512::float_supports(DType::kI32, 64));
}

// Zero columns: every dot product is empty, so every output is 0.
TEST(MatmulFloatAvx512Test, ZeroColumnsGiveZeros) {
  SKIP_WITHOUT_AVX512();
  PathGuard guard;
  ASSERT_TRUE(set_kernel_path(KernelPath::kAvx512));
  ThreadPool pool(1);
  const float dummy = 0.0f;
  const std::vector<float> x(1, 0.0f);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const WeightMatrix w{dtype, 35, 0, &dummy};
    std::vector<float> y(35 * 6, -7.0f);
    matmul(w, x.data(), 6, y.data(), nullptr, pool);
    for (float v : y) ASSERT_EQ(v, 0.0f) << dtype_name(dtype);
  }
}

// Weights mapped read-only and ending right at a PROT_NONE page: a write to
// them, or a read past the last row's end (column tails use masked loads),
// faults. A sub-range of rows not aligned to the panels writes only its rows.
TEST(MatmulFloatAvx512Test, ReadOnlyWeightsEndingAtAGuardPageAndARowSubrange) {
  SKIP_WITHOUT_AVX512();
  const int64_t page = sysconf(_SC_PAGESIZE);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    const Shape s{70, 131, 14};
    const auto wf = random_floats(static_cast<size_t>(s.rows * s.cols), 77);
    const auto packed = pack_float(dtype, wf);
    const int64_t data_pages = (static_cast<int64_t>(packed.size()) + page - 1) / page;
    const size_t map_bytes = static_cast<size_t>((data_pages + 1) * page);
    void* map =
        mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(map, MAP_FAILED);
    auto* base = static_cast<uint8_t*>(map);
    uint8_t* data = base + data_pages * page - packed.size();
    std::memcpy(data, packed.data(), packed.size());
    ASSERT_EQ(mprotect(base, static_cast<size_t>(data_pages * page), PROT_READ), 0);
    ASSERT_EQ(mprotect(base + data_pages * page, static_cast<size_t>(page), PROT_NONE), 0);

    const WeightMatrix w{dtype, s.rows, s.cols, data};
    const auto x = random_floats(static_cast<size_t>(s.n_tokens * s.cols), 78);
    std::vector<float> y(static_cast<size_t>(s.n_tokens * s.rows), -7.0f);
    const int64_t row_begin = 5, row_end = 58;
    avx512::matmul_rows_float(w, x.data(), s.n_tokens, y.data(), row_begin, row_end);
    expect_close(w, x, s.n_tokens, y, row_begin, row_end, "avx512 rows 5..58");
    for (int64_t t = 0; t < s.n_tokens; ++t)
      for (int64_t r = 0; r < s.rows; ++r)
        if (r < row_begin || r >= row_end) {
          ASSERT_EQ(y[t * s.rows + r], -7.0f)
              << "row " << r << " token " << t << " outside the range was written";
        }
    EXPECT_EQ(std::memcmp(data, packed.data(), packed.size()), 0);
    munmap(map, map_bytes);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
}  // namespace llmpack::kernels
