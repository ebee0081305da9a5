// Quantizing with an importance matrix (quantize_row's `importance`): the
// searched types weight each column's squared error by its importance, so
// the error that reaches a matrix's output (columns weighted by their mean
// squared activation) falls; the types without a search ignore it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::random_floats;

constexpr DType kSearched[] = {DType::kQ4_0,   DType::kQ5_0,   DType::kQ4_1,   DType::kQ5_1,   DType::kQ2_K,   DType::kQ3_K,   DType::kQ4_K,
                               DType::kQ5_K,   DType::kQ6_K,   DType::kIQ4_NL, DType::kIQ4_XS, DType::kIQ2_XXS,
                               DType::kIQ2_XS, DType::kIQ2_S,  DType::kIQ3_XXS, DType::kIQ3_S,  DType::kIQ1_S,
                               DType::kIQ1_M};

// Rows of `cols` quantized as `dtype` with importance `imp` (nullptr: none).
std::vector<uint8_t> quantize_rows(DType dtype, const std::vector<float>& x, int64_t cols, const float* imp) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  const int64_t rb = row_bytes(*dtype_info(dtype), cols);
  std::vector<uint8_t> q(static_cast<size_t>(rb * rows));
  for (int64_t r = 0; r < rows; ++r)
    EXPECT_EQ(quantize_row(dtype, x.data() + r * cols, cols, q.data() + r * rb, imp), static_cast<size_t>(rb));
  return q;
}

// The same, dequantized.
std::vector<float> round_trip(DType dtype, const std::vector<float>& x, int64_t cols, const float* imp) {
  const int64_t rows = static_cast<int64_t>(x.size()) / cols;
  const std::vector<uint8_t> q = quantize_rows(dtype, x, cols, imp);
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r) dequantize_row(WeightMatrix{dtype, rows, cols, q.data()}, r, y.data() + r * cols);
  return y;
}

// sum over elements of imp[column] (y - x)^2: the squared error a matrix's
// output takes from its weights' errors when the columns' activations are
// independent with mean squares imp.
double weighted_error(const std::vector<float>& y, const std::vector<float>& x, const std::vector<float>& imp) {
  double e = 0;
  const size_t cols = imp.size();
  for (size_t i = 0; i < x.size(); ++i) e += imp[i % cols] * (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
  return e;
}

// Importances spread over four orders of magnitude, as real activations'
// mean squares are (a few columns carry most of the energy).
std::vector<float> skewed_importance(int64_t cols, uint32_t seed) {
  const auto z = random_floats(static_cast<size_t>(cols), seed);
  std::vector<float> imp(static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) imp[j] = std::exp(2.3f * z[j]);
  return imp;
}

TEST(QuantizeImportance, TheSearchedTypesLowerTheErrorTheImportanceWeighs) {
  constexpr int64_t kCols = 512, kRows = 32;
  const auto x = random_floats(kCols * kRows, 3);
  const auto imp = skewed_importance(kCols, 4);
  for (DType dtype : kSearched) {
    const double plain = weighted_error(round_trip(dtype, x, kCols, nullptr), x, imp);
    const double weighted = weighted_error(round_trip(dtype, x, kCols, imp.data()), x, imp);
    std::printf("  %-7s weighted error without %.4f, with importances %.4f (%.2fx)\n",
                std::string(dtype_name(dtype)).c_str(), plain, weighted, plain / weighted);
    EXPECT_LT(weighted, 0.97 * plain) << dtype_name(dtype);
  }
}

// An importance that is all zero carries no information: the unweighted
// search, byte for byte (and no division by a zero weight sum).
TEST(QuantizeImportance, AllZeroImportanceIsTheUnweightedSearch) {
  constexpr int64_t kCols = 256;
  const auto x = random_floats(kCols * 4, 5);
  const std::vector<float> zero(kCols, 0.0f);
  for (DType dtype : kSearched)
    EXPECT_EQ(round_trip(dtype, x, kCols, zero.data()), round_trip(dtype, x, kCols, nullptr)) << dtype_name(dtype);
}

// Columns that one importance vector makes count the most end up closer to
// their weights than with the importances turned around.
TEST(QuantizeImportance, TheImportantColumnsComeOutCloser) {
  constexpr int64_t kCols = 256, kRows = 64;
  const auto x = random_floats(kCols * kRows, 8);
  std::vector<float> first(kCols), second(kCols);
  for (int64_t j = 0; j < kCols; ++j) first[j] = j % 2 == 0 ? 100.0f : 1.0f, second[j] = j % 2 == 0 ? 1.0f : 100.0f;
  for (DType dtype : kSearched) {
    const auto y = round_trip(dtype, x, kCols, first.data());
    double even = 0, odd = 0;
    for (size_t i = 0; i < x.size(); ++i) (i % 2 == 0 ? even : odd) += (double(y[i]) - x[i]) * (double(y[i]) - x[i]);
    EXPECT_LT(even, odd) << dtype_name(dtype);
    const auto z = round_trip(dtype, x, kCols, second.data());
    double even2 = 0, odd2 = 0;
    for (size_t i = 0; i < x.size(); ++i) (i % 2 == 0 ? even2 : odd2) += (double(z[i]) - x[i]) * (double(z[i]) - x[i]);
    EXPECT_GT(even2, odd2) << dtype_name(dtype);
  }
}

TEST(QuantizeImportance, TypesWithoutASearchIgnoreIt) {
  constexpr int64_t kCols = 256;
  const auto x = random_floats(kCols * 4, 9);
  const auto imp = skewed_importance(kCols, 10);
  for (DType dtype : {DType::kF16, DType::kBF16, DType::kQ8_0})
    EXPECT_EQ(round_trip(dtype, x, kCols, imp.data()), round_trip(dtype, x, kCols, nullptr)) << dtype_name(dtype);
}

// A hostile or damaged source may hold NaN and infinite weights: every
// searched type still writes its whole row, with and without importances
// (the sanitizer build checks no float-to-int conversion sees them), and the
// finite blocks beside them quantize as they would alone.
TEST(QuantizeImportance, NonFiniteWeightsStayInTheirBlock) {
  constexpr int64_t kCols = 512;
  auto x = random_floats(kCols, 12);
  const auto clean = x;
  x[3] = std::nanf(""), x[40] = INFINITY, x[77] = -INFINITY;  // all in the first super-block
  const auto imp = skewed_importance(kCols, 13);
  for (DType dtype : kSearched) {
    for (const float* w : {static_cast<const float*>(nullptr), imp.data()}) {
      const auto dirty = quantize_rows(dtype, x, kCols, w);
      const auto alone = quantize_rows(dtype, clean, kCols, w);
      const size_t half = dirty.size() / 2;  // the second super-block (or its 32-blocks) is untouched
      EXPECT_TRUE(std::equal(dirty.begin() + half, dirty.end(), alone.begin() + half))
          << dtype_name(dtype) << (w ? " with importances" : "");
    }
  }
}

// The bytes written with importances, recorded as QuantizeTest records the
// plain ones: every machine writes the same file from the same imatrix.

TEST(QuantizeImportance, EachTypeWritesTheRecordedBytes) {
  constexpr int64_t kCols = 512;
  std::vector<float> x(kCols * 8), imp(kCols);
  uint32_t state = 91;
  const auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;
  };
  for (float& v : x) v = (((uniform() + uniform()) + (uniform() + uniform())) - 2.0f) * 0.05f;
  for (float& v : imp) v = uniform() * uniform() * 8.0f;  // IEEE products: the same everywhere
  const struct {
    DType dtype;
    uint64_t hash;
  } kRecorded[] = {
      {DType::kQ4_0, 0xe7413579b3f443f1},   {DType::kQ5_0, 0x8716c486c181d402},
      {DType::kQ4_1, 0x347fe513007ce907},   {DType::kQ5_1, 0x1efa0220f092315b},
      {DType::kQ2_K, 0xdb7bb05787d6d962},   {DType::kQ3_K, 0xa11fd2748dd95f7f},
      {DType::kQ4_K, 0x6404eea37e2b7bb5},   {DType::kQ5_K, 0xa0088dd2f681a279},
      {DType::kQ6_K, 0xa7484667940a31cd},   {DType::kIQ4_NL, 0xd8be58222ce02b3a},
      {DType::kIQ4_XS, 0xa971a7083dc574b1}, {DType::kIQ2_XXS, 0x313fdf675c2fc41b},
      {DType::kIQ2_XS, 0x2e36bb4014ca27a1}, {DType::kIQ2_S, 0xb096dbb774915bfd},
      {DType::kIQ3_XXS, 0xad114656e2e295af}, {DType::kIQ3_S, 0x2da395aeb2b722bf},
      {DType::kIQ1_S, 0xd59de96e9e462ec0}, {DType::kIQ1_M, 0x60ecb2b70bd0c254},
  };
  for (const auto& r : kRecorded) {
    const uint64_t h = testing::fnv1a(quantize_rows(r.dtype, x, kCols, imp.data()));
    EXPECT_EQ(h, r.hash) << dtype_name(r.dtype) << ": 0x" << std::hex << h;
  }
}

}  // namespace
}  // namespace llmpack::kernels
