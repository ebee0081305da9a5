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
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::PathGuard;
using testing::random_floats;

enum class Elem { kF16, kQ8_0 };

size_t row_bytes(Elem e, int64_t elems) {
  return e == Elem::kF16 ? static_cast<size_t>(elems) * 2
                         : static_cast<size_t>((elems + kQK - 1) / kQK) * sizeof(BlockQ8_0);
}

// Encodes one row of `elems` floats as the KV cache does: f16 halves, or
// q8_0 blocks with d = amax / 127 and a zero-padded short last block.
// deq[elems] receives the values the encoding holds.
void encode_row(Elem e, const float* x, int64_t elems, uint8_t* out, float* deq) {
  if (e == Elem::kF16) {
    for (int64_t i = 0; i < elems; ++i) {
      const uint16_t h = f32_to_f16(x[i]);
      std::memcpy(out + 2 * i, &h, 2);
      deq[i] = f16_to_f32(h);
    }
    return;
  }
  for (int64_t b = 0; b * kQK < elems; ++b) {
    const int64_t len = std::min<int64_t>(kQK, elems - b * kQK);
    float amax = 0;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[b * kQK + i]));
    BlockQ8_0 block{};
    block.d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(block.d), inv = d > 0 ? 1.0f / d : 0.0f;
    for (int64_t i = 0; i < len; ++i) {
      const float q = std::clamp(std::nearbyint(x[b * kQK + i] * inv), -127.0f, 127.0f);
      block.qs[i] = static_cast<int8_t>(q);
      deq[b * kQK + i] = d * block.qs[i];
    }
    std::memcpy(out + b * sizeof(BlockQ8_0), &block, sizeof(block));
  }
}

// n_ctx rows of `elems` elements, row j at j * stride bytes. The buffer ends
// right after the last row, so an over-read shows up under ASan.
struct Rows {
  int64_t stride = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> k_f32, v_f32;  // the floats encoded, [n_ctx][elems]
  std::vector<float> k_deq, v_deq;  // what the rows hold, [n_ctx][elems]
};

Rows make_rows(Elem e, int64_t n_ctx, int64_t elems, int64_t pad_bytes, uint32_t seed) {
  Rows r;
  const size_t rb = row_bytes(e, elems);
  r.stride = static_cast<int64_t>(rb) + pad_bytes;
  const size_t total = static_cast<size_t>((n_ctx - 1) * r.stride) + rb;
  r.k.assign(total, 0xAB);  // padding holds garbage the kernels must not read
  r.v.assign(total, 0xCD);
  r.k_f32 = random_floats(n_ctx * elems, seed);
  r.v_f32 = random_floats(n_ctx * elems, seed + 1);
  r.k_deq.resize(r.k_f32.size());
  r.v_deq.resize(r.v_f32.size());
  for (int64_t j = 0; j < n_ctx; ++j) {
    encode_row(e, &r.k_f32[j * elems], elems, &r.k[j * r.stride], &r.k_deq[j * elems]);
    encode_row(e, &r.v_f32[j * elems], elems, &r.v[j * r.stride], &r.v_deq[j * elems]);
  }
  return r;
}

// softmax(q . k_j * scale) weighted sum of v_j in double; head elements
// [first, first + head_dim) of rows of `elems` floats.
std::vector<double> attention_fp64(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, int64_t elems, int64_t first,
                                   int64_t n_ctx, int64_t head_dim, float scale) {
  std::vector<double> s(n_ctx);
  double mx = -1e300, sum = 0;
  for (int64_t j = 0; j < n_ctx; ++j) {
    double d = 0;
    for (int64_t i = 0; i < head_dim; ++i) d += double(q[i]) * k[j * elems + first + i];
    s[j] = d * scale;
    mx = std::max(mx, s[j]);
  }
  for (auto& x : s) sum += (x = std::exp(x - mx));
  std::vector<double> out(head_dim, 0.0);
  for (int64_t i = 0; i < head_dim; ++i)
    for (int64_t j = 0; j < n_ctx; ++j) out[i] += s[j] / sum * v[j * elems + first + i];
  return out;
}

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
