// Scalar dequantizers of the GGUF block types (the layouts in quant_blocks.h).
#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/half.h"
#include "kernels/grouped_blocks.h"
#include "kernels/quant_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {
namespace {

void dequant_q8_0(const BlockQ8_0* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) out[j] = b[i].qs[j] * d;
  }
}

void dequant_q4_0(const BlockQ4_0* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = ((b[i].qs[j] & 0x0F) - 8) * d;
      out[j + kQK / 2] = ((b[i].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequant_q4_1(const BlockQ4_1* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = (b[i].qs[j] & 0x0F) * d + m;
      out[j + kQK / 2] = (b[i].qs[j] >> 4) * d + m;
    }
  }
}

void dequant_q5_0(const BlockQ5_0* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) out[j] = (q5_quant(b[i].qs, b[i].qh, j) - 16) * d;
  }
}

void dequant_q5_1(const BlockQ5_1* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d), m = f16_to_f32(b[i].m);
    for (int j = 0; j < kQK; ++j) out[j] = q5_quant(b[i].qs, b[i].qh, j) * d + m;
  }
}

// The fifth bit of Q5_K's quant l in sub-block j (Q4_K has none).
int high_bit(const BlockQ4_K&, int, int) { return 0; }
int high_bit(const BlockQ5_K& b, int l, int j) { return ((b.qh[l] >> j) & 1) << 4; }

// Q4_K and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins; sub-blocks
// 2c and 2c + 1 share the bytes qs[32c..32c+31] (low and high nibbles).
template <class Block>
void dequant_k45(const Block* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    const float dmin = f16_to_f32(b[i].dmin);
    for (int c = 0; c < 4; ++c, out += 64) {
      uint8_t sc0, m0, sc1, m1;
      unpack_q4k_scale(b[i].scales, 2 * c, &sc0, &m0);
      unpack_q4k_scale(b[i].scales, 2 * c + 1, &sc1, &m1);
      const uint8_t* q = b[i].qs + 32 * c;
      for (int l = 0; l < 32; ++l) {
        const int lo = (q[l] & 0x0F) | high_bit(b[i], l, 2 * c);
        const int hi = (q[l] >> 4) | high_bit(b[i], l, 2 * c + 1);
        out[l] = d * sc0 * lo - dmin * m0;
        out[l + 32] = d * sc1 * hi - dmin * m1;
      }
    }
  }
}

void dequant_q6_k(const BlockQ6_K* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int h = 0; h < 2; ++h, out += 128) {
      const uint8_t* ql = b[i].ql + 64 * h;
      const uint8_t* qh = b[i].qh + 32 * h;
      const int8_t* sc = b[i].scales + 8 * h;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q0 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q1 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        out[l] = d * sc[s] * q0;
        out[l + 32] = d * sc[s + 2] * q1;
        out[l + 64] = d * sc[s + 4] * q2;
        out[l + 96] = d * sc[s + 6] * q3;
      }
    }
  }
}

// Q2_K and Q3_K: element 128n + 32k + l's low 2 bits are bits 2k, 2k + 1 of
// qs[32n + l]; its sub-block of 16 is 8n + 2k + l / 16.
int low_bits(const uint8_t* qs, int n, int k, int l) { return (qs[32 * n + l] >> (2 * k)) & 3; }

void dequant_q2_k(const BlockQ2_K* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d), dmin = f16_to_f32(b[i].dmin);
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k, out += 32)
        for (int l = 0; l < 32; ++l) {
          const uint8_t sc = b[i].scales[8 * n + 2 * k + l / 16];
          out[l] = d * (sc & 0x0F) * low_bits(b[i].qs, n, k, l) - dmin * (sc >> 4);
        }
  }
}

void dequant_q3_k(const BlockQ3_K* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int n = 0; n < 2; ++n)
      for (int k = 0; k < 4; ++k, out += 32)
        for (int l = 0; l < 32; ++l) {
          const int scale = q3k_scale(b[i].scales, 8 * n + 2 * k + l / 16) - 32;
          const int third = (b[i].hmask[l] >> (4 * n + k)) & 1;
          out[l] = d * scale * (low_bits(b[i].qs, n, k, l) + 4 * third - 4);
        }
  }
}

void dequant_iq4_nl(const BlockIQ4_NL* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i, out += kQK) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < kQK / 2; ++j) {
      out[j] = d * kIQ4Values[b[i].qs[j] & 0x0F];
      out[j + kQK / 2] = d * kIQ4Values[b[i].qs[j] >> 4];
    }
  }
}

void dequant_iq4_xs(const BlockIQ4_XS* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int j = 0; j < 8; ++j, out += kQK) {
      const float dj = d * (iq4xs_scale(b[i], j) - 32);
      const uint8_t* qs = b[i].qs + 16 * j;
      for (int l = 0; l < kQK / 2; ++l) {
        out[l] = dj * kIQ4Values[qs[l] & 0x0F];
        out[l + kQK / 2] = dj * kIQ4Values[qs[l] >> 4];
      }
    }
  }
}

// A grouped Q5 run (kernels/grouped_blocks.h) of n elements from a row's
// first element: each group back to 8 plain blocks, the plain tail as is.
template <class Block>
void dequant_grouped(DType grouped, const Block* src, int64_t n_blocks, float* out) {
  Block plain[kGroupBlocks];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kGroupBlocks) {
    const int64_t nb = std::min<int64_t>(kGroupBlocks, n_blocks - b0);
    ungroup_blocks(grouped, src, n_blocks, b0, nb, plain);
    if constexpr (std::is_same_v<Block, BlockQ5_0>)
      dequant_q5_0(plain, nb, out + b0 * kQK);
    else
      dequant_q5_1(plain, nb, out + b0 * kQK);
  }
}

}  // namespace

bool dequantize_quant(DType dtype, const void* src, int64_t n, float* out) {
  switch (dtype) {
    case DType::kQ8_0:
      dequant_q8_0(static_cast<const BlockQ8_0*>(src), n / kQK, out);
      return true;
    case DType::kQ4_0:
      dequant_q4_0(static_cast<const BlockQ4_0*>(src), n / kQK, out);
      return true;
    case DType::kQ4_1:
      dequant_q4_1(static_cast<const BlockQ4_1*>(src), n / kQK, out);
      return true;
    case DType::kQ5_0:
      dequant_q5_0(static_cast<const BlockQ5_0*>(src), n / kQK, out);
      return true;
    case DType::kQ5_1:
      dequant_q5_1(static_cast<const BlockQ5_1*>(src), n / kQK, out);
      return true;
    case DType::kQ5_0x8:
      dequant_grouped(dtype, static_cast<const BlockQ5_0*>(src), n / kQK, out);
      return true;
    case DType::kQ5_1x8:
      dequant_grouped(dtype, static_cast<const BlockQ5_1*>(src), n / kQK, out);
      return true;
    case DType::kQ4_K:
      dequant_k45(static_cast<const BlockQ4_K*>(src), n / kQKK, out);
      return true;
    case DType::kQ5_K:
      dequant_k45(static_cast<const BlockQ5_K*>(src), n / kQKK, out);
      return true;
    case DType::kQ6_K:
      dequant_q6_k(static_cast<const BlockQ6_K*>(src), n / kQKK, out);
      return true;
    case DType::kQ2_K:
      dequant_q2_k(static_cast<const BlockQ2_K*>(src), n / kQKK, out);
      return true;
    case DType::kQ3_K:
      dequant_q3_k(static_cast<const BlockQ3_K*>(src), n / kQKK, out);
      return true;
    case DType::kIQ4_NL:
      dequant_iq4_nl(static_cast<const BlockIQ4_NL*>(src), n / kQK, out);
      return true;
    case DType::kIQ4_XS:
      dequant_iq4_xs(static_cast<const BlockIQ4_XS*>(src), n / kQKK, out);
      return true;
    default:
      return dequantize_iq(dtype, src, n, out);
  }
}

}  // namespace llmpack::kernels::ref
