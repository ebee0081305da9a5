// The AVX-512 VBMI decode of IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S
// (x86/iq_decode_vbmi_avx512.cc): where the AVX-512 path sends it, and its
// sums against the AVX2 register kernel's (x86/iq_decode_avx2.cc) on the same
// int8 activations. Both sum integers exactly over a super-block, so they may
// differ only by float rounding.
// MatmulIqTest also holds it to the exact dot through KernelPath::kAvx512.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/x86/avx512.h"
#include "kernels/x86/avx512_internal.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

bool vbmi_kernel_runs() {
  const auto paths = testing::simd_paths();
  return std::find(paths.begin(), paths.end(), KernelPath::kAvx512) != paths.end() &&
         __builtin_cpu_supports("avx512vbmi");
}

// Decode (1 to 3 tokens) of the codebook types but IQ1_S and IQ1_M (2048
// entries); prefill (4 tokens and more) of every codebook type, as before.
TEST(IqDecodeVbmi, TheAvx512PathDecodesTheTypesItHasWhereTheCpuHasVbmi) {
  if (!vbmi_kernel_runs()) GTEST_SKIP() << "this CPU lacks AVX-512 VBMI, or the build forces scalar kernels";
  for (int64_t tokens : {1, 2, 3}) {
    EXPECT_TRUE(avx512::iq_supports(DType::kIQ2_XXS, tokens)) << tokens;
    EXPECT_TRUE(avx512::iq_supports(DType::kIQ3_XXS, tokens)) << tokens;
    EXPECT_TRUE(avx512::iq_supports(DType::kIQ2_XS, tokens)) << tokens;
    EXPECT_TRUE(avx512::iq_supports(DType::kIQ3_S, tokens)) << tokens;
    EXPECT_TRUE(avx512::iq_supports(DType::kIQ2_S, tokens)) << tokens;
    for (DType other : {DType::kIQ1_S, DType::kIQ1_M}) {
      EXPECT_FALSE(avx512::iq_supports(other, tokens)) << dtype_name(other) << " " << tokens;
      EXPECT_FALSE(avx512::iq_vbmi_decode_supports(other)) << dtype_name(other);
    }
  }
  EXPECT_TRUE(avx512::iq_supports(DType::kIQ1_S, 4));
  // The codebook decode follows its own switch, not the block types' one;
  // where it is off (set_avx512_decode kOff) the AVX2 kernel decodes;
  // prefill stays.
  EXPECT_TRUE(avx512::supports(DType::kIQ2_XXS, 1, false, true));
  EXPECT_TRUE(avx512::supports(DType::kIQ2_XXS, 1, true, true));
  EXPECT_FALSE(avx512::supports(DType::kIQ2_XXS, 1, true, false));
  EXPECT_TRUE(avx512::supports(DType::kIQ2_XXS, 4, false, false));
  EXPECT_FALSE(avx512::supports(DType::kQ4_0, 1, false, true));  // a block type: the other switch
}

// set_avx512_decode's kAuto decodes the codebook types on VBMI on every CPU
// that has it, those that split 512-bit vectors (Zen 4) included, where
// the block types' decode goes to the AVX2 kernels (PERFORMANCE.md section
// 82: the permutes still win there); kOff sends both to AVX2, kOn neither.
TEST(IqDecodeVbmi, AutoDecodesTheCodebookTypesOnVbmiWhereTheBlockTypesMayNot) {
  testing::PathGuard guard;
  set_avx512_decode(Avx512Decode::kAuto);
  EXPECT_TRUE(avx512_codebook_decode_in_use());
  EXPECT_EQ(avx512_decode_in_use(), !cpu_splits_512_bit_vectors());
  set_avx512_decode(Avx512Decode::kOff);
  EXPECT_FALSE(avx512_codebook_decode_in_use());
  EXPECT_FALSE(avx512_decode_in_use());
  set_avx512_decode(Avx512Decode::kOn);
  EXPECT_TRUE(avx512_codebook_decode_in_use());
  EXPECT_TRUE(avx512_decode_in_use());
}

// ... and matmul follows it: a token's products under kAuto have the VBMI
// kernel's bits (kOn), not the AVX2 register kernel's (kOff), which round
// some rows differently.
TEST(IqDecodeVbmi, MatmulDecodesOnVbmiUnderAuto) {
  if (!vbmi_kernel_runs()) GTEST_SKIP() << "this CPU lacks AVX-512 VBMI, or the build forces scalar kernels";
  ThreadPool pool(1);
  for (DType dtype : {DType::kIQ2_XXS, DType::kIQ3_S}) {
    const int64_t rows = 64, cols = 33 * 256;
    const auto packed = testing::random_iq_rows(dtype, rows, cols, 7);
    const WeightMatrix w{dtype, rows, cols, packed.data()};
    const auto x = testing::random_floats(static_cast<size_t>(cols), 8, 2.0f);
    const auto vbmi = testing::matmul_on_path(KernelPath::kAvx512, w, x, 1, pool, Avx512Decode::kOn);
    const auto avx2 = testing::matmul_on_path(KernelPath::kAvx512, w, x, 1, pool, Avx512Decode::kOff);
    const auto automatic = testing::matmul_on_path(KernelPath::kAvx512, w, x, 1, pool, Avx512Decode::kAuto);
    ASSERT_NE(vbmi, avx2) << dtype_name(dtype) << ": the two kernels agree to the bit here, so this cannot tell them";
    EXPECT_EQ(automatic, vbmi) << dtype_name(dtype);
  }
}

// A kernel that takes several tokens a call: rows [row_begin, row_end) of
// y [n_tokens, rows], token t's activations at tokens + t * (cols / 256).
using MultiTokenDecode = std::function<void(const WeightMatrix&, const avx2::ActSuper*, int64_t, float*, int64_t,
                                            int64_t)>;

// n_tokens tokens through `decode` in one call (their activations stored as
// a + 128 from 4 tokens on, as the preparation stores them) and one at a time
// (stored as a): every token's rows have the same bits both ways, and the
// rows outside [1, rows - 1) are untouched.
void expect_each_tokens_own_bits(DType dtype, int64_t rows, int64_t cols, int64_t n_tokens,
                                 const MultiTokenDecode& decode) {
  const int64_t n_super = cols / 256;
  const auto packed = testing::random_iq_rows(dtype, rows, cols, static_cast<uint32_t>(rows + n_tokens));
  const WeightMatrix w{dtype, rows, cols, packed.data()};
  std::vector<avx2::ActSuper> stored(static_cast<size_t>(n_tokens * n_super)), plain(stored.size());
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto x = testing::random_floats(static_cast<size_t>(cols), static_cast<uint32_t>(40 + t), 3.0f);
    avx2::quantize_activations_super(x.data(), cols, n_tokens >= avx2::kIqRegisterDecodeBelow,
                                     stored.data() + t * n_super);
    avx2::quantize_activations_super(x.data(), cols, false, plain.data() + t * n_super);
  }
  std::vector<float> together(static_cast<size_t>(n_tokens * rows), -1.0f);
  decode(w, stored.data(), n_tokens, together.data(), 1, rows - 1);
  for (int64_t t = 0; t < n_tokens; ++t) {
    std::vector<float> alone(static_cast<size_t>(rows), -1.0f);
    decode(w, plain.data() + t * n_super, 1, alone.data(), 1, rows - 1);
    for (int64_t r = 0; r < rows; ++r)
      EXPECT_EQ(std::bit_cast<uint32_t>(together[static_cast<size_t>(t * rows + r)]),
                std::bit_cast<uint32_t>(alone[static_cast<size_t>(r)]))
          << dtype_name(dtype) << " tokens=" << n_tokens << " t=" << t << " r=" << r;
    EXPECT_EQ(together[static_cast<size_t>(t * rows)], -1.0f);
    EXPECT_EQ(together[static_cast<size_t>(t * rows + rows - 1)], -1.0f);
  }
}

// The VBMI kernel builds each super-block's weights once for up to 8 tokens
// a pass, and takes 1 to 16 tokens (kIqVbmiDecodeBelow).
TEST(IqDecodeVbmi, SeveralTokensGiveEachTokensOwnBits) {
  if (!vbmi_kernel_runs()) GTEST_SKIP() << "this CPU lacks AVX-512 VBMI, or the build forces scalar kernels";
  for (DType dtype : {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS, DType::kIQ3_S})
    for (int64_t n_tokens : {2, 3, 4, 9, 16})
      expect_each_tokens_own_bits(dtype, 11, 5 * 256, n_tokens, avx512::iq_vbmi_decode_rows);
}

// The AVX2 register kernel (x86/iq_decode_avx2.cc) builds each group of 32
// weights once for up to 4 tokens a pass, and takes 1 to 7 tokens
// (kIqRegisterTokensBelow).
TEST(IqDecodeAvx2, SeveralTokensGiveEachTokensOwnBits) {
  const auto paths = testing::simd_paths();
  if (std::find(paths.begin(), paths.end(), KernelPath::kAvx2) == paths.end())
    GTEST_SKIP() << "this CPU lacks AVX2, or the build forces scalar kernels";
  for (DType dtype : {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS, DType::kIQ3_S, DType::kIQ1_S,
                      DType::kIQ1_M})
    for (int64_t n_tokens : {2, 3, 4, 5, 9})
      expect_each_tokens_own_bits(dtype, 7, 3 * 256, n_tokens, avx2::iq_decode_rows);
}

// Random blocks (every index, sign field and scale occurs), activations at
// the int8 extremes among them, rows of 1 to 33 super-blocks, and a row range
// that starts inside the matrix.
TEST(IqDecodeVbmi, AgreesWithTheAvx2RegisterKernel) {
  if (!vbmi_kernel_runs()) GTEST_SKIP() << "this CPU lacks AVX-512 VBMI, or the build forces scalar kernels";
  for (DType dtype : {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS, DType::kIQ3_S}) {
    for (int64_t cols : {256, 768, 2048, 33 * 256}) {
      const int64_t rows = 9, n_super = cols / 256;
      const auto packed = testing::random_iq_rows(dtype, rows, cols, static_cast<uint32_t>(cols));
      const WeightMatrix w{dtype, rows, cols, packed.data()};
      auto x = testing::random_floats(static_cast<size_t>(cols), static_cast<uint32_t>(cols + 1), 2.0f);
      // +/-127 after rounding
      for (int64_t c = 0; c < cols; c += 37) x[static_cast<size_t>(c)] = c % 2 ? 50.0f : -50.0f;
      std::vector<avx2::ActSuper> acts(static_cast<size_t>(n_super));
      avx2::quantize_activations_super(x.data(), cols, false, acts.data());
      std::vector<float> expected(rows, 0.0f), got(rows, -1.0f);
      avx2::iq_decode_rows(w, acts.data(), 1, expected.data(), 2, rows);
      avx512::iq_vbmi_decode_rows(w, acts.data(), 1, got.data(), 2, rows);
      EXPECT_EQ(got[0], -1.0f);  // rows before row_begin untouched
      EXPECT_EQ(got[1], -1.0f);
      for (int64_t r = 2; r < rows; ++r) {
        double scale = 0.0;  // the row's sum of |weight x activation|, bounding float rounding
        std::vector<float> wd(static_cast<size_t>(cols));
        dequantize_row(w, r, wd.data());
        for (int64_t c = 0; c < cols; ++c) {
          const avx2::ActSuper& a = acts[static_cast<size_t>(c / 256)];
          scale += std::fabs(double(wd[static_cast<size_t>(c)]) * a.d * a.q[c % 256]);
        }
        EXPECT_NEAR(got[r], expected[r], 1e-5 * scale + 1e-6) << dtype_name(dtype) << " cols=" << cols << " r=" << r;
      }
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
