// rmsnorm, softmax, exp_weights, swiglu, rope and attention_head: the
// reference against direct formulas, and every SIMD path against the
// reference, over lengths with tails (not multiples of 8).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/reference/reference.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::random_floats;

constexpr int64_t kLengths[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 263};

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double rel,
                  const char* what) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], rel * (std::fabs(b[i]) + 1e-3)) << what << " at " << i << " of " << a.size();
}

TEST(RmsnormTest, ReferenceMatchesFormula) {
  for (int64_t n : kLengths) {
    const auto x = random_floats(n, 1 + n), w = random_floats(n, 2 + n);
    std::vector<float> out(n);
    ref::rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double inv = 1.0 / std::sqrt(ss / n + 1e-5);
    for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(out[i], x[i] * inv * w[i], 1e-5 * (1 + std::fabs(x[i] * inv * w[i])));
  }
}

TEST(SimdElementwiseTest, MatchesReference) {
  for (KernelPath p : testing::simd_paths()) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int64_t n : kLengths) {
      const auto x = random_floats(n, 3 + n, 3.0f), w = random_floats(n, 4 + n);
      std::vector<float> a(n), b(n);
      rmsnorm(a.data(), x.data(), w.data(), n, 1e-6f);
      ref::rmsnorm(b.data(), x.data(), w.data(), n, 1e-6f);
      expect_close(a, b, 1e-5, "rmsnorm");
      // in place (out aliases x)
      a = x;
      rmsnorm(a.data(), a.data(), w.data(), n, 1e-6f);
      expect_close(a, b, 1e-5, "rmsnorm in place");

      a = x;
      b = x;
      softmax(a.data(), n);
      ref::softmax(b.data(), n);
      expect_close(a, b, 1e-5, "softmax");

      const auto up = random_floats(n, 5 + n);
      swiglu(a.data(), x.data(), up.data(), n);
      ref::swiglu(b.data(), x.data(), up.data(), n);
      expect_close(a, b, 1e-5, "swiglu");
      a = x;
      swiglu(a.data(), a.data(), up.data(), n);
      expect_close(a, b, 1e-5, "swiglu in place");
    }
  }
}

TEST(SoftmaxTest, ExtremeInputsStayFinite) {
  for (KernelPath p : testing::all_paths()) {
    PathGuard guard;
    if (!set_kernel_path(p)) continue;
    std::vector<float> x = {-1e30f, 0.0f, 100.0f, -100.0f, 100.0f, -3e38f, 5.0f, 1.0f, 2.0f, 88.0f};
    softmax(x.data(), static_cast<int64_t>(x.size()));
    double sum = 0;
    for (float v : x) {
      ASSERT_TRUE(std::isfinite(v));
      ASSERT_GE(v, 0.0f);
      sum += v;
    }
    EXPECT_NEAR(sum, 1.0, 1e-5);
    EXPECT_NEAR(x[2], x[4], 1e-7);
  }
}

TEST(SwigluTest, ReferenceMatchesFormula) {
  const float g[] = {-20.0f, -1.0f, 0.0f, 0.5f, 3.0f, 30.0f};
  const float u[] = {1.0f, 2.0f, 3.0f, -1.0f, 0.5f, 1.0f};
  float out[6];
  ref::swiglu(out, g, u, 6);
  for (int i = 0; i < 6; ++i) {
    const double expect = g[i] / (1.0 + std::exp(-double(g[i]))) * u[i];
    EXPECT_NEAR(out[i], expect, 1e-6 * (1 + std::fabs(expect)));
  }
}

// exp_weights (the sampler's weights): logits with masked (-inf) entries and
// a spread wide enough that some weights fall under the floor.
std::vector<float> vocabulary_logits(int64_t n, uint32_t seed) {
  auto x = random_floats(n, seed, 12.0f);
  for (int64_t i = 3; i < n; i += 7) x[i] = -INFINITY;
  return x;
}

TEST(ExpWeightsTest, ReferenceMatchesFormula) {
  const float scale = 1.25f;
  for (int64_t n : {1, 9, 263, 4099}) {
    const auto x = vocabulary_logits(n, 40 + n);
    std::vector<float> out(n, -1.0f);
    const ExpWeights w = ref::exp_weights(x.data(), scale, out.data(), n);
    float max = -INFINITY;
    for (float v : x) max = std::max(max, v * scale);
    ASSERT_EQ(w.max, max);
    double sum = 0;
    int ones = 0, zeros = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float a = x[i] * scale - max;
      if (a < kExpWeightFloor) {
        ASSERT_EQ(out[i], 0.0f) << i;
        ++zeros;
      } else {
        ASSERT_NEAR(out[i], std::exp(double(a)), 1e-6 * std::exp(double(a))) << i;
      }
      ones += out[i] == 1.0f;
      sum += out[i];
    }
    EXPECT_GE(ones, 1);  // the largest weighs exactly 1
    if (n > 7) {
      EXPECT_GT(zeros, 0);
    }
    EXPECT_NEAR(w.sum, sum, 1e-12 * sum);
  }
}

TEST(ExpWeightsTest, EveryPathMatchesTheReference) {
  for (KernelPath p : testing::simd_paths()) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33, 263, 4099}) {
      const auto x = vocabulary_logits(n, 50 + n);
      for (float scale : {1.0f, 0.37f, 2.5f}) {
        std::vector<float> a(n, -1.0f), b(n, -1.0f);
        const ExpWeights wa = exp_weights(x.data(), scale, a.data(), n);
        const ExpWeights wb = ref::exp_weights(x.data(), scale, b.data(), n);
        ASSERT_EQ(wa.max, wb.max) << "n " << n;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(a[i] == 0.0f, b[i] == 0.0f) << "n " << n << " at " << i;
          ASSERT_NEAR(a[i], b[i], 1e-6 * b[i]) << "n " << n << " at " << i;
        }
        ASSERT_NEAR(wa.sum, wb.sum, 1e-6 * wb.sum) << "n " << n;
      }
    }
  }
}

TEST(ExpWeightsTest, MaskedAndInfiniteLogitsReportTheirMax) {
  for (KernelPath p : testing::all_paths()) {
    PathGuard guard;
    if (!set_kernel_path(p)) continue;
    for (int64_t n : {3, 8, 21}) {
      std::vector<float> x(n, -INFINITY), out(n);
      EXPECT_EQ(exp_weights(x.data(), 0.8f, out.data(), n).max, -INFINITY) << "n " << n;
      x[n - 2] = 4.0f;
      const ExpWeights one = exp_weights(x.data(), 0.8f, out.data(), n);
      EXPECT_EQ(one.max, 4.0f * 0.8f);
      EXPECT_EQ(one.sum, 1.0);
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], i == n - 2 ? 1.0f : 0.0f) << "n " << n << " at " << i;
      x[1] = INFINITY;
      EXPECT_EQ(exp_weights(x.data(), 0.8f, out.data(), n).max, INFINITY) << "n " << n;
    }
  }
}

// RoPE: both styles against the rotation written out directly, including
// dims past rot_dim passing through unchanged.
TEST(RopeTest, BothStylesMatchDirectFormula) {
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves}) {
    for (int64_t head_dim : {8, 32, 64}) {
      for (int64_t rot_dim : {head_dim, head_dim / 2}) {
        std::vector<float> inv_freq(rot_dim / 2);
        for (int64_t i = 0; i < rot_dim / 2; ++i)
          inv_freq[i] = static_cast<float>(std::pow(10000.0, -2.0 * i / rot_dim));
        for (int64_t pos : {0, 1, 5, 127, 2047}) {
          const auto x = random_floats(head_dim, 9 + pos + head_dim);
          auto y = x;
          rope(y.data(), head_dim, rot_dim, pos, inv_freq.data(), style);
          for (int64_t i = 0; i < rot_dim / 2; ++i) {
            const double theta = double(pos) * inv_freq[i];
            const int64_t a = style == RopeStyle::kAdjacentPairs ? 2 * i : i;
            const int64_t b = style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + rot_dim / 2;
            const double ea = x[a] * std::cos(theta) - x[b] * std::sin(theta);
            const double eb = x[a] * std::sin(theta) + x[b] * std::cos(theta);
            // theta up to 2047 rad: float cos/sin of a float angle carry ~1e-4 phase error
            ASSERT_NEAR(y[a], ea, 5e-4) << "pos " << pos << " i " << i;
            ASSERT_NEAR(y[b], eb, 5e-4) << "pos " << pos << " i " << i;
          }
          for (int64_t i = rot_dim; i < head_dim; ++i) ASSERT_EQ(y[i], x[i]);
        }
      }
    }
  }
}

// rope reuses each thread's last cos/sin table: interleaved positions, widths
// and frequency vectors (same pointer, new values) must each equal the reference.
TEST(RopeTest, ReusedTablesMatchReferenceBitForBit) {
  std::vector<float> inv_freq(32);
  auto fill = [&](double base, int64_t rot) {
    for (int64_t i = 0; i < rot / 2; ++i) inv_freq[i] = static_cast<float>(std::pow(base, -2.0 * i / rot));
  };
  const auto x = random_floats(64, 5);
  int checked = 0;
  for (double base : {10000.0, 500000.0})
    for (int64_t rot : {64, 32})
      for (int64_t pos : {3, 3, 900, 3}) {
        fill(base, rot);
        for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves}) {
          auto y = x, e = x;
          rope(y.data(), 64, rot, pos, inv_freq.data(), style);
          ref::rope(e.data(), 64, rot, pos, inv_freq.data(), style);
          ASSERT_EQ(y, e) << "base " << base << " rot " << rot << " pos " << pos;
          ++checked;
        }
      }
  EXPECT_EQ(checked, 32);
  std::vector<float> wide_freq(300, 0.01f);  // rot_dim 600: past the cached width
  auto y = random_floats(600, 6), e = y;
  rope(y.data(), 600, 600, 7, wide_freq.data(), RopeStyle::kHalves);
  ref::rope(e.data(), 600, 600, 7, wide_freq.data(), RopeStyle::kHalves);
  EXPECT_EQ(y, e);
}

// Every path's rotation (AVX2: 8 halves or 4 adjacent pairs at a time, then a
// scalar tail) equals the reference bit for bit, over widths with tails.
TEST(RopeTest, EveryPathEqualsReferenceBitForBit) {
  const std::vector<KernelPath> paths = testing::all_paths();
  int checked = 0;
  for (KernelPath p : paths) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves})
      for (int64_t head_dim : {2, 6, 14, 64, 80, 128})
        for (int64_t rot_dim : {head_dim, head_dim / 2 - (head_dim / 2) % 2}) {
          if (rot_dim < 2) continue;
          std::vector<float> inv_freq(rot_dim / 2);
          for (int64_t i = 0; i < rot_dim / 2; ++i)
            inv_freq[i] = static_cast<float>(std::pow(500000.0, -2.0 * i / rot_dim));
          for (int64_t pos : {1, 77, 4095}) {
            auto y = random_floats(head_dim, 31 + head_dim + pos), e = y;
            rope(y.data(), head_dim, rot_dim, pos, inv_freq.data(), style);
            ref::rope(e.data(), head_dim, rot_dim, pos, inv_freq.data(), style);
            ASSERT_EQ(y, e) << kernel_path_name(p) << " head_dim " << head_dim << " rot " << rot_dim << " pos " << pos;
            ++checked;
          }
        }
  }
  EXPECT_GE(checked, 66);
}

TEST(RopeTest, PositionZeroIsIdentityAndNormIsKept) {
  std::vector<float> inv_freq(16, 0.5f);
  const auto x = random_floats(32, 77);
  auto y = x;
  rope(y.data(), 32, 32, 0, inv_freq.data(), RopeStyle::kHalves);
  EXPECT_EQ(y, x);
  rope(y.data(), 32, 32, 9, inv_freq.data(), RopeStyle::kHalves);
  double nx = 0, ny = 0;
  for (int i = 0; i < 32; ++i) nx += x[i] * x[i], ny += y[i] * y[i];
  EXPECT_NEAR(nx, ny, 1e-4 * nx);
  EXPECT_NE(y, x);
}

// Attention against a naive double computation, on every path, with a kv
// stride wider than head_dim (heads interleaved in the cache).
TEST(AttentionTest, MatchesNaiveOnEveryPath) {
  const std::vector<KernelPath> paths = testing::all_paths();
  for (KernelPath p : paths) {
    PathGuard guard;
    ASSERT_TRUE(set_kernel_path(p));
    for (int64_t head_dim : {4, 32, 33, 40, 64, 128}) {
      for (int64_t n_ctx : {1, 2, 9, 40}) {
        const int64_t stride = head_dim * 3 + 1;
        const auto q = random_floats(head_dim, 1 + n_ctx);
        const auto k = random_floats(n_ctx * stride, 2 + n_ctx);
        const auto v = random_floats(n_ctx * stride, 3 + n_ctx);
        const float scale = 1.0f / std::sqrt(float(head_dim));
        std::vector<float> scores(n_ctx), out(head_dim);
        attention_head(q.data(), k.data(), v.data(), stride, n_ctx, head_dim, scale, scores.data(),
                       out.data());
        std::vector<double> s(n_ctx);
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < n_ctx; ++j) {
          double d = 0;
          for (int64_t i = 0; i < head_dim; ++i) d += double(q[i]) * k[j * stride + i];
          s[j] = d * scale;
          mx = std::max(mx, s[j]);
        }
        for (auto& e : s) sum += (e = std::exp(e - mx));
        for (int64_t i = 0; i < head_dim; ++i) {
          double o = 0;
          for (int64_t j = 0; j < n_ctx; ++j) o += s[j] / sum * v[j * stride + i];
          ASSERT_NEAR(out[i], o, 2e-5) << kernel_path_name(p) << " hd " << head_dim << " ctx " << n_ctx;
        }
      }
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
