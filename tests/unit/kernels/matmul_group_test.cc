// matmul_group: several matrices over the same activations in one pool call
// must give exactly what one matmul per matrix gives, on every path, for mixed
// weight types (Q4_K_M files mix Q4_K and Q6_K in q/k/v), row counts that are
// not multiples of the row grain, decode and prefill token counts, codebook
// members beside others (their x86 preparation holds more), and groups
// too large to group (they fall back to one call per matrix).
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

using testing::random_floats;

// A weight matrix that owns its bytes.
struct OwnedMatrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

OwnedMatrix make_matrix(DType dtype, int64_t rows, int64_t cols, uint32_t seed) {
  OwnedMatrix m;
  m.bytes = is_codebook_type(dtype)
                ? testing::random_iq_rows(dtype, rows, cols, seed)  // no quantizer makes them
                : testing::pack_rows(dtype, random_floats(static_cast<size_t>(rows * cols), seed), rows, cols);
  m.w = WeightMatrix{dtype, rows, cols, m.bytes.data()};
  return m;
}

struct Member {
  DType dtype;
  int64_t rows;
};

void check_group(const std::vector<Member>& members, int64_t cols, int64_t n_tokens, ThreadPool& pool) {
  std::vector<OwnedMatrix> matrices;
  size_t scratch_bytes = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    matrices.push_back(make_matrix(members[i].dtype, members[i].rows, cols, 7 + 13 * i));
    scratch_bytes = std::max(scratch_bytes, matmul_scratch_bytes(members[i].dtype, cols, n_tokens));
  }
  const auto x = random_floats(static_cast<size_t>(n_tokens * cols), 99 + n_tokens, 2.0f);
  for (KernelPath path : testing::all_paths()) {
    testing::PathGuard guard;
    ASSERT_TRUE(set_kernel_path(path));
    std::vector<uint8_t> scratch(scratch_bytes);
    std::vector<std::vector<float>> separate, grouped;
    std::vector<MatmulOutput> outputs;
    for (const OwnedMatrix& m : matrices) {
      separate.emplace_back(static_cast<size_t>(n_tokens * m.w.rows), -1.0f);
      matmul(m.w, x.data(), n_tokens, separate.back().data(), scratch.data(), pool);
      grouped.emplace_back(static_cast<size_t>(n_tokens * m.w.rows), -2.0f);
    }
    for (size_t i = 0; i < matrices.size(); ++i) outputs.push_back({matrices[i].w, grouped[i].data()});
    std::fill(scratch.begin(), scratch.end(), uint8_t{0xA5});  // nothing left over from the separate calls
    matmul_group(outputs, x.data(), n_tokens, scratch.data(), pool);
    for (size_t i = 0; i < matrices.size(); ++i)
      for (size_t j = 0; j < grouped[i].size(); ++j)
        ASSERT_EQ(grouped[i][j], separate[i][j])
            << kernel_path_name(path) << " member " << i << " (" << dtype_name(members[i].dtype) << ", "
            << members[i].rows << " rows) element " << j << " n_tokens " << n_tokens
            << " threads " << pool.n_threads();
  }
}

TEST(MatmulGroup, EqualsOneMatmulPerMatrix) {
  ThreadPool pool1(1), pool2(2);
  const std::vector<std::vector<Member>> groups = {
      {{DType::kQ4_K, 96}, {DType::kQ4_K, 33}, {DType::kQ6_K, 40}},  // Q4_K_M's q, k, v
      {{DType::kQ4_0, 64}, {DType::kQ8_0, 17}},
      {{DType::kF16, 70}, {DType::kF32, 8}, {DType::kBF16, 35}},
      {{DType::kQ4_0, 45}, {DType::kF16, 32}},  // quantized and float members
      // a codebook type's preparation (more than the others' on x86) is made
      // whichever member it is: first, or between others
      {{DType::kIQ2_XXS, 40}, {DType::kQ4_K, 24}},
      {{DType::kQ4_K, 24}, {DType::kIQ3_XXS, 40}, {DType::kQ6_K, 16}},
      {{DType::kQ8_0, 16}, {DType::kIQ1_M, 33}},
  };
  for (const auto& group : groups)
    for (int64_t n_tokens : {1, 3, 7, 20})
      for (ThreadPool* pool : {&pool1, &pool2}) check_group(group, 256, n_tokens, *pool);
}

TEST(MatmulGroup, LargerThanMaxGroupFallsBackToOneCallPerMatrix) {
  ThreadPool pool(2);
  std::vector<Member> many(kMaxGroup + 1, Member{DType::kQ8_0, 40});
  for (int64_t n_tokens : {1, 6}) check_group(many, 64, n_tokens, pool);
}

}  // namespace
}  // namespace llmpack::kernels
