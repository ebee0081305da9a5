// The memory-only grouped Q5_0 / Q5_1 layouts (kernels/grouped_blocks.h):
// where each byte of a plain block goes, that ungrouping gives the plain
// blocks back, that every reader of the layout sees the plain row's values,
// and when a load regroups.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "core/half.h"
#include "kernels/grouped_blocks.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quantize.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels {
namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

int64_t block_bytes(DType plain) { return dtype_info(plain)->block_bytes; }

TEST(GroupedBlocks, UngroupingGivesEveryPlainBlockBack) {
  for (DType plain : {DType::kQ5_0, DType::kQ5_1}) {
    const DType grouped = *grouped_type(plain);
    EXPECT_EQ(plain_type(grouped), plain);
    for (int64_t n_blocks = 1; n_blocks <= 26; ++n_blocks) {
      const auto src = random_bytes(static_cast<size_t>(n_blocks * block_bytes(plain)), 7 + n_blocks);
      std::vector<uint8_t> g(src.size(), 0xAA), back(src.size(), 0x55);
      group_blocks(plain, src.data(), n_blocks, g.data());
      ungroup_blocks(grouped, g.data(), n_blocks, 0, n_blocks, back.data());
      EXPECT_EQ(back, src) << dtype_name(plain) << " blocks=" << n_blocks;
      // any sub-range, as the prefill packers ask for chunks of a row
      for (int64_t b0 = 0; b0 < n_blocks; b0 += 3) {
        const int64_t nb = std::min<int64_t>(5, n_blocks - b0);
        std::vector<uint8_t> part(static_cast<size_t>(nb * block_bytes(plain)));
        ungroup_blocks(grouped, g.data(), n_blocks, b0, nb, part.data());
        EXPECT_EQ(0, std::memcmp(part.data(), src.data() + b0 * block_bytes(plain), part.size()))
            << dtype_name(plain) << " blocks=" << n_blocks << " from " << b0;
      }
      if (n_blocks % kGroupBlocks == 0) continue;
      // the blocks after the last whole group stay plain, byte for byte
      const int64_t tail = n_blocks / kGroupBlocks * kGroupBlocks * block_bytes(plain);
      EXPECT_EQ(0, std::memcmp(g.data() + tail, src.data() + tail, src.size() - tail)) << n_blocks;
    }
  }
}

// The layout written out by hand: d of block k at lane 0 2 4 6 1 3 5 7, qs
// unchanged in block order, and a block's fifth bits at the sliced places.
TEST(GroupedBlocks, EachByteLandsWhereTheLayoutSays) {
  BlockQ5_1 b[kGroupBlocks] = {};
  for (int k = 0; k < kGroupBlocks; ++k) {
    b[k].d = static_cast<uint16_t>(0x100 + k);
    b[k].m = static_cast<uint16_t>(0x200 + k);
    for (int i = 0; i < 16; ++i) b[k].qs[i] = static_cast<uint8_t>(16 * k + i);
  }
  struct Bit {
    int block, element, byte, bit;
  };
  // fifth[p] bit i: pair i's low-nibble elements (block 2i: p; block 2i + 1:
  // p - 16), bit 4 + i: its high-nibble ones (block 2i: 16 + p; 2i + 1: p)
  const Bit bits[] = {{0, 0, 0, 0}, {1, 0, 16, 0}, {0, 16, 0, 4}, {1, 31, 31, 4},
                      {3, 20, 20, 5}, {6, 15, 15, 3}, {7, 16, 16, 7}, {4, 9, 9, 2}};
  for (const Bit& at : bits) {
    BlockQ5_1 one[kGroupBlocks];
    std::memcpy(one, b, sizeof(b));
    one[at.block].qh[at.element / 8] = static_cast<uint8_t>(1u << (at.element % 8));
    GroupQ5_1 g;
    group_blocks(DType::kQ5_1, one, kGroupBlocks, &g);
    for (int p = 0; p < 32; ++p)
      EXPECT_EQ(g.fifth[p], p == at.byte ? (1u << at.bit) : 0u)
          << "block " << at.block << " element " << at.element << " byte " << p;
    const int lane_block[kGroupBlocks] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int lane = 0; lane < kGroupBlocks; ++lane) {
      EXPECT_EQ(g.d[lane], 0x100 + lane_block[lane]);
      EXPECT_EQ(g.m[lane], 0x200 + lane_block[lane]);
    }
    for (int k = 0; k < kGroupBlocks; ++k) EXPECT_EQ(0, std::memcmp(g.qs[k], b[k].qs, 16)) << k;
  }
}

// The reference dequantizes a grouped row as the plain one, value for value,
// for rows with and without plain blocks after the groups (576 columns: 2
// groups and 2 blocks, as SmolLM2's Q5_0 matrices).
TEST(GroupedBlocks, RowsDequantizeAsThePlainRows) {
  for (DType plain : {DType::kQ5_0, DType::kQ5_1})
    for (int64_t cols : {32, 256, 576, 896, 2048}) {
      const auto x = testing::random_floats(static_cast<size_t>(2 * cols), static_cast<uint32_t>(cols));
      const auto p = testing::pack_rows(plain, x, 2, cols);
      const auto g = testing::pack_rows(*grouped_type(plain), x, 2, cols);
      if (cols < 256)
        EXPECT_EQ(p, g) << "a row of fewer than 8 blocks stays plain";
      else
        EXPECT_NE(p, g) << "nothing was regrouped";
      for (int64_t r = 0; r < 2; ++r) {
        std::vector<float> a(static_cast<size_t>(cols)), b(static_cast<size_t>(cols));
        dequantize_row(WeightMatrix{plain, 2, cols, p.data()}, r, a.data());
        dequantize_row(WeightMatrix{*grouped_type(plain), 2, cols, g.data()}, r, b.data());
        EXPECT_EQ(a, b) << dtype_name(plain) << " cols=" << cols << " row " << r;
      }
    }
}

// Loads regroup where decode runs the AVX2 kernels: the AVX2 path, and the
// AVX-512 path when its decode is off (Zen 4's default).
TEST(GroupedBlocks, LoadsRegroupWhereDecodeRunsTheAvx2Kernels) {
  testing::PathGuard guard;
  for (KernelPath path : testing::all_paths()) {
    ASSERT_TRUE(set_kernel_path(path));
    set_avx512_decode(Avx512Decode::kOn);
    const bool x86 = path == KernelPath::kAvx2 || path == KernelPath::kAvxVnni;
    if (path == KernelPath::kAvx512) {
      EXPECT_EQ(load_layout(DType::kQ5_0), DType::kQ5_0);
      set_avx512_decode(Avx512Decode::kOff);
      EXPECT_EQ(load_layout(DType::kQ5_0), DType::kQ5_0x8);
      EXPECT_EQ(load_layout(DType::kQ5_1), DType::kQ5_1x8);
      set_avx512_decode(Avx512Decode::kAuto);
      EXPECT_EQ(load_layout(DType::kQ5_0) == DType::kQ5_0x8, !avx512_decode_in_use());
      continue;
    }
    EXPECT_EQ(load_layout(DType::kQ5_0), x86 ? DType::kQ5_0x8 : DType::kQ5_0) << kernel_path_name(path);
    EXPECT_EQ(load_layout(DType::kQ5_1), x86 ? DType::kQ5_1x8 : DType::kQ5_1) << kernel_path_name(path);
    for (DType other : {DType::kQ4_0, DType::kQ8_0, DType::kQ4_K, DType::kF16, DType::kQ5_K})
      EXPECT_EQ(load_layout(other), other) << kernel_path_name(path);
    set_regroup_at_load(false);
    EXPECT_EQ(load_layout(DType::kQ5_0), DType::kQ5_0);
    set_regroup_at_load(true);
  }
}

TEST(GroupedBlocks, AreMemoryOnly) {
  EXPECT_TRUE(dtype_is_memory_only(DType::kQ5_0x8));
  EXPECT_TRUE(dtype_is_memory_only(DType::kQ5_1x8));
  EXPECT_FALSE(dtype_is_memory_only(DType::kQ5_0));
  EXPECT_FALSE(dtype_from_name("q5_0x8").has_value());  // no --dtype or file names them
  EXPECT_EQ(dtype_name(DType::kQ5_0x8), "q5_0x8");
  EXPECT_TRUE(matmul_supports(DType::kQ5_0x8));
  EXPECT_FALSE(quantize_supports(DType::kQ5_1x8));  // export writes only file types
}

}  // namespace
}  // namespace llmpack::kernels
