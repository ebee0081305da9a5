// The codebook quantizers (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S; IQ1_S and
// IQ1_M, whose entries carry their signs, in tests of their own): each
// group of 8 (or 4) weights takes the codebook entry that fits it best at its
// sub-block's scale, with its weights' signs (one sign a group of 8 may be
// wrong in the types that store 7 of them); fewer bits, more error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::random_floats;

constexpr DType kCodebookTypes[] = {DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS, DType::kIQ3_S};

// (Names of their own: the unity build compiles this file with quant_test.cc.)
std::vector<uint8_t> codebook_quantize(DType dtype, const std::vector<float>& x) {
  std::vector<uint8_t> q(static_cast<size_t>(row_bytes(*dtype_info(dtype), static_cast<int64_t>(x.size()))));
  EXPECT_EQ(quantize_row(dtype, x.data(), static_cast<int64_t>(x.size()), q.data()), q.size());
  return q;
}

std::vector<float> codebook_dequantize(DType dtype, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> y(n);
  dequantize_row(WeightMatrix{dtype, 1, static_cast<int64_t>(n), q.data()}, 0, y.data());
  return y;
}

// The quantizers' weights without importances: sqrt(mean(x^2) + x^2) over
// each super-block of 256.
std::vector<float> plain_weights(const std::vector<float>& x) {
  std::vector<float> w(x.size());
  for (size_t b = 0; b < x.size(); b += kQKK) {
    float sum_sq = 0;
    for (int j = 0; j < kQKK; ++j) sum_sq += x[b + j] * x[b + j];
    for (int j = 0; j < kQKK; ++j) w[b + j] = std::sqrt(sum_sq / kQKK + x[b + j] * x[b + j]);
  }
  return w;
}

// A type's codebook as floats: [entries][dim].
struct Codebook {
  int dim = 0;
  std::vector<std::vector<float>> entries;
};
template <class Grid>
Codebook codebook_of(const Grid& grid) {
  Codebook c;
  c.dim = static_cast<int>(grid[0].size());
  for (const auto& e : grid) c.entries.emplace_back(e.begin(), e.end());
  return c;
}
Codebook codebook(DType t) {
  switch (t) {
    case DType::kIQ2_XXS: return codebook_of(kIq2xxsGrid);
    case DType::kIQ2_XS: return codebook_of(kIq2xsGrid);
    case DType::kIQ2_S: return codebook_of(kIq2sGrid);
    case DType::kIQ3_XXS: return codebook_of(kIq3xxsGrid);
    default: return codebook_of(kIq3sGrid);
  }
}

// The scale of the group of 8 (or 4) that holds weight e of the one-block
// row q, from the block's d and the group's 4-bit code, by the GGUF layouts.
float group_scale(DType t, const std::vector<uint8_t>& q, int e) {
  uint16_t d16;
  std::memcpy(&d16, q.data(), 2);
  const float d = f16_to_f32(d16);
  const int g32 = e / 32, g16 = e / 16;
  switch (t) {
    case DType::kIQ2_XXS: return d * (0.5f + static_cast<float>(iq_load_u32(q.data() + 2 + 8 * g32 + 4) >> 28)) / 4;
    case DType::kIQ2_XS:
      return d * (0.5f + static_cast<float>((q[2 + 64 + g32] >> (4 * (g16 % 2))) & 15)) / 4;
    case DType::kIQ2_S: return d * (0.5f + static_cast<float>((q[2 + 64 + 8 + g32] >> (4 * (g16 % 2))) & 15)) / 4;
    case DType::kIQ3_XXS: return d * (0.5f + static_cast<float>(iq_load_u32(q.data() + 2 + 64 + 4 * g32) >> 28)) / 2;
    default: return d * static_cast<float>(1 + 2 * ((q[2 + 64 + 8 + 32 + g32 / 2] >> (4 * (g32 % 2))) & 15));
  }
}

// Every group's entry against all the codebook's entries, at the group's
// scale and with the signs written: the search tries only the entries near
// each group's rounded magnitudes, so it may miss the best one, but rarely,
// and never by much.
TEST(QuantizeCodebook, EachGroupTakesTheBestEntryAtItsScale) {
  const auto x = random_floats(kQKK * 16, 31);
  const auto w = plain_weights(x);
  for (DType t : kCodebookTypes) {
    const Codebook cb = codebook(t);
    const int64_t rb = row_bytes(*dtype_info(t), kQKK);
    const auto q = codebook_quantize(t, x);
    const auto y = codebook_dequantize(t, q, x.size());
    int groups = 0, best = 0;
    double err_taken = 0, err_best = 0;
    for (size_t g = 0; g < x.size(); g += cb.dim, ++groups) {
      const std::vector<uint8_t> block(q.begin() + static_cast<int64_t>(g / kQKK) * rb,
                                       q.begin() + static_cast<int64_t>(g / kQKK + 1) * rb);
      const float s = group_scale(t, block, static_cast<int>(g % kQKK));
      double taken = 0, lowest = INFINITY;
      for (int j = 0; j < cb.dim; ++j) taken += w[g + j] * (x[g + j] - y[g + j]) * (x[g + j] - y[g + j]);
      for (const auto& e : cb.entries) {
        double err = 0;
        for (int j = 0; j < cb.dim; ++j) {
          const float v = (y[g + j] < 0 ? -s : s) * e[j];
          err += w[g + j] * (x[g + j] - v) * (x[g + j] - v);
        }
        lowest = std::min(lowest, err);
      }
      ASSERT_GE(taken, lowest * (1 - 1e-5)) << dtype_name(t) << ": the written entry is not in the codebook";
      best += taken <= lowest * (1 + 1e-5) + 1e-12;
      err_taken += taken, err_best += lowest;
    }
    std::printf("  %-8s best entry in %d of %d groups; error %.5f against %.5f\n",
                std::string(dtype_name(t)).c_str(), best, groups, err_taken, err_best);
    EXPECT_GE(best, 0.99 * groups) << dtype_name(t);
    EXPECT_LT(err_taken, 1.002 * err_best) << dtype_name(t);
  }
}

// IQ1_S's groups against every entry of the ternary codebook at their
// group of 32's scale and shift (bits 12-14 and 15 of its qh word): its
// tables keep fewer neighbours (2 distances), so it may miss more often, but
// not by much.
TEST(QuantizeCodebook, Iq1GroupsTakeTheBestEntryAtTheirScaleAndShift) {
  const auto x = random_floats(kQKK * 16, 34);
  const auto w = plain_weights(x);
  const auto q = codebook_quantize(DType::kIQ1_S, x);
  const auto y = codebook_dequantize(DType::kIQ1_S, q, x.size());
  const int64_t rb = row_bytes(*dtype_info(DType::kIQ1_S), kQKK);
  int groups = 0, best = 0;
  double err_taken = 0, err_best = 0;
  for (size_t g = 0; g < x.size(); g += 8, ++groups) {
    const uint8_t* block = q.data() + static_cast<int64_t>(g / kQKK) * rb;
    uint16_t d16, qh;
    std::memcpy(&d16, block, 2);
    std::memcpy(&qh, block + 2 + 32 + 2 * ((g % kQKK) / 32), 2);
    const float s = f16_to_f32(d16) * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
    const float shift = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
    double taken = 0, lowest = INFINITY;
    for (int j = 0; j < 8; ++j) taken += w[g + j] * (x[g + j] - y[g + j]) * (x[g + j] - y[g + j]);
    for (const auto& e : kIq1sGrid) {
      double err = 0;
      for (int j = 0; j < 8; ++j) {
        const float v = s * (static_cast<float>(e[j]) + shift);
        err += w[g + j] * (x[g + j] - v) * (x[g + j] - v);
      }
      lowest = std::min(lowest, err);
    }
    ASSERT_GE(taken, lowest * (1 - 1e-5)) << "group at " << g << ": the written entry is not in the codebook";
    best += taken <= lowest * (1 + 1e-5) + 1e-12;
    err_taken += taken, err_best += lowest;
  }
  std::printf("  iq1_s    best entry in %d of %d groups; error %.5f against %.5f\n", best, groups, err_taken,
              err_best);
  EXPECT_GE(best, 0.99 * groups);
  EXPECT_LT(err_taken, 1.002 * err_best);
}

// The types with 8 stored signs keep every weight's sign; those with 7 get
// the eighth from the count of negatives, and where that count is odd one
// weight of the group, the one of least w x^2, comes out with the wrong sign.
TEST(QuantizeCodebook, SignsFollowTheWeightsAndParity) {
  const auto x = random_floats(kQKK * 8, 32);
  const auto w = plain_weights(x);
  for (DType t : kCodebookTypes) {
    const bool parity = t == DType::kIQ2_XXS || t == DType::kIQ2_XS || t == DType::kIQ3_XXS;
    const auto y = codebook_dequantize(t, codebook_quantize(t, x), x.size());
    int odd_groups = 0;
    for (size_t g = 0; g < x.size(); g += 8) {
      int negatives = 0, wrong = 0, least = 0;
      for (int j = 0; j < 8; ++j) {
        negatives += x[g + j] < 0;
        if ((y[g + j] < 0) != (x[g + j] < 0)) wrong = wrong + 1, least = j;
      }
      ASSERT_EQ(wrong, parity ? negatives % 2 : 0) << dtype_name(t) << " group at " << g;
      if (wrong == 0) continue;
      ++odd_groups;
      for (int j = 0; j < 8; ++j)
        EXPECT_LE(w[g + least] * x[g + least] * x[g + least], w[g + j] * x[g + j] * x[g + j]) << dtype_name(t);
    }
    if (parity) {
      EXPECT_GT(odd_groups, 0) << dtype_name(t);
    }
  }
}

// More bits, less error: IQ1_S (1.56 bits a weight) > IQ1_M (1.75) >
// IQ2_XXS (2.06) > IQ2_XS (2.31) > IQ2_S (2.56) > IQ3_XXS (3.06) > IQ3_S
// (3.44), on the same weights.
TEST(QuantizeCodebook, ErrorFallsAsTheBitsRise) {
  const auto x = random_floats(kQKK * 32, 33);
  double previous = INFINITY;
  for (DType t : {DType::kIQ1_S, DType::kIQ1_M, DType::kIQ2_XXS, DType::kIQ2_XS, DType::kIQ2_S, DType::kIQ3_XXS,
                  DType::kIQ3_S}) {
    const auto y = codebook_dequantize(t, codebook_quantize(t, x), x.size());
    double e = 0, s = 0;
    for (size_t i = 0; i < x.size(); ++i) e += (double(y[i]) - x[i]) * (double(y[i]) - x[i]), s += double(x[i]) * x[i];
    const double rel = std::sqrt(e / s);
    EXPECT_LT(rel, previous) << dtype_name(t);
    previous = rel;
  }
}

}  // namespace
}  // namespace llmpack::kernels
