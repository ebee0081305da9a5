// attention_tokens (prefill attention over one kv head): every path against a
// double-precision attention per query over the stored rows, for f32, f16 and
// q8_0 caches, groups of 1-4 query heads, tiles of queries that end mid-way,
// key blocks that end mid-way, head sizes with and without a 32-element tail
// (and one the SIMD tiles do not take), heads inside q8_0 blocks, and padded
// query, output and cache rows.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernels.h"
#include "unit/kernels/cache_rows.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::Elem;
using testing::PathGuard;
using testing::Rows;
using testing::attention_fp64;
using testing::make_rows;
using testing::random_floats;

struct TokensCase {
  int64_t head_dim, first, extra;  // a cache row holds first + head_dim + extra elements
  int64_t group, n_tokens, start_pos;
};

// Tiles hold 32 queries and blocks 32 keys: these cross both boundaries.
constexpr TokensCase kCases[] = {
    {64, 0, 64, 4, 9, 0},    {64, 64, 0, 4, 8, 100},  {128, 0, 0, 1, 40, 3},  {48, 48, 16, 3, 11, 30},
    {8, 8, 8, 2, 5, 0},      {32, 0, 0, 1, 1, 0},     {32, 0, 32, 1, 33, 31}, {96, 32, 0, 2, 17, 64},
    {12, 4, 0, 2, 3, 2},     {80, 16, 8, 4, 3, 45},
};

Elem elem_of(CacheElem e) {
  return e == CacheElem::kF32 ? Elem::kF32 : e == CacheElem::kF16 ? Elem::kF16 : Elem::kQ8_0;
}

std::string name(CacheElem e) { return e == CacheElem::kF32 ? "f32" : e == CacheElem::kF16 ? "f16" : "q8_0"; }

void check_case(CacheElem ce, const TokensCase& c, uint32_t seed) {
  const int64_t hd = c.head_dim, elems = c.first + hd + c.extra;
  const int64_t n_ctx = c.start_pos + c.n_tokens;  // rows end at the last position read
  const Rows rows = make_rows(elem_of(ce), n_ctx, elems, 4 * (seed % 3), seed);
  const int64_t q_stride = c.group * hd + 5, out_stride = c.group * hd + 3;
  const auto q = random_floats(static_cast<size_t>(c.n_tokens * q_stride), seed + 7);
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const KvHead kv{ce, rows.k.data(), rows.v.data(), rows.stride, c.first};
  PathGuard guard;
  for (KernelPath p : testing::all_paths()) {
    ASSERT_TRUE(set_kernel_path(p));
    std::vector<float> scratch(attention_tokens_scratch_floats(hd, n_ctx), std::numeric_limits<float>::quiet_NaN());
    std::vector<float> out(static_cast<size_t>(c.n_tokens * out_stride), -7.0f);
    attention_tokens(q.data(), q_stride, c.n_tokens, c.group, c.start_pos, kv, hd, scale, scratch.data(),
                     out.data(), out_stride);
    for (int64_t t = 0; t < c.n_tokens; ++t) {
      for (int64_t h = 0; h < c.group; ++h) {
        const std::vector<float> qh(q.begin() + t * q_stride + h * hd, q.begin() + t * q_stride + (h + 1) * hd);
        const auto want =
            attention_fp64(qh, rows.k_deq, rows.v_deq, elems, c.first, c.start_pos + t + 1, hd, scale);
        for (int64_t d = 0; d < hd; ++d)
          ASSERT_NEAR(out[t * out_stride + h * hd + d], want[d], 5e-5 * (1 + std::fabs(want[d])))
              << name(ce) << " " << kernel_path_name(p) << " hd " << hd << " group " << c.group << " token " << t
              << " head " << h << " dim " << d;
      }
      for (int64_t i = c.group * hd; i < out_stride; ++i)
        ASSERT_EQ(out[t * out_stride + i], -7.0f) << "wrote past the group's heads, token " << t;
    }
  }
}

TEST(AttentionTokensTest, F32EveryPathMatchesFp64PerQuery) {
  for (size_t i = 0; i < std::size(kCases); ++i) check_case(CacheElem::kF32, kCases[i], static_cast<uint32_t>(10 + i));
}

TEST(AttentionTokensTest, F16EveryPathMatchesFp64PerQuery) {
  for (size_t i = 0; i < std::size(kCases); ++i) check_case(CacheElem::kF16, kCases[i], static_cast<uint32_t>(40 + i));
}

// q8_0 heads that start on a block, inside one (first % 32 = 16, 8) and off
// the 8-element grid (first = 3: element by element).
TEST(AttentionTokensTest, Q8_0EveryPathMatchesFp64PerQuery) {
  for (size_t i = 0; i < std::size(kCases); ++i) check_case(CacheElem::kQ8_0, kCases[i], static_cast<uint32_t>(70 + i));
  for (const TokensCase c : {TokensCase{32, 16, 16, 2, 6, 20}, TokensCase{40, 8, 0, 1, 35, 0}, TokensCase{16, 3, 13, 4, 5, 33}})
    check_case(CacheElem::kQ8_0, c, 99);
}

// Runs attention_tokens on every path over an f32 cache and checks every
// query of every token against the fp64 reference.
void check_all_queries(const TokensCase& c, const Rows& rows, const std::vector<float>& q, const char* what) {
  const int64_t hd = c.head_dim, n_ctx = c.start_pos + c.n_tokens, width = c.group * hd;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  const KvHead kv{CacheElem::kF32, rows.k.data(), rows.v.data(), rows.stride, 0};
  PathGuard guard;
  for (KernelPath p : testing::all_paths()) {
    ASSERT_TRUE(set_kernel_path(p));
    std::vector<float> scratch(attention_tokens_scratch_floats(hd, n_ctx));
    std::vector<float> out(static_cast<size_t>(c.n_tokens * width));
    attention_tokens(q.data(), width, c.n_tokens, c.group, c.start_pos, kv, hd, scale, scratch.data(), out.data(),
                     width);
    for (int64_t qi = 0; qi < c.n_tokens * c.group; ++qi) {
      const std::vector<float> qv(q.begin() + qi * hd, q.begin() + (qi + 1) * hd);
      const auto want = attention_fp64(qv, rows.k_deq, rows.v_deq, hd, 0, c.start_pos + qi / c.group + 1, hd, scale);
      for (int64_t d = 0; d < hd; ++d)
        ASSERT_NEAR(out[qi * hd + d], want[d], 5e-5 * (1 + std::fabs(want[d])))
            << what << " " << kernel_path_name(p) << " query " << qi << " dim " << d;
    }
  }
}

// Sets key row j to factor times query 0 (and its dequantized copy).
void key_along_query(Rows& rows, const std::vector<float>& q, int64_t j, int64_t hd, float factor) {
  for (int64_t d = 0; d < hd; ++d) rows.k_deq[j * hd + d] = q[d] * factor;
  std::memcpy(rows.k.data() + j * rows.stride, &rows.k_deq[j * hd], hd * sizeof(float));
}

// A query whose scores are all far below another's: the running maximum
// moves between key blocks without losing precision (scores of +-60).
TEST(AttentionTokensTest, PeakyScoresAcrossKeyBlocks) {
  const TokensCase c{64, 0, 0, 2, 3, 90};
  Rows rows = make_rows(Elem::kF32, c.start_pos + c.n_tokens, c.head_dim, 0, 5);
  const auto q = random_floats(static_cast<size_t>(c.n_tokens * c.group * c.head_dim), 6, 1.0f);
  key_along_query(rows, q, 70, c.head_dim, 8.0f);  // key 70 matches query 0: its block comes after two others
  check_all_queries(c, rows, q, "peaky");
}

// One score of about 400 among scores near 0, at each place of a block that
// every query sees (no causal mask): the block's maximum, which the score
// pass keeps, must be the true one, or exp of the score above it overflows
// to inf. One query, and a full tile of 32 (8 tokens x 4 heads, all one
// query), so that the score passes' groups of keys (8, 4, 1 a pass; or 12,
// 6, 3, 1) and of lanes take every shape.
TEST(AttentionTokensTest, HugeScoreAnywhereInAVisibleBlock) {
  for (const TokensCase c : {TokensCase{64, 0, 0, 1, 1, 40}, TokensCase{64, 0, 0, 4, 8, 40}}) {
    for (int64_t j = 0; j < 32; ++j) {
      Rows rows = make_rows(Elem::kF32, c.start_pos + c.n_tokens, c.head_dim, 0, 8);
      const auto q0 = random_floats(static_cast<size_t>(c.head_dim), 9, 1.0f);
      std::vector<float> q;
      for (int64_t i = 0; i < c.n_tokens * c.group; ++i) q.insert(q.end(), q0.begin(), q0.end());
      key_along_query(rows, q, j, c.head_dim, 50.0f);  // score |q0|^2 * 50 / 8, about 400
      check_all_queries(c, rows, q, ("huge score at key " + std::to_string(j)).c_str());
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels
