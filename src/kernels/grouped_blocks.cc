#include "kernels/grouped_blocks.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <type_traits>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace llmpack::kernels {
namespace {

template <class Block>
using GroupOf = std::conditional_t<std::is_same_v<Block, BlockQ5_0>, GroupQ5_0, GroupQ5_1>;

// kSpread[x]: byte j is bit j of x (0 or 1), as a little-endian uint64.
constexpr std::array<uint64_t, 256> spread_bits() {
  std::array<uint64_t, 256> t{};
  for (int x = 0; x < 256; ++x)
    for (int j = 0; j < 8; ++j) t[x] |= static_cast<uint64_t>((x >> j) & 1) << (8 * j);
  return t;
}
constexpr std::array<uint64_t, 256> kSpread = spread_bits();

template <class Block>
void group_one(const Block* b, GroupOf<Block>* g) {
  for (int lane = 0; lane < kGroupBlocks; ++lane) {
    const Block& src = b[kGroupLane[lane]];
    g->d[lane] = src.d;
    if constexpr (kBlockHasMin<Block>) g->m[lane] = src.m;
  }
  for (int k = 0; k < kGroupBlocks; ++k) std::memcpy(g->qs[k], b[k].qs, sizeof(b[k].qs));
  // Pair i's two vectors of fifth bits, bit p for byte p: the low nibbles
  // hold elements 0..15 of block 2i, then 0..15 of block 2i + 1; the high
  // ones 16..31 of each. Byte p of fifth[] takes them as bits i and 4 + i.
  uint64_t fifth[4] = {};
  for (int i = 0; i < 4; ++i) {
    uint32_t a = 0, c = 0;
    std::memcpy(&a, b[2 * i].qh, 4);
    std::memcpy(&c, b[2 * i + 1].qh, 4);
    const uint32_t low = (a & 0xFFFFu) | c << 16, high = a >> 16 | (c & 0xFFFF0000u);
    for (int w = 0; w < 4; ++w)
      fifth[w] |= kSpread[(low >> (8 * w)) & 0xFF] << i | kSpread[(high >> (8 * w)) & 0xFF] << (4 + i);
  }
  std::memcpy(g->fifth, fifth, sizeof(fifth));  // little-endian, as qh
}

// Bits `bit` and 4 + bit of 16 bytes as two 16-bit masks (byte p -> bit p):
// block 2i + s's fifth bits of elements 0..15 and 16..31 are bits i and
// 4 + i of fifth[16 s .. 16 s + 15] (grouped_blocks.h). The prefill kernels
// ungroup every panel they pack, so x86 takes them with two movemasks.
void fifth_bit_masks(const uint8_t* bytes, int bit, uint32_t* low, uint32_t* high) {
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes));
  // a 16-bit shift left by 7 - b takes bit b of both bytes to their bit 7
  *low = static_cast<uint32_t>(_mm_movemask_epi8(_mm_sll_epi16(v, _mm_cvtsi32_si128(7 - bit))));
  *high = static_cast<uint32_t>(_mm_movemask_epi8(_mm_sll_epi16(v, _mm_cvtsi32_si128(3 - bit))));
#else
  *low = *high = 0;
  for (int p = 0; p < 16; ++p) {
    *low |= static_cast<uint32_t>((bytes[p] >> bit) & 1) << p;
    *high |= static_cast<uint32_t>((bytes[p] >> (4 + bit)) & 1) << p;
  }
#endif
}

template <class Block>
void ungroup_one(const GroupOf<Block>& g, int k, Block* out) {
  constexpr int kLaneOf[kGroupBlocks] = {0, 4, 1, 5, 2, 6, 3, 7};  // inverse of kGroupLane
  out->d = g.d[kLaneOf[k]];
  if constexpr (kBlockHasMin<Block>) out->m = g.m[kLaneOf[k]];
  std::memcpy(out->qs, g.qs[k], sizeof(out->qs));
  uint32_t low = 0, high = 0;
  fifth_bit_masks(g.fifth + 16 * (k % 2), k / 2, &low, &high);
  const uint32_t qh = low | high << 16;
  std::memcpy(out->qh, &qh, sizeof(qh));  // little-endian, as GGUF stores it
}

// All 8 blocks of a group (the prefill packers ungroup whole chunks of a row).
template <class Block>
void ungroup_all(const GroupOf<Block>& g, Block* out) {
  for (int k = 0; k < kGroupBlocks; ++k) ungroup_one(g, k, out + k);
}

template <class Block>
void group_run(const Block* src, int64_t n_blocks, Block* dst) {
  const int64_t n_grouped = n_blocks / kGroupBlocks * kGroupBlocks;
  auto* groups = reinterpret_cast<GroupOf<Block>*>(dst);
  for (int64_t b = 0; b < n_grouped; b += kGroupBlocks) group_one(src + b, groups + b / kGroupBlocks);
  std::memcpy(dst + n_grouped, src + n_grouped, static_cast<size_t>(n_blocks - n_grouped) * sizeof(Block));
}

template <class Block>
void ungroup_run(const Block* src, int64_t n_blocks, int64_t b0, int64_t nb, Block* dst) {
  const int64_t n_grouped = n_blocks / kGroupBlocks * kGroupBlocks;
  const auto* groups = reinterpret_cast<const GroupOf<Block>*>(src);
  for (int64_t b = b0; b < b0 + nb; ++b) {
    if (b % kGroupBlocks == 0 && b + kGroupBlocks <= std::min(b0 + nb, n_grouped)) {
      ungroup_all(groups[b / kGroupBlocks], dst + (b - b0));
      b += kGroupBlocks - 1;
    } else if (b < n_grouped)
      ungroup_one(groups[b / kGroupBlocks], static_cast<int>(b % kGroupBlocks), dst + (b - b0));
    else
      std::memcpy(dst + (b - b0), src + b, sizeof(Block));
  }
}

}  // namespace

std::optional<DType> grouped_type(DType plain) {
  if (plain == DType::kQ5_0) return DType::kQ5_0x8;
  if (plain == DType::kQ5_1) return DType::kQ5_1x8;
  return std::nullopt;
}

DType plain_type(DType t) {
  if (t == DType::kQ5_0x8) return DType::kQ5_0;
  if (t == DType::kQ5_1x8) return DType::kQ5_1;
  return t;
}

void group_blocks(DType plain, const void* src, int64_t n_blocks, void* dst) {
  if (plain == DType::kQ5_0)
    group_run(static_cast<const BlockQ5_0*>(src), n_blocks, static_cast<BlockQ5_0*>(dst));
  else if (plain == DType::kQ5_1)
    group_run(static_cast<const BlockQ5_1*>(src), n_blocks, static_cast<BlockQ5_1*>(dst));
}

void ungroup_blocks(DType grouped, const void* src, int64_t n_blocks, int64_t b0, int64_t nb, void* dst) {
  if (grouped == DType::kQ5_0x8)
    ungroup_run(static_cast<const BlockQ5_0*>(src), n_blocks, b0, nb, static_cast<BlockQ5_0*>(dst));
  else if (grouped == DType::kQ5_1x8)
    ungroup_run(static_cast<const BlockQ5_1*>(src), n_blocks, b0, nb, static_cast<BlockQ5_1*>(dst));
}

void ungroup_row(DType grouped, const void* row, int64_t cols, void* dst) {
  const int64_t n_blocks = cols / kQK;
  ungroup_blocks(grouped, row, n_blocks, 0, n_blocks, dst);
}

}  // namespace llmpack::kernels
