// codebook_least_error (kernels.h): the export's codebook search picks, of a
// group's candidate entries, the first of least weighted squared error, with
// the same bits on every kernel path (so an export writes the same file on
// every machine).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/reference/reference.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

// n candidates of dim codes each ([n][dim]) in the kernel's layout: blocks of
// 8, `stride` bytes apart, each element's 8 codes side by side; padding lanes
// take `pad_code`, the bytes between blocks code 7 (a level that fits badly).
std::vector<uint8_t> lane_layout(const std::vector<std::vector<uint8_t>>& codes, int dim, uint8_t pad_code,
                                 int stride) {
  const size_t blocks = (codes.size() + 7) / 8;
  std::vector<uint8_t> out(blocks * stride, 7);
  for (size_t b = 0; b < blocks; ++b) std::fill_n(out.begin() + b * stride, 8 * dim, pad_code);
  for (size_t i = 0; i < codes.size(); ++i)
    for (int j = 0; j < dim; ++j) out[(i / 8) * stride + 8 * j + i % 8] = codes[i][j];
  return out;
}

uint32_t bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}

TEST(CodebookLeastError, TheFirstCandidateOfLeastErrorWins) {
  const float levels[8] = {1, 3, 5, 5, 5, 5, 5, 5};
  const float t[4] = {1.0f, 3.0f, 5.0f, 2.9f}, w[4] = {1.0f, 2.0f, 0.5f, 4.0f};
  // candidate 2 fits exactly but for the last element (2.9 against 3);
  // candidate 9 repeats it, in another block and lane: the first one wins
  std::vector<std::vector<uint8_t>> codes(11, {2, 2, 0, 0});
  codes[2] = codes[9] = {0, 1, 2, 1};
  codes[5] = {0, 1, 2, 0};  // 2.9 against 1: worse
  for (KernelPath p : testing::all_paths()) {
    testing::PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    const auto lanes = lane_layout(codes, 4, 0, 32);
    float err = -1;
    EXPECT_EQ(codebook_least_error({levels, lanes.data(), 32, 11, 4}, t, w, 1.0f, &err), 2);
    const float r = 2.9f - 3.0f;
    EXPECT_EQ(err, 4.0f * r * r);
    // at scale 2 the levels are 2, 6, 10: the targets fit entry {0, 0, 1, 0} best, in no candidate
    codes[7] = {0, 0, 1, 0};
    const auto lanes2 = lane_layout(codes, 4, 0, 32);
    EXPECT_EQ(codebook_least_error({levels, lanes2.data(), 32, 11, 4}, t, w, 2.0f, &err), 7);
    codes[7] = {2, 2, 0, 0};
  }
}

// The padding of the last block holds the codes that fit best: never taken.
TEST(CodebookLeastError, ThePaddingOfTheLastBlockNeverWins) {
  const float levels[8] = {-1, 0, 1, 1, 1, 1, 1, 1};
  const float t[8] = {0, 0, 0, 0, 0, 0, 0, 0}, w[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  for (KernelPath p : testing::all_paths()) {
    testing::PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int n : {1, 5, 8, 13}) {
      std::vector<std::vector<uint8_t>> codes(n, std::vector<uint8_t>(8, 2));
      const auto lanes = lane_layout(codes, 8, 1, 64);  // padding: all zeros, error 0
      float err = -1;
      EXPECT_EQ(codebook_least_error({levels, lanes.data(), 64, n, 8}, t, w, 1.0f, &err), 0) << n;
      EXPECT_EQ(err, 8.0f) << n;
    }
  }
}

// Random groups, many ties (3 levels, 4 elements: 81 code words), the
// targets' NaN and infinities: every path gives the reference's candidate and
// error bits.
TEST(CodebookLeastError, EveryPathGivesTheReferencesBits) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  const float levels3[8] = {0.125f, 0.375f, 0.625f, 0.625f, 0.625f, 0.625f, 0.625f, 0.625f};
  const float levels8[8] = {0.25f, 0.75f, 1.25f, 1.75f, 2.25f, 2.75f, 3.25f, 3.75f};
  const float specials[] = {NAN, INFINITY, -INFINITY, 3e38f, -0.0f};
  int cases = 0, ties = 0;
  for (KernelPath p : testing::simd_paths()) {
    testing::PathGuard guard;
    for (int trial = 0; trial < 3000; ++trial) {
      const int dim = trial % 2 ? 8 : 4;
      const bool eight_levels = trial % 3 == 0;
      const float* levels = eight_levels ? levels8 : levels3;
      const int n = 1 + static_cast<int>(rng() % 70);
      std::vector<std::vector<uint8_t>> codes(n, std::vector<uint8_t>(dim));
      for (auto& c : codes)
        for (auto& v : c) v = static_cast<uint8_t>(rng() % (eight_levels ? 8 : 3));
      float t[8], w[8];
      for (int j = 0; j < dim; ++j) t[j] = std::fabs(uni(rng)) * 4.0f, w[j] = std::fabs(uni(rng)) * 3.0f;
      if (trial % 50 == 7) t[rng() % dim] = specials[rng() % 5];
      if (trial % 50 == 9) w[rng() % dim] = specials[rng() % 5];
      if (trial % 50 == 11) w[rng() % dim] = 0.0f;
      const float s = 0.2f + std::fabs(uni(rng)) * 2.0f;
      // blocks side by side, or 16 bytes apart (the export's tables keep ids there)
      const int stride = 8 * dim + (trial % 4 < 2 ? 0 : 16);
      const auto lanes = lane_layout(codes, dim, static_cast<uint8_t>(rng() % 3), stride);
      const CodebookCandidates c{levels, lanes.data(), stride, n, dim};
      float want_err = -1, got_err = -2;
      const int want = ref::codebook_least_error(c, t, w, s, &want_err);
      ASSERT_TRUE(set_kernel_path(p));
      const int got = codebook_least_error(c, t, w, s, &got_err);
      ASSERT_TRUE(set_kernel_path(KernelPath::kScalar));
      ASSERT_EQ(got, want) << "trial " << trial << " n " << n << " dim " << dim;
      ASSERT_EQ(bits(got_err), bits(want_err)) << "trial " << trial;
      for (int i = want + 1; i < n; ++i) ties += codes[i] == codes[want];  // a later candidate as good
      ++cases;
    }
  }
  if (testing::simd_paths().empty()) GTEST_SKIP() << "no SIMD path on this CPU or build";
  EXPECT_GT(ties, 100);  // the cases held the first of equal candidates, not just a unique best
  RecordProperty("cases", cases);
}

}  // namespace
}  // namespace llmpack::kernels
