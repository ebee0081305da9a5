// The grouped Q5 layouts (kernels/grouped_blocks.h) in the AVX2 and AVX-512
// prefill packers: a panel's blocks are ungrouped on the stack, then packed
// by the plain type's packer.
//
// Include only from ISA-flagged files (*_avx2.cc, *_avx512.cc): as in
// q4k_scales.h, everything sits in an unnamed namespace so that each file
// compiles its own copy with its own flags.
#pragma once

#include <cstdint>

#include "core/dtype.h"
#include "kernels/grouped_blocks.h"

namespace llmpack::kernels::x86 {
namespace {  // NOLINT(build/namespaces): a copy per ISA, see above

// The packer of a grouped type: PlainPack's, marked with the grouped type.
template <class PlainPack, DType kGrouped>
struct GroupedPack : PlainPack {
  using Plain = PlainPack;
  static constexpr DType kGroupedType = kGrouped;
};

// Rows [r0, r0 + n_rows) (at most kRows, `stride` bytes apart) of a grouped
// matrix, blocks [blk0, blk0 + n_blk) (at most kMaxBlocks), as plain blocks
// on the stack; then pack_plain(plain rows, their stride in bytes).
template <int kRows, int kMaxBlocks, class P, class PackPlain>
void pack_ungrouped(const uint8_t* base, int64_t stride, int64_t r0, int n_rows, int64_t blk0, int64_t n_blk,
                    PackPlain pack_plain) {
  alignas(64) uint8_t plain[kRows][kMaxBlocks * P::kBytes];
  for (int r = 0; r < n_rows; ++r)
    ungroup_blocks(P::kGroupedType, base + (r0 + r) * stride, stride / P::kBytes, blk0, n_blk, plain[r]);
  pack_plain(plain[0], static_cast<int64_t>(sizeof(plain[0])));
}

}  // namespace
}  // namespace llmpack::kernels::x86
