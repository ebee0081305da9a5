// matmul on the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S,
// IQ1_M). llmpack has no quantizer for them, so the weights are random
// blocks: every byte pattern is a valid block once its super-block scale is
// a sane f16. The scalar path must equal dequantize + exact dot; each SIMD
// path that takes the type must equal the exact dot of the dequantized
// weights with the activations as the kernels quantize them (int8 with a
// scale per 256 on x86, per 32 on NEON), up to float rounding: its integer
// sums are exact (x86's prefill multiplies the activations offset to
// unsigned bytes and takes the offset's share back out exactly), so a
// weight, a sign, a scale or the offset's share read wrongly anywhere in a
// row shows. Prefill of 4 to 16 tokens on the AVX-512 path has its own kernel
// (x86/matmul_iq_avx512.cc), more tokens the block types' packed GEMM
// (x86/matmul_packed_avx512.cc), and so has the decode (1 to 3 tokens) of every
// type but IQ1_S and IQ1_M where the CPU has AVX-512 VBMI
// (x86/iq_decode_vbmi_avx512.cc), both run here through KernelPath::kAvx512.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

constexpr DType kIqTypes[] = {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS,
                              DType::kIQ3_S,   DType::kIQ1_S,  DType::kIQ1_M};

void check_iq_matmul(DType dtype, int64_t rows, int64_t cols, int64_t n_tokens, ThreadPool& pool) {
  const auto packed = testing::random_iq_rows(dtype, rows, cols, static_cast<uint32_t>(rows * 7 + cols + n_tokens));
  const WeightMatrix w{dtype, rows, cols, packed.data()};
  auto x = testing::random_floats(static_cast<size_t>(n_tokens * cols), static_cast<uint32_t>(3 + n_tokens), 2.0f);
  x[0] = 40.0f;  // an outlier, as real activations have
  std::vector<float> wd(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r) dequantize_row(w, r, wd.data() + r * cols);
  for (float v : wd) ASSERT_TRUE(std::isfinite(v));

  const auto ref = testing::matmul_on_path(KernelPath::kScalar, w, x, n_tokens, pool);
  for (KernelPath p : testing::all_paths()) {
    const auto y = p == KernelPath::kScalar ? ref : testing::matmul_on_path(p, w, x, n_tokens, pool);
    const bool quantizes = p != KernelPath::kScalar && simd_matmul_takes(p, dtype);
    // the x86 codebook kernels' activations carry a scale per 256; NEON's and
    // those of the AVX-512 packed GEMM (from kCodebookPackedMinTokens tokens) per 32
    const bool x86 = p == KernelPath::kAvx2 || p == KernelPath::kAvx512 || p == KernelPath::kAvxVnni;
    const bool packed = p == KernelPath::kAvx512 && n_tokens >= kCodebookPackedMinTokens;
    const int64_t block = x86 && !packed ? 256 : 32;
    for (int64_t t = 0; t < n_tokens; ++t) {
      const auto a = testing::quantize_like_the_kernels(x.data() + t * cols, cols, block);
      for (int64_t r = 0; r < rows; ++r) {
        double exact = 0, scale = 0;
        for (int64_t c = 0; c < cols; ++c) {
          const double xc = quantizes ? a.d[c / block] * a.q[c] : double(x[t * cols + c]);
          exact += double(wd[r * cols + c]) * xc;
          scale += std::fabs(double(wd[r * cols + c]) * xc);
        }
        ASSERT_NEAR(y[t * rows + r], exact, 1e-5 * scale + 1e-6)
            << kernel_path_name(p) << " " << dtype_name(dtype) << " rows=" << rows << " cols=" << cols
            << " tokens=" << n_tokens << " r=" << r << " t=" << t;
      }
    }
  }
}

class MatmulIqTest : public ::testing::TestWithParam<DType> {};

// Decode (1-3 tokens) and prefill (token groups of 4 and their tails; from
// 17 tokens the AVX-512 packed GEMM, whose panels of 16 rows and tiles of 6
// tokens 17 and 30 tokens of 17 rows leave partial), rows split over 1 and 2
// threads, rows of one super-block up to several chunks of unpacked weights
// (8 super-blocks a chunk; the packed GEMM's 4).
TEST_P(MatmulIqTest, EveryPathMatchesTheExactDotOfItsActivations) {
  ThreadPool pool1(1), pool2(2);
  for (int64_t rows : {1, 3, 6, 17})
    for (int64_t cols : {256, 768, 17 * 256, 33 * 256})
      for (int64_t n_tokens : {1, 2, 3, 4, 7, 8, 9, 16, 17, 30}) {
        if (cols > 4096 && n_tokens > 4 && rows > 6) continue;  // the largest shapes with few tokens only
        // the VBMI decode's last count and the unpacking's first: one chunk
        if (n_tokens > 9 && n_tokens < kCodebookPackedMinTokens && cols > 768) continue;
        check_iq_matmul(GetParam(), rows, cols, n_tokens, rows % 2 ? pool1 : pool2);
        if (::testing::Test::HasFatalFailure()) return;
      }
}

// Every SIMD path has a kernel for every codebook type.
TEST_P(MatmulIqTest, EverySimdPathTakesTheType) {
  for (KernelPath p : testing::simd_paths()) EXPECT_TRUE(simd_matmul_takes(p, GetParam())) << kernel_path_name(p);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, MatmulIqTest, ::testing::ValuesIn(kIqTypes),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace llmpack::kernels
