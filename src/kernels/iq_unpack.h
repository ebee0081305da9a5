// Codebook rows (kernels/iq_blocks.h) unpacked to signed int8 weights, a
// small integer scale per 16 weights and a float factor per super-block,
// shared by the SIMD paths' codebook kernels (x86/matmul_iq_avx2.cc,
// x86/matmul_iq_avx512.cc, arm/iq_rows_neon.h; each supplies the few vector
// steps as a policy),
// which then multiply the int8 weights with int8 activations:
//   weight e = factor[e / 256] * iscale[e / 16] * q[e],  q in -62..62,
// iscale the type's odd 2s + 1 (1..31), factor d times the type's constant;
// an IQ1 weight d (2s + 1) (g +/- 1/8), g in {-1, 0, 1}, is q = 8 g +/- 1
// (-9..9) with the factor d / 8, so every type multiplies as int8 x int8 and
// the integer scales can join the integer sums.
// Unpacking costs more than the products (a codebook lookup and a sign mask
// per 8 weights), so a kernel unpacks a chunk of a row once and multiplies it
// with every token.
//
// The functions sit in an unnamed namespace: each ISA-flagged file compiles
// its own copy (see kernels/arm/neon_internal.h, half_to_float).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "core/dtype.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"

namespace llmpack::kernels {
namespace {  // NOLINT(build/namespaces): a copy per file

// Super-blocks a chunk (2048 weights): 8 rows' chunks and a pass's 4 tokens
// of activations come to about 30 KiB, near L1's size.
constexpr int64_t kIqChunkSuper = 8;

struct IqUnpacked {
  alignas(64) int8_t q[kIqChunkSuper * kQKK];
  alignas(64) int32_t iscale[kIqChunkSuper * kQKK / 16];  // x86's finish_chunk: s in both int16 halves
  float factor[kIqChunkSuper];
  // Per super-block, sum of iscale[e / 16] q[e]: what an activation offset of
  // 1 adds to its integer sum (x86's kernels multiply unsigned activations
  // a + 128 and take 128 times it back out). Written by Isa::finish_chunk
  // where a kernel reads it.
  int32_t scaled_qsum[kIqChunkSuper];
};

constexpr uint64_t kIqBytes01 = 0x0101010101010101ull;

// Bytes j = 0..7 of entry s: 0xFF where bit j of s is set (a negative weight).
constexpr std::array<uint64_t, 256> iq_make_sign_masks() {
  std::array<uint64_t, 256> m{};
  for (int s = 0; s < 256; ++s)
    for (int j = 0; j < 8; ++j)
      if ((s >> j) & 1) m[s] |= uint64_t{0xFF} << (8 * j);
  return m;
}
constexpr std::array<uint64_t, 256> kIqSignMask = iq_make_sign_masks();

inline uint64_t iq_bytes8(const IqGrid8& g) {
  uint64_t v;
  std::memcpy(&v, g.data(), 8);
  return v;
}
inline uint64_t iq_bytes8(const IqGrid4& lo, const IqGrid4& hi) {
  uint32_t a, b;
  std::memcpy(&a, lo.data(), 4);
  std::memcpy(&b, hi.data(), 4);
  return a | uint64_t{b} << 32;
}
inline uint64_t iq_bytes8(const IqSignedGrid8& g) {
  uint64_t v;
  std::memcpy(&v, g.data(), 8);
  return v;
}

// IQ1's offsets of a group of 8: +1 in every byte where the delta is +1/8,
// -1 where it is -1/8.
inline uint64_t iq1_delta8(bool minus) { return minus ? ~uint64_t{0} : kIqBytes01; }

// The unpackers below write 32 weights at a time through an ISA's policy
// `Isa`, which the kernel file supplies (the vector steps are its own):
//   float Isa::half(uint16_t)                      an f16 scale as float
//   void Isa::put_signed(int8_t* q, mag[4], neg[4])  q[8l + j] = byte j of
//       mag[l], negated where byte j of neg[l] is 0xFF (magnitudes are >= 1)
//   void Isa::put_iq1(int8_t* q, grid[4], delta[4])  q[8l + j] = 8 g + d for
//       the signed bytes g of grid[l] and d of delta[l]
//   void Isa::finish_chunk(IqUnpacked& u, n)       whatever else the ISA's
//       kernel reads of the n unpacked super-blocks (may do nothing)
// Each unpacks one super-block into q[256], iscale[16] and *factor.
template <class Isa>
void iq_unpack_iq2_xxs(const BlockIQ2_XXS& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d) * 0.125f;  // d (0.5 + s) / 4 = d / 8 (2s + 1)
  for (int g = 0; g < 8; ++g) {
    const auto* idx = reinterpret_cast<const uint8_t*>(b.qs + 4 * g);
    const uint32_t hi = iq_load_u32(idx + 4);
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = iq_bytes8(kIq2xxsGrid[idx[l]]);
      neg[l] = kIqSignMask[iq_signs_of_7(hi >> (7 * l))];
    }
    Isa::put_signed(q + 32 * g, mag, neg);
    iscale[2 * g] = iscale[2 * g + 1] = static_cast<int32_t>(2 * (hi >> 28) + 1);
  }
}

template <class Isa>
void iq_unpack_iq2_xs(const BlockIQ2_XS& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d) * 0.125f;
  for (int g = 0; g < 8; ++g) {
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      const uint16_t v = b.qs[4 * g + l];
      mag[l] = iq_bytes8(kIq2xsGrid[v & 511]);
      neg[l] = kIqSignMask[iq_signs_of_7(v >> 9)];
    }
    Isa::put_signed(q + 32 * g, mag, neg);
    iscale[2 * g] = 2 * (b.scales[g] & 15) + 1;
    iscale[2 * g + 1] = 2 * (b.scales[g] >> 4) + 1;
  }
}

template <class Isa>
void iq_unpack_iq2_s(const BlockIQ2_S& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d) * 0.125f;
  for (int g = 0; g < 8; ++g) {
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = iq_bytes8(kIq2sGrid[b.qs[4 * g + l] | (((b.qh[g] >> (2 * l)) & 3) << 8)]);
      neg[l] = kIqSignMask[b.qs[32 + 4 * g + l]];
    }
    Isa::put_signed(q + 32 * g, mag, neg);
    iscale[2 * g] = 2 * (b.scales[g] & 15) + 1;
    iscale[2 * g + 1] = 2 * (b.scales[g] >> 4) + 1;
  }
}

template <class Isa>
void iq_unpack_iq3_xxs(const BlockIQ3_XXS& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d) * 0.25f;  // d (0.5 + s) / 2 = d / 4 (2s + 1)
  for (int g = 0; g < 8; ++g) {
    const uint32_t hi = iq_load_u32(b.qs + 64 + 4 * g);
    const uint8_t* idx = b.qs + 8 * g;
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = iq_bytes8(kIq3xxsGrid[idx[2 * l]], kIq3xxsGrid[idx[2 * l + 1]]);
      neg[l] = kIqSignMask[iq_signs_of_7(hi >> (7 * l))];
    }
    Isa::put_signed(q + 32 * g, mag, neg);
    iscale[2 * g] = iscale[2 * g + 1] = static_cast<int32_t>(2 * (hi >> 28) + 1);
  }
}

template <class Isa>
void iq_unpack_iq3_s(const BlockIQ3_S& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d);  // d (1 + 2s)
  for (int g = 0; g < 8; ++g) {
    const auto index = [&](int quad) { return b.qs[8 * g + quad] | (((b.qh[g] >> quad) & 1) << 8); };
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = iq_bytes8(kIq3sGrid[index(2 * l)], kIq3sGrid[index(2 * l + 1)]);
      neg[l] = kIqSignMask[b.signs[4 * g + l]];
    }
    Isa::put_signed(q + 32 * g, mag, neg);
    iscale[2 * g] = iscale[2 * g + 1] = 1 + 2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 15);
  }
}

template <class Isa>
void iq_unpack_iq1_s(const BlockIQ1_S& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(b.d) * 0.125f;  // d (2s + 1) (g +/- 1/8) = d / 8 (2s + 1) (8 g +/- 1)
  for (int g = 0; g < 8; ++g) {
    const uint16_t qh = b.qh[g];
    const uint64_t delta = iq1_delta8(qh & 0x8000);
    uint64_t grid[4];
    const uint64_t deltas[4] = {delta, delta, delta, delta};
    for (int l = 0; l < 4; ++l) grid[l] = iq_bytes8(kIq1sGrid[b.qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)]);
    Isa::put_iq1(q + 32 * g, grid, deltas);
    iscale[2 * g] = iscale[2 * g + 1] = 2 * ((qh >> 12) & 7) + 1;
  }
}

template <class Isa>
void iq_unpack_iq1_m(const BlockIQ1_M& b, int8_t* q, int32_t* iscale, float* factor) {
  *factor = Isa::half(iq1m_d_bits(b)) * 0.125f;
  for (int g = 0; g < 8; ++g) {
    uint64_t grid[4], delta[4];
    for (int l = 0; l < 4; ++l) {
      const int k = 4 * g + l;
      const int nibble = (b.qh[k / 2] >> (4 * (k % 2))) & 15;
      grid[l] = iq_bytes8(kIq1sGrid[b.qs[k] | ((nibble & 7) << 8)]);
      delta[l] = iq1_delta8(nibble & 8);
    }
    Isa::put_iq1(q + 32 * g, grid, delta);
  }
  for (int h = 0; h < 16; ++h) iscale[h] = 2 * iq1m_scale(b, h) + 1;
}

template <class Block, void (*kUnpack)(const Block&, int8_t*, int32_t*, float*)>
inline void iq_unpack_blocks(const uint8_t* first, int64_t n, IqUnpacked& u) {
  const auto* blocks = reinterpret_cast<const Block*>(first);
  for (int64_t i = 0; i < n; ++i) kUnpack(blocks[i], u.q + kQKK * i, u.iscale + 16 * i, u.factor + i);
}

// Unpacks super-blocks [sb0, sb0 + n) (n <= kIqChunkSuper) of a row of
// `dtype` (blocks of block_bytes) into u.
template <class Isa>
void iq_unpack(DType dtype, int64_t block_bytes, const uint8_t* row, int64_t sb0, int64_t n, IqUnpacked& u) {
  const uint8_t* first = row + sb0 * block_bytes;
  switch (dtype) {
    case DType::kIQ2_XXS: iq_unpack_blocks<BlockIQ2_XXS, iq_unpack_iq2_xxs<Isa>>(first, n, u); break;
    case DType::kIQ2_XS: iq_unpack_blocks<BlockIQ2_XS, iq_unpack_iq2_xs<Isa>>(first, n, u); break;
    case DType::kIQ2_S: iq_unpack_blocks<BlockIQ2_S, iq_unpack_iq2_s<Isa>>(first, n, u); break;
    case DType::kIQ3_XXS: iq_unpack_blocks<BlockIQ3_XXS, iq_unpack_iq3_xxs<Isa>>(first, n, u); break;
    case DType::kIQ3_S: iq_unpack_blocks<BlockIQ3_S, iq_unpack_iq3_s<Isa>>(first, n, u); break;
    case DType::kIQ1_S: iq_unpack_blocks<BlockIQ1_S, iq_unpack_iq1_s<Isa>>(first, n, u); break;
    case DType::kIQ1_M: iq_unpack_blocks<BlockIQ1_M, iq_unpack_iq1_m<Isa>>(first, n, u); break;
    default: return;
  }
  Isa::finish_chunk(u, n);
}

constexpr int kIqTokenPass = 4;     // tokens a pass shares each unpacked weight load with
constexpr int64_t kIqRowGroup = 8;  // rows whose sums reach y together

// Rows [row_begin, row_end) of y [n_tokens, w.rows] = w x for a codebook w,
// kIqRowGroup rows at a time: each chunk of up to kIqChunkSuper super-blocks
// of the group's rows is unpacked once (through the ISA policy Isa, see
// iq_unpack_iq2_xxs), then for each pass of kIqTokenPass tokens every row of
// the group takes its sums, dotp(u, n_blocks, b0, t, sums) / dot1(...) for
// tokens t..t+3 / t over the chunk's n_blocks blocks of 32 (activation blocks
// b0..). So a pass's activations serve the group's rows while in cache (a row
// at a time, each row streamed all tokens' activations: a 1B model's 512
// tokens of 2048 columns are 1.5 MiB), and each token's sums reach y as one
// run (a row at a time, y's column of n_tokens floats is as many cache lines).
template <class Isa, class DotPass, class Dot1>
void iq_rows_by_chunks(const WeightMatrix& w, int64_t n_tokens, float* y, int64_t row_begin, int64_t row_end,
                       DotPass dotp, Dot1 dot1) {
  const int64_t n_super = w.cols / kQKK;
  const auto info = *dtype_info(w.dtype);
  const int64_t stride = row_bytes(info, w.cols);
  std::vector<float> acc(static_cast<size_t>(n_tokens * kIqRowGroup));  // [token][row of the group]
  // A chunk of each row of the group; default-initialized (not zero-filled: every byte is written before use).
  const std::unique_ptr<IqUnpacked[]> u(new IqUnpacked[kIqRowGroup]);
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kIqRowGroup) {
    const int64_t n_rows = std::min(kIqRowGroup, row_end - r0);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t sb0 = 0; sb0 < n_super; sb0 += kIqChunkSuper) {
      const int64_t n = std::min(kIqChunkSuper, n_super - sb0);
      for (int64_t i = 0; i < n_rows; ++i)
        iq_unpack<Isa>(w.dtype, info.block_bytes, static_cast<const uint8_t*>(w.data) + (r0 + i) * stride, sb0, n,
                       u[i]);
      float sums[kIqTokenPass];
      int64_t t = 0;
      for (; t + kIqTokenPass <= n_tokens; t += kIqTokenPass)
        for (int64_t i = 0; i < n_rows; ++i) {
          dotp(u[i], 8 * n, 8 * sb0, t, sums);
          for (int k = 0; k < kIqTokenPass; ++k) acc[(t + k) * kIqRowGroup + i] += sums[k];
        }
      for (; t < n_tokens; ++t)
        for (int64_t i = 0; i < n_rows; ++i) {
          dot1(u[i], 8 * n, 8 * sb0, t, sums);
          acc[t * kIqRowGroup + i] += sums[0];
        }
    }
    for (int64_t t = 0; t < n_tokens; ++t) std::copy_n(acc.begin() + t * kIqRowGroup, n_rows, y + t * w.rows + r0);
  }
}

}  // namespace
}  // namespace llmpack::kernels
