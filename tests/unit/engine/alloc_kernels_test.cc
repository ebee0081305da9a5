// P6 at the kernel level: every matmul path (scalar, AVX2, AVX-512 where the
// CPU has it) for every weight type, prefill-sized and decode-sized, allocates
// nothing once its scratch is planned; the tiny f32 package of program_test
// alone would not reach the quantized and AVX-512 kernels.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/kernels.h"
#include "kernels/quantize.h"
#include "unit/engine/alloc_counter.h"
#include "unit/kernels/test_util.h"

namespace llmpack {
namespace {

TEST(KernelAllocations, P6_MatmulsOnEveryPathAllocateNothing) {
  const auto paths = kernels::testing::all_paths();
  ThreadPool pool(2);
  const int64_t rows = 80, cols = 512, max_tokens = 13;
  const auto wf = kernels::testing::random_floats(rows * cols, 3);
  const auto x = kernels::testing::random_floats(max_tokens * cols, 4);
  std::vector<float> y(max_tokens * rows);
  int checked = 0;
  for (DType dtype : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kQ6_K, DType::kF16, DType::kF32}) {
    const std::vector<uint8_t> packed = kernels::testing::pack_rows(dtype, wf, rows, cols);
    const kernels::WeightMatrix w{dtype, rows, cols, packed.data()};
    std::vector<uint8_t> scratch(kernels::matmul_scratch_bytes(dtype, cols, max_tokens) + 1);
    for (kernels::KernelPath path : paths) {
      kernels::testing::PathGuard guard;
      ASSERT_TRUE(kernels::set_kernel_path(path));
      for (int64_t n : {max_tokens, int64_t{6}, int64_t{1}}) {
        testing::AllocationCounter counter;
        kernels::matmul(w, x.data(), n, y.data(), scratch.data(), pool);
        const int64_t allocations = counter.count();
        EXPECT_EQ(allocations, 0) << dtype_name(dtype) << " on " << kernels::kernel_path_name(path) << ", "
                                  << n << " tokens";
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int>(6 * 3 * paths.size()));  // every type, path and size ran
}

// The grouped form (q/k/v, gate/up) splits its rows without allocating either.
TEST(KernelAllocations, P6_MatmulGroupAllocatesNothing) {
  ThreadPool pool(2);
  const int64_t rows = 48, cols = 256, max_tokens = 9;
  const auto wf = kernels::testing::random_floats(rows * cols, 5);
  const auto x = kernels::testing::random_floats(max_tokens * cols, 6);
  const auto q4k = kernels::testing::pack_rows(DType::kQ4_K, wf, rows, cols);
  const auto q6k = kernels::testing::pack_rows(DType::kQ6_K, wf, rows, cols);
  std::vector<float> y0(max_tokens * rows), y1(max_tokens * rows);
  const kernels::MatmulOutput group[] = {{{DType::kQ4_K, rows, cols, q4k.data()}, y0.data()},
                                         {{DType::kQ6_K, rows, cols, q6k.data()}, y1.data()}};
  std::vector<uint8_t> scratch(kernels::matmul_scratch_bytes(DType::kQ4_K, cols, max_tokens));
  for (kernels::KernelPath path : kernels::testing::all_paths()) {
    kernels::testing::PathGuard guard;
    ASSERT_TRUE(kernels::set_kernel_path(path));
    for (int64_t n : {max_tokens, int64_t{1}}) {
      testing::AllocationCounter counter;
      kernels::matmul_group(group, x.data(), n, scratch.data(), pool);
      EXPECT_EQ(counter.count(), 0) << kernels::kernel_path_name(path) << ", " << n << " tokens";
    }
  }
}

}  // namespace
}  // namespace llmpack
