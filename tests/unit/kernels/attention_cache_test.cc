// attention_head_f16 / attention_head_q8_0: every path (scalar and each SIMD
// path) against a double-precision attention over the dequantized rows, over
// head dims with tails, heads that start inside a q8_0 block, short last
// blocks, padded row strides and 1..300 cached positions; and both close to
// the f32 kernel on the values they were encoded from.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "unit/kernels/cache_rows.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::random_floats;
using testing::Elem;
using testing::Rows;
using testing::make_rows;
using testing::attention_fp64;

std::vector<float> run(Elem e, const Rows& r, const std::vector<float>& q, int64_t first,
                       int64_t n_ctx, int64_t head_dim, float scale) {
  std::vector<float> scores(n_ctx, -1.0f), out(head_dim, 1e30f);
  if (e == Elem::kF16) {
    const auto* k = reinterpret_cast<const uint16_t*>(r.k.data()) + first;
    const auto* v = reinterpret_cast<const uint16_t*>(r.v.data()) + first;
    attention_head_f16(q.data(), k, v, r.stride, n_ctx, head_dim, scale, scores.data(), out.data());
  } else {
    attention_head_q8_0(q.data(), r.k.data(), r.v.data(), r.stride, first, n_ctx, head_dim, scale,
                        scores.data(), out.data());
  }
  return out;
}

struct HeadLayout {
  int64_t head_dim, first, extra;  // a row holds first + head_dim + extra elements
};

// f16 heads start anywhere; q8_0 heads also start inside a block (first % 32
// != 0) and end before a short last block.
constexpr HeadLayout kF16Shapes[] = {{1, 0, 0},  {3, 2, 1},   {7, 0, 0},   {8, 8, 0},  {9, 1, 3},
                                {17, 0, 0}, {31, 5, 0},  {32, 32, 0}, {33, 0, 7}, {48, 48, 48},
                                {64, 64, 0}, {65, 3, 0}, {100, 0, 0}, {128, 0, 128}};
constexpr HeadLayout kQ8Shapes[] = {{32, 0, 0},  {32, 32, 32}, {64, 64, 0},  {128, 0, 128}, {96, 32, 8},
                               {8, 8, 16},  {8, 24, 0},   {16, 16, 40}, {48, 0, 48},   {48, 48, 0},
                               {80, 80, 0}, {1, 0, 0},    {7, 3, 0},    {33, 0, 0},    {40, 30, 9}};
constexpr int64_t kContexts[] = {1, 2, 3, 4, 5, 7, 8, 31, 64, 129, 300};

void check_every_path(Elem e, const HeadLayout* shapes, size_t n_shapes) {
  PathGuard guard;
  for (size_t si = 0; si < n_shapes; ++si) {
    const HeadLayout sh = shapes[si];
    const int64_t elems = sh.first + sh.head_dim + sh.extra;
    for (int64_t n_ctx : kContexts) {
      const Rows r = make_rows(e, n_ctx, elems, 2 * (n_ctx % 3), static_cast<uint32_t>(si * 1000 + n_ctx));
      const auto q = random_floats(sh.head_dim, static_cast<uint32_t>(7 + si + n_ctx));
      const float scale = 1.0f / std::sqrt(float(sh.head_dim));
      const auto want = attention_fp64(q, r.k_deq, r.v_deq, elems, sh.first, n_ctx, sh.head_dim, scale);
      for (KernelPath p : testing::all_paths()) {
        ASSERT_TRUE(set_kernel_path(p));
        const auto got = run(e, r, q, sh.first, n_ctx, sh.head_dim, scale);
        for (int64_t i = 0; i < sh.head_dim; ++i)
          ASSERT_NEAR(got[i], want[i], 2e-5 * (1 + std::fabs(want[i])))
              << kernel_path_name(p) << " hd " << sh.head_dim << " first " << sh.first << " ctx " << n_ctx
              << " at " << i;
      }
    }
  }
}

// attention_query_group: several query heads over one kv head (grouped-query
// decode) give, on every path, each query's attention_query result bit for
// bit (the SIMD path only reorders which query runs when), and that result is
// the fp64 attention. f32, f16 and q8_0 rows; head dims with strips of 32, of
// 8 and single columns; q8_0 heads inside blocks; 1-5 queries; contexts with
// and without a 4-key tail.
TEST(AttentionCacheTest, QueryGroupEqualsEachQueryAlone) {
  PathGuard guard;
  struct Shape {
    Elem e;
    HeadLayout h;
  };
  const Shape shapes[] = {{Elem::kF32, {64, 0, 0}},  {Elem::kF32, {64, 64, 128}}, {Elem::kF32, {20, 4, 0}},
                          {Elem::kF32, {80, 0, 0}},  {Elem::kF16, {64, 64, 0}},   {Elem::kF16, {128, 0, 0}},
                          {Elem::kF16, {9, 1, 3}},   {Elem::kQ8_0, {64, 64, 0}},  {Elem::kQ8_0, {128, 0, 0}},
                          {Elem::kQ8_0, {40, 30, 9}}};
  for (const Shape& sh : shapes) {
    const int64_t elems = sh.h.first + sh.h.head_dim + sh.h.extra, hd = sh.h.head_dim;
    for (int64_t n_ctx : {1, 3, 4, 5, 37, 130}) {
      const Rows r = make_rows(sh.e, n_ctx, elems, 4, static_cast<uint32_t>(hd * 31 + n_ctx));
      const CacheElem elem = sh.e == Elem::kF32 ? CacheElem::kF32 : sh.e == Elem::kF16 ? CacheElem::kF16
                                                                                       : CacheElem::kQ8_0;
      const KvHead kv{elem, r.k.data(), r.v.data(), r.stride, sh.h.first};
      const float scale = 1.0f / std::sqrt(float(hd));
      for (int64_t n_q : {1, 2, 4, 5}) {
        const auto q = random_floats(n_q * hd, static_cast<uint32_t>(n_q + n_ctx + hd));
        for (KernelPath p : testing::all_paths()) {
          ASSERT_TRUE(set_kernel_path(p));
          std::vector<float> scores(n_q * n_ctx, -1.0f), out(n_q * hd, 1e30f);
          attention_query_group(q.data(), n_q, kv, n_ctx, hd, scale, scores.data(), out.data());
          for (int64_t g = 0; g < n_q; ++g) {
            std::vector<float> one_scores(n_ctx), one(hd, 1e30f);
            const std::vector<float> qg(q.begin() + g * hd, q.begin() + (g + 1) * hd);
            attention_query(qg.data(), kv, n_ctx, hd, scale, one_scores.data(), one.data());
            const auto want = attention_fp64(qg, r.k_deq, r.v_deq, elems, sh.h.first, n_ctx, hd, scale);
            for (int64_t i = 0; i < hd; ++i) {
              ASSERT_EQ(out[g * hd + i], one[i]) << kernel_path_name(p) << " hd " << hd << " ctx " << n_ctx
                                                 << " queries " << n_q << " query " << g << " at " << i;
              ASSERT_NEAR(out[g * hd + i], want[i], 2e-5 * (1 + std::fabs(want[i])));
            }
          }
        }
      }
    }
  }
}

TEST(AttentionCacheTest, F16EveryPathMatchesFp64OnTheStoredHalves) {
  check_every_path(Elem::kF16, kF16Shapes, std::size(kF16Shapes));
}

TEST(AttentionCacheTest, Q8_0EveryPathMatchesFp64OnTheDequantizedBlocks) {
  check_every_path(Elem::kQ8_0, kQ8Shapes, std::size(kQ8Shapes));
}

// The compact kernels give what the f32 kernel gives on the dequantized rows
// (same math, same rounding class), and stay near the f32 kernel on the
// floats the rows were encoded from (the storage's own error).
TEST(AttentionCacheTest, CloseToTheF32KernelOnTheSameValues) {
  PathGuard guard;
  const int64_t head_dim = 64, n_ctx = 200, elems = 4 * head_dim;
  const float scale = 1.0f / std::sqrt(float(head_dim));
  for (auto [e, storage_tol] : {std::pair{Elem::kF16, 2e-3}, std::pair{Elem::kQ8_0, 3e-2}}) {
    const Rows r = make_rows(e, n_ctx, elems, 0, 99);
    const auto q = random_floats(head_dim, 5, 2.0f);  // a peakier softmax
    for (KernelPath p : testing::all_paths()) {
      ASSERT_TRUE(set_kernel_path(p));
      for (int64_t h = 0; h < 4; ++h) {
        const int64_t first = h * head_dim;
        const auto got = run(e, r, q, first, n_ctx, head_dim, scale);
        std::vector<float> scores(n_ctx), on_deq(head_dim), on_f32(head_dim);
        attention_head(q.data(), r.k_deq.data() + first, r.v_deq.data() + first, elems, n_ctx, head_dim,
                       scale, scores.data(), on_deq.data());
        attention_head(q.data(), r.k_f32.data() + first, r.v_f32.data() + first, elems, n_ctx, head_dim,
                       scale, scores.data(), on_f32.data());
        double worst_storage = 0;
        for (int64_t i = 0; i < head_dim; ++i) {
          ASSERT_NEAR(got[i], on_deq[i], 2e-5 * (1 + std::fabs(on_deq[i]))) << kernel_path_name(p) << " " << i;
          worst_storage = std::max(worst_storage, double(std::fabs(got[i] - on_f32[i])));
        }
        EXPECT_LE(worst_storage, storage_tol) << kernel_path_name(p) << " head " << h;
        EXPECT_GT(worst_storage, 0.0) << "the storage type should round something";
      }
    }
  }
}

// The AVX-512 decode kernel widens a q8_0 head of whole blocks to its exact
// f32 values (in place for one query, into tiles for a group) and runs its
// f32 code on them, so it gives, bit for bit, what its f32 kernel gives on the
// dequantized rows (1, 2, 4 and 5 queries; contexts with tails of key and
// value rows). Skips on a CPU without it. The AVX-512 decode kernels are
// asked for: on a CPU that splits 512-bit vectors (Zen 4) the automatic
// choice leaves decode attention to the AVX2 kernels, whose q8_0 code sums
// in another order than their f32 code.
TEST(AttentionCacheTest, Q8_0WholeBlockHeadsGiveTheF32KernelsBitsOnAvx512) {
  PathGuard guard;
  if (!set_kernel_path(KernelPath::kAvx512)) GTEST_SKIP() << "this CPU has no AVX-512 path";
  set_avx512_decode(Avx512Decode::kOn);
  const HeadLayout shapes[] = {{32, 32, 32}, {64, 64, 0}, {96, 0, 32}, {128, 128, 0}};
  for (const HeadLayout& sh : shapes) {
    const int64_t elems = sh.first + sh.head_dim + sh.extra, hd = sh.head_dim;
    for (int64_t n_ctx : {1, 15, 16, 17, 64, 65, 300}) {
      const Rows r = make_rows(Elem::kQ8_0, n_ctx, elems, 2, static_cast<uint32_t>(hd + n_ctx));
      const KvHead q8{CacheElem::kQ8_0, r.k.data(), r.v.data(), r.stride, sh.first};
      const KvHead f32{CacheElem::kF32, r.k_deq.data(), r.v_deq.data(), elems * 4, sh.first};
      for (int64_t n_q : {1, 2, 4, 5}) {
        const auto q = random_floats(n_q * hd, static_cast<uint32_t>(3 * n_q + hd));
        std::vector<float> scores(n_q * n_ctx), got(n_q * hd), want(n_q * hd);
        attention_query_group(q.data(), n_q, q8, n_ctx, hd, 0.125f, scores.data(), got.data());
        attention_query_group(q.data(), n_q, f32, n_ctx, hd, 0.125f, scores.data(), want.data());
        ASSERT_EQ(got, want) << "hd " << hd << " first " << sh.first << " ctx " << n_ctx << " queries " << n_q;
      }
    }
  }
}

// Identical keys give uniform weights: the output is the mean of the stored
// values (value row j is all j, which f16 holds exactly and q8_0 nearly).
TEST(AttentionCacheTest, UniformScoresAverageTheValues) {
  PathGuard guard;
  const int64_t head_dim = 40, n_ctx = 6;
  for (Elem e : {Elem::kF16, Elem::kQ8_0}) {
    Rows r = make_rows(e, n_ctx, head_dim, 0, 3);
    std::vector<float> k_row(head_dim, 0.5f), deq(head_dim);
    std::vector<double> mean(head_dim, 0.0);
    for (int64_t j = 0; j < n_ctx; ++j) {
      encode_row(e, k_row.data(), head_dim, &r.k[j * r.stride], deq.data());
      std::vector<float> v_row(head_dim, float(j));
      encode_row(e, v_row.data(), head_dim, &r.v[j * r.stride], deq.data());
      for (int64_t i = 0; i < head_dim; ++i) mean[i] += deq[i] / n_ctx;
    }
    const auto q = random_floats(head_dim, 11);
    for (KernelPath p : testing::all_paths()) {
      ASSERT_TRUE(set_kernel_path(p));
      const auto got = run(e, r, q, 0, n_ctx, head_dim, 0.125f);
      for (int64_t i = 0; i < head_dim; ++i) {
        ASSERT_NEAR(got[i], mean[i], 1e-5) << kernel_path_name(p) << " " << i;
        ASSERT_NEAR(got[i], 2.5, 0.02) << kernel_path_name(p) << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
