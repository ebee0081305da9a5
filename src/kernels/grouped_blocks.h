// Q5_0 and Q5_1 rows regrouped at load (DType::kQ5_0x8, kQ5_1x8; never in a
// file) so that the AVX2 decode reads a Q5 block with about two thirds of the
// instructions (docs/PERFORMANCE.md section 31).
//
// A row keeps its size (22 or 24 bytes a block). Its first n_blocks / 8 * 8
// blocks are regrouped 8 at a time; the n_blocks % 8 blocks after them stay
// plain. A group (blocks 0..7 of it; pair i = blocks 2i and 2i + 1):
//   d[8] (f16), then for Q5_1 m[8] (f16), in lane order kGroupLane: blocks
//        0 2 4 6 1 3 5 7, the order in which the decode's integer sums land;
//   fifth[32]: the fifth bits, sliced: bit i (i = 0..3) of fifth[p] is the
//        fifth bit of element p of block 2i for p < 16, of element p - 16 of
//        block 2i + 1 after; bit 4 + i the same for elements 16 + p of block
//        2i and p of block 2i + 1. (Pair i's 32 bytes of qs, loaded as one
//        vector, hold those elements in their low nibbles at byte p, and in
//        their high nibbles the 4 + i ones: one shift and mask per vector.)
//   qs[8][16]: each block's qs, unchanged, in block order.
// Any run of a row that starts at its first element and covers n elements
// has n / 256 groups and then (n % 256) / 32 plain blocks, so the reference
// can dequantize a row 256 elements at a time.
#pragma once

#include <cstdint>
#include <optional>

#include "core/dtype.h"
#include "kernels/quant_blocks.h"

namespace llmpack::kernels {

constexpr int kGroupBlocks = 8;
constexpr int kGroupLane[kGroupBlocks] = {0, 2, 4, 6, 1, 3, 5, 7};

struct GroupQ5_0 {
  uint16_t d[kGroupBlocks];
  uint8_t fifth[32];
  uint8_t qs[kGroupBlocks][kQK / 2];
};
static_assert(sizeof(GroupQ5_0) == kGroupBlocks * sizeof(BlockQ5_0));

struct GroupQ5_1 {
  uint16_t d[kGroupBlocks];
  uint16_t m[kGroupBlocks];
  uint8_t fifth[32];
  uint8_t qs[kGroupBlocks][kQK / 2];
};
static_assert(sizeof(GroupQ5_1) == kGroupBlocks * sizeof(BlockQ5_1));

// kQ5_0 -> kQ5_0x8, kQ5_1 -> kQ5_1x8; nullopt for types that are not regrouped.
std::optional<DType> grouped_type(DType plain);
// kQ5_0x8 -> kQ5_0, kQ5_1x8 -> kQ5_1; other types unchanged.
DType plain_type(DType t);

// Regroups a row's run of n_blocks plain blocks of `plain` (Q5_0 or Q5_1)
// starting at its first block; src and dst must not overlap.
void group_blocks(DType plain, const void* src, int64_t n_blocks, void* dst);
// Blocks [b0, b0 + nb) of a grouped run of n_blocks (starting at a row's
// first block), written as nb plain blocks.
void ungroup_blocks(DType grouped, const void* src, int64_t n_blocks, int64_t b0, int64_t nb, void* dst);

// One whole row of `cols` elements of a grouped type, back in the plain
// layout (the file's bytes: what `bench --save` writes and fingerprints hash).
void ungroup_row(DType grouped, const void* row, int64_t cols, void* dst);

}  // namespace llmpack::kernels
