// AVX2 matmul of the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M; layouts in kernels/iq_blocks.h) against int8 activations.
//
// A codebook row costs more to unpack than to multiply (a table lookup and a
// sign per 8 weights), so each thread unpacks a chunk of a row once into
// signed int8 weights with one float scale per 16, and then multiplies that
// chunk with every token, 4 tokens a pass sharing each weight load:
//   weight e = scale[e / 16] * q[e],  q in -62..62,
// and an IQ1 weight d (2s + 1) (g +/- 1/8) becomes q = 8 g +/- 1 (-9..9) with
// the scale divided by 8, so every type multiplies as int8 x int8.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx2 {
namespace {

// Bytes j = 0..7 of entry s: 0xFF where bit j of s is set (a negative weight).
constexpr std::array<uint64_t, 256> make_sign_masks() {
  std::array<uint64_t, 256> m{};
  for (int s = 0; s < 256; ++s)
    for (int j = 0; j < 8; ++j)
      if ((s >> j) & 1) m[s] |= uint64_t{0xFF} << (8 * j);
  return m;
}
constexpr std::array<uint64_t, 256> kSignMask = make_sign_masks();

// The masks of 7 stored sign bits (the eighth implied: iq_signs_of_7).
uint64_t sign_mask_of_7(uint32_t bits) { return kSignMask[iq_signs_of_7(bits)]; }

uint64_t bytes8(const IqGrid8& g) {
  uint64_t v;
  std::memcpy(&v, g.data(), 8);
  return v;
}
uint64_t bytes8(const IqGrid4& lo, const IqGrid4& hi) {
  uint32_t a, b;
  std::memcpy(&a, lo.data(), 4);
  std::memcpy(&b, hi.data(), 4);
  return a | uint64_t{b} << 32;
}

// Weights of an unpacked chunk: q[32 per block], and per block of 32 its two
// scales spread over the int32 lanes the block's dot lands in (lanes 0..3 sum
// weights 0..15, lanes 4..7 weights 16..31).
constexpr int64_t kChunkSuper = 16;  // super-blocks per chunk (4096 weights)
struct Unpacked {
  alignas(32) int8_t q[kChunkSuper * kQKK];
  alignas(32) float scale[kChunkSuper * 8][8];
};

inline __m256i four_u64(const uint64_t (&v)[4]) {
  return _mm256_setr_epi64x(static_cast<long long>(v[0]), static_cast<long long>(v[1]), static_cast<long long>(v[2]),
                            static_cast<long long>(v[3]));
}

inline void put_scales(Unpacked& u, int64_t block, float s0, float s1) {
  _mm256_store_ps(u.scale[block], _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0)));
}

// Stores 32 weights of magnitudes mag (4 x 8 bytes, weight order) and sign
// masks neg, and the block's scales (s0 for weights 0..15, s1 for 16..31).
void put_block(Unpacked& u, int64_t block, const uint64_t (&mag)[4], const uint64_t (&neg)[4], float s0, float s1) {
  const __m256i m = four_u64(mag), n = four_u64(neg);
  _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 32 * block), _mm256_sub_epi8(_mm256_xor_si256(m, n), n));
  put_scales(u, block, s0, s1);
}

float iq2_scale(float d, int s) { return d * (0.5f + static_cast<float>(s)) * 0.25f; }

void unpack_iq2_xxs(const BlockIQ2_XXS& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    const auto* idx = reinterpret_cast<const uint8_t*>(b.qs + 4 * g);
    const uint32_t hi = iq_load_u32(idx + 4);
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = bytes8(kIq2xxsGrid[idx[l]]);
      neg[l] = sign_mask_of_7(hi >> (7 * l));
    }
    const float s = iq2_scale(d, static_cast<int>(hi >> 28));
    put_block(u, first + g, mag, neg, s, s);
  }
}

void unpack_iq2_xs(const BlockIQ2_XS& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      const uint16_t q = b.qs[4 * g + l];
      mag[l] = bytes8(kIq2xsGrid[q & 511]);
      neg[l] = sign_mask_of_7(q >> 9);
    }
    put_block(u, first + g, mag, neg, iq2_scale(d, b.scales[g] & 15), iq2_scale(d, b.scales[g] >> 4));
  }
}

void unpack_iq2_s(const BlockIQ2_S& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = bytes8(kIq2sGrid[b.qs[4 * g + l] | (((b.qh[g] >> (2 * l)) & 3) << 8)]);
      neg[l] = kSignMask[b.qs[32 + 4 * g + l]];
    }
    put_block(u, first + g, mag, neg, iq2_scale(d, b.scales[g] & 15), iq2_scale(d, b.scales[g] >> 4));
  }
}

void unpack_iq3_xxs(const BlockIQ3_XXS& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    const uint32_t hi = iq_load_u32(b.qs + 64 + 4 * g);
    const uint8_t* idx = b.qs + 8 * g;
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = bytes8(kIq3xxsGrid[idx[2 * l]], kIq3xxsGrid[idx[2 * l + 1]]);
      neg[l] = sign_mask_of_7(hi >> (7 * l));
    }
    const float s = d * (0.5f + static_cast<float>(hi >> 28)) * 0.5f;
    put_block(u, first + g, mag, neg, s, s);
  }
}

void unpack_iq3_s(const BlockIQ3_S& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    const auto index = [&](int quad) { return b.qs[8 * g + quad] | (((b.qh[g] >> quad) & 1) << 8); };
    uint64_t mag[4], neg[4];
    for (int l = 0; l < 4; ++l) {
      mag[l] = bytes8(kIq3sGrid[index(2 * l)], kIq3sGrid[index(2 * l + 1)]);
      neg[l] = kSignMask[b.signs[4 * g + l]];
    }
    const float s = d * static_cast<float>(1 + 2 * ((b.scales[g / 2] >> (4 * (g % 2))) & 15));
    put_block(u, first + g, mag, neg, s, s);
  }
}

// IQ1: 8 g + 1 where the delta is +1/8, 8 g - 1 where it is -1/8, for the
// grid values g (-1, 0, 1) of 4 groups of 8; minus[l]: group l's delta is -1/8.
// 8 g per byte: a 16-bit shift by 3, less the bits it carried into the next byte.
void put_iq1_block(Unpacked& u, int64_t block, const int (&index)[4], const bool (&minus)[4], float s0, float s1) {
  uint64_t grid[4], delta[4];
  for (int l = 0; l < 4; ++l) {
    std::memcpy(&grid[l], kIq1sGrid[index[l]].data(), 8);
    delta[l] = minus[l] ? ~uint64_t{0} : 0x0101010101010101ull;  // -1 or +1 in every byte
  }
  const __m256i g8 = _mm256_and_si256(_mm256_slli_epi16(four_u64(grid), 3), _mm256_set1_epi8(static_cast<char>(0xF8)));
  _mm256_store_si256(reinterpret_cast<__m256i*>(u.q + 32 * block), _mm256_add_epi8(g8, four_u64(delta)));
  put_scales(u, block, s0, s1);
}

void unpack_iq1_s(const BlockIQ1_S& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(b.d);
  for (int g = 0; g < 8; ++g) {
    const uint16_t qh = b.qh[g];
    int index[4];
    const bool m = qh & 0x8000;
    const bool minus[4] = {m, m, m, m};
    for (int l = 0; l < 4; ++l) index[l] = b.qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8);
    const float s = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1) * 0.125f;
    put_iq1_block(u, first + g, index, minus, s, s);
  }
}

void unpack_iq1_m(const BlockIQ1_M& b, Unpacked& u, int64_t first) {
  const float d = f16_to_f32(iq1m_d_bits(b));
  for (int g = 0; g < 8; ++g) {
    int index[4];
    bool minus[4];
    for (int l = 0; l < 4; ++l) {
      const int k = 4 * g + l;
      const int nibble = (b.qh[k / 2] >> (4 * (k % 2))) & 15;
      index[l] = b.qs[k] | ((nibble & 7) << 8);
      minus[l] = nibble & 8;
    }
    const auto scale = [&](int h) { return d * static_cast<float>(2 * iq1m_scale(b, h) + 1) * 0.125f; };
    put_iq1_block(u, first + g, index, minus, scale(2 * g), scale(2 * g + 1));
  }
}

// Unpacks super-blocks [sb0, sb0 + n) of a row (blocks of block_bytes) into u.
void unpack(DType dtype, int64_t block_bytes, const uint8_t* row, int64_t sb0, int64_t n, Unpacked& u) {
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = row + (sb0 + i) * block_bytes;
    switch (dtype) {
      case DType::kIQ2_XXS: unpack_iq2_xxs(*reinterpret_cast<const BlockIQ2_XXS*>(p), u, 8 * i); break;
      case DType::kIQ2_XS: unpack_iq2_xs(*reinterpret_cast<const BlockIQ2_XS*>(p), u, 8 * i); break;
      case DType::kIQ2_S: unpack_iq2_s(*reinterpret_cast<const BlockIQ2_S*>(p), u, 8 * i); break;
      case DType::kIQ3_XXS: unpack_iq3_xxs(*reinterpret_cast<const BlockIQ3_XXS*>(p), u, 8 * i); break;
      case DType::kIQ3_S: unpack_iq3_s(*reinterpret_cast<const BlockIQ3_S*>(p), u, 8 * i); break;
      case DType::kIQ1_S: unpack_iq1_s(*reinterpret_cast<const BlockIQ1_S*>(p), u, 8 * i); break;
      case DType::kIQ1_M: unpack_iq1_m(*reinterpret_cast<const BlockIQ1_M*>(p), u, 8 * i); break;
      default: break;
    }
  }
}

// The int32 sums of one block: lanes 0..3 over weights 0..15, 4..7 over 16..31.
inline __m256i block_dot(__m256i abs_w, __m256i w, const int8_t* a) {
  const __m256i signed_a = _mm256_sign_epi8(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)), w);
  return _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_a), _mm256_set1_epi16(1));
}

// Sum over the chunk's n_blocks blocks (starting at activation block b0) for
// kTokens tokens t0.. at once; acts of token t are act[t * n_sub ..].
template <int kTokens>
void dot_chunk(const Unpacked& u, int64_t n_blocks, const ActBlock* act, int64_t n_sub, int64_t b0, int64_t t0,
               float* sums) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(u.q + 32 * b));
    const __m256i abs_w = _mm256_abs_epi8(w);
    const __m256 scale = _mm256_load_ps(u.scale[b]);
    for (int t = 0; t < kTokens; ++t) {
      const ActBlock& a = act[(t0 + t) * n_sub + b0 + b];
      const __m256 dots = _mm256_cvtepi32_ps(block_dot(abs_w, w, a.q));
      acc[t] = _mm256_fmadd_ps(dots, _mm256_mul_ps(scale, _mm256_set1_ps(a.d)), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) sums[t] = hsum(acc[t]);
}

// Tokens a pass shares each weight load with (their sums stay in registers).
constexpr int kTokenPass = 4;

}  // namespace

bool iq_supports(DType dtype) {
  switch (dtype) {
    case DType::kIQ2_XXS:
    case DType::kIQ2_XS:
    case DType::kIQ2_S:
    case DType::kIQ3_XXS:
    case DType::kIQ3_S:
    case DType::kIQ1_S:
    case DType::kIQ1_M:
      return true;
    default:
      return false;
  }
}

// Rows go 8 at a time so that each token's 8 sums reach y as one 32-byte run
// (a row at a time, y's column of n_tokens floats is as many cache lines).
void matmul_rows_iq(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end) {
  constexpr int64_t kRowGroup = 8;
  const int64_t n_super = w.cols / kQKK, n_sub = w.cols / 32;
  const auto info = *dtype_info(w.dtype);
  const int64_t stride = row_bytes(info, w.cols);
  std::vector<float> acc(static_cast<size_t>(n_tokens * kRowGroup));  // [token][row of the group]
  Unpacked u;
  for (int64_t r0 = row_begin; r0 < row_end; r0 += kRowGroup) {
    const int64_t n_rows = std::min(kRowGroup, row_end - r0);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int64_t i = 0; i < n_rows; ++i) {
      const auto* row = static_cast<const uint8_t*>(w.data) + (r0 + i) * stride;
      for (int64_t sb0 = 0; sb0 < n_super; sb0 += kChunkSuper) {
        const int64_t n = std::min(kChunkSuper, n_super - sb0);
        unpack(w.dtype, info.block_bytes, row, sb0, n, u);
        float sums[kTokenPass];
        int64_t t = 0;
        for (; t + kTokenPass <= n_tokens; t += kTokenPass) {
          dot_chunk<kTokenPass>(u, 8 * n, act, n_sub, 8 * sb0, t, sums);
          for (int k = 0; k < kTokenPass; ++k) acc[(t + k) * kRowGroup + i] += sums[k];
        }
        for (; t < n_tokens; ++t) {
          dot_chunk<1>(u, 8 * n, act, n_sub, 8 * sb0, t, sums);
          acc[t * kRowGroup + i] += sums[0];
        }
      }
    }
    for (int64_t t = 0; t < n_tokens; ++t)
      std::copy_n(acc.begin() + t * kRowGroup, n_rows, y + t * w.rows + r0);
  }
}

}  // namespace llmpack::kernels::avx2
