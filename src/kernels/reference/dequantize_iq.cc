// Scalar dequantizers of the codebook types (the layouts in iq_blocks.h):
// every group of 8 (or 4) weights is a codebook entry times its scale, with
// stored or implied signs.
#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {
namespace {

// out[j] = scale * magnitude[j], negated where bit j of signs is set.
template <size_t N>
void put_signed(float* out, float scale, const std::array<uint8_t, N>& magnitude, uint8_t signs) {
  for (size_t j = 0; j < N; ++j) out[j] = scale * magnitude[j] * ((signs >> j) & 1 ? -1.0f : 1.0f);
}

// The IQ2 scale of a 4-bit s: (0.5 + s) / 4, times d.
float iq2_group_scale(float d, int s) { return d * (0.5f + s) * 0.25f; }

void dequant_iq2_xxs(const BlockIQ2_XXS* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g) {
      const uint8_t* indexes = reinterpret_cast<const uint8_t*>(b[i].qs + 4 * g);
      const uint32_t signs_and_scale = iq_load_u32(indexes + 4);
      const float scale = iq2_group_scale(d, static_cast<int>(signs_and_scale >> 28));
      for (int l = 0; l < 4; ++l, out += 8)
        put_signed(out, scale, kIq2xxsGrid[indexes[l]], iq_signs_of_7(signs_and_scale >> (7 * l)));
    }
  }
}

void dequant_iq2_xs(const BlockIQ2_XS* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g)
      for (int l = 0; l < 4; ++l, out += 8) {
        const uint16_t q = b[i].qs[4 * g + l];
        const float scale = iq2_group_scale(d, (b[i].scales[g] >> (l < 2 ? 0 : 4)) & 0x0F);
        put_signed(out, scale, kIq2xsGrid[q & 511], iq_signs_of_7(q >> 9));
      }
  }
}

void dequant_iq2_s(const BlockIQ2_S* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g)
      for (int l = 0; l < 4; ++l, out += 8) {
        const int index = b[i].qs[4 * g + l] | (((b[i].qh[g] >> (2 * l)) & 3) << 8);
        const float scale = iq2_group_scale(d, (b[i].scales[g] >> (l < 2 ? 0 : 4)) & 0x0F);
        put_signed(out, scale, kIq2sGrid[index], b[i].qs[32 + 4 * g + l]);
      }
  }
}

void dequant_iq3_xxs(const BlockIQ3_XXS* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g) {
      const uint32_t signs_and_scale = iq_load_u32(b[i].qs + 64 + 4 * g);
      const float scale = d * (0.5f + static_cast<float>(signs_and_scale >> 28)) * 0.5f;
      for (int l = 0; l < 4; ++l, out += 8) {
        const uint8_t signs = iq_signs_of_7(signs_and_scale >> (7 * l));
        put_signed(out, scale, kIq3xxsGrid[b[i].qs[8 * g + 2 * l]], signs);
        put_signed(out + 4, scale, kIq3xxsGrid[b[i].qs[8 * g + 2 * l + 1]], static_cast<uint8_t>(signs >> 4));
      }
    }
  }
}

void dequant_iq3_s(const BlockIQ3_S* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g) {
      const float scale = d * static_cast<float>(1 + 2 * ((b[i].scales[g / 2] >> (4 * (g % 2))) & 0x0F));
      for (int k = 0; k < 4; ++k, out += 8) {
        const uint8_t signs = b[i].signs[4 * g + k];
        for (int half = 0; half < 2; ++half) {
          const int quad = 8 * g + 2 * k + half;
          const int index = b[i].qs[quad] | (((b[i].qh[g] >> (quad % 8)) & 1) << 8);
          put_signed(out + 4 * half, scale, kIq3sGrid[index], static_cast<uint8_t>(signs >> (4 * half)));
        }
      }
    }
  }
}

// out[j] = scale * (value[j] + delta) for one IQ1 group of 8.
void put_iq1(float* out, float scale, const IqSignedGrid8& value, float delta) {
  for (int j = 0; j < 8; ++j) out[j] = scale * (value[j] + delta);
}

void dequant_iq1_s(const BlockIQ1_S* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int g = 0; g < 8; ++g) {
      const uint16_t qh = b[i].qh[g];
      const float scale = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
      const float delta = (qh & 0x8000) ? -kIq1Delta : kIq1Delta;
      for (int l = 0; l < 4; ++l, out += 8)
        put_iq1(out, scale, kIq1sGrid[b[i].qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)], delta);
    }
  }
}

void dequant_iq1_m(const BlockIQ1_M* b, int64_t n_blocks, float* out) {
  for (int64_t i = 0; i < n_blocks; ++i) {
    const float d = f16_to_f32(iq1m_d_bits(b[i]));
    for (int k = 0; k < 32; ++k, out += 8) {
      const int nibble = (b[i].qh[k / 2] >> (4 * (k % 2))) & 0x0F;
      const float scale = d * static_cast<float>(2 * iq1m_scale(b[i], k / 2) + 1);
      const float delta = (nibble & 8) ? -kIq1Delta : kIq1Delta;
      put_iq1(out, scale, kIq1sGrid[b[i].qs[k] | ((nibble & 7) << 8)], delta);
    }
  }
}

}  // namespace

bool dequantize_iq(DType dtype, const void* src, int64_t n, float* out) {
  const int64_t n_blocks = n / kQKK;
  switch (dtype) {
    case DType::kIQ2_XXS: dequant_iq2_xxs(static_cast<const BlockIQ2_XXS*>(src), n_blocks, out); return true;
    case DType::kIQ2_XS: dequant_iq2_xs(static_cast<const BlockIQ2_XS*>(src), n_blocks, out); return true;
    case DType::kIQ2_S: dequant_iq2_s(static_cast<const BlockIQ2_S*>(src), n_blocks, out); return true;
    case DType::kIQ3_XXS: dequant_iq3_xxs(static_cast<const BlockIQ3_XXS*>(src), n_blocks, out); return true;
    case DType::kIQ3_S: dequant_iq3_s(static_cast<const BlockIQ3_S*>(src), n_blocks, out); return true;
    case DType::kIQ1_S: dequant_iq1_s(static_cast<const BlockIQ1_S*>(src), n_blocks, out); return true;
    case DType::kIQ1_M: dequant_iq1_m(static_cast<const BlockIQ1_M*>(src), n_blocks, out); return true;
    default: return false;
  }
}

}  // namespace llmpack::kernels::ref
