// Attention of one query over an f16 or q8_0 KV cache on NEON (kernels.h
// attention_head_f16 / attention_head_q8_0): each key and value row's head
// is widened to f32 in a stack buffer (4 lanes at a time: vcvt_f32_f16 for
// f16, int8 -> int32 -> f32 times the block's scale for q8_0), then dotted or
// accumulated as f32 rows are. Heads over kMaxHead elements take the scalar
// reference.
#include <algorithm>

#include "kernels/arm/neon.h"
#include "kernels/arm/neon_internal.h"
#include "kernels/quant_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::neon {
namespace {

constexpr int64_t kMaxHead = 512;

const uint8_t* row_at(const void* base, int64_t row_stride_bytes, int64_t j) {
  return static_cast<const uint8_t*>(base) + j * row_stride_bytes;
}

// widen(row, buf) writes the head of one cache row as head_dim floats.
template <class Widen>
void attend(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t n_ctx,
            int64_t head_dim, float scale, float* scores, float* out, Widen widen) {
  float buf[kMaxHead];
  for (int64_t j = 0; j < n_ctx; ++j) {
    widen(row_at(k, row_stride_bytes, j), buf);
    scores[j] = dot_f32(q, buf, head_dim) * scale;
  }
  softmax(scores, n_ctx);
  std::fill(out, out + head_dim, 0.0f);
  for (int64_t j = 0; j < n_ctx; ++j) {
    widen(row_at(v, row_stride_bytes, j), buf);
    const float p = scores[j];
    int64_t d = 0;
    for (; d + 4 <= head_dim; d += 4) vst1q_f32(out + d, vfmaq_n_f32(vld1q_f32(out + d), vld1q_f32(buf + d), p));
    for (; d < head_dim; ++d) out[d] += p * buf[d];
  }
}

}  // namespace

void widen_f16(const uint16_t* h, int64_t n, float* out) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(out + i, vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(h + i))));
  for (; i < n; ++i) out[i] = half_to_float(h[i]);
}

// Elements [first, first + n) of a run of BlockQ8_0 starting at `row`.
void widen_q8_0(const uint8_t* row, int64_t first, int64_t n, float* out) {
  int64_t e = first;
  const int64_t end = first + n;
  while (e < end) {
    const auto* block = reinterpret_cast<const BlockQ8_0*>(row + (e / kQK) * sizeof(BlockQ8_0));
    const float d = half_to_float(block->d);
    int64_t i = e % kQK;
    const int64_t stop = std::min<int64_t>(kQK, i + (end - e));
    for (; i + 8 <= stop; i += 8, e += 8) {  // 8 int8 -> two f32 quads
      const int16x8_t q16 = vmovl_s8(vld1_s8(block->qs + i));
      float* o = out + (e - first);
      vst1q_f32(o, vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q16))), d));
      vst1q_f32(o + 4, vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(q16)), d));
    }
    for (; i < stop; ++i, ++e) out[e - first] = d * static_cast<float>(block->qs[i]);
  }
}

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v, int64_t row_stride_bytes,
                        int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  if (head_dim > kMaxHead)
    return ref::attention_head_f16(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out);
  // rows start on even bytes (kernels.h), as 16-bit loads need
  attend(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out, [head_dim](const uint8_t* row, float* buf) {
    widen_f16(reinterpret_cast<const uint16_t*>(row), head_dim, buf);
  });
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  if (head_dim > kMaxHead)
    return ref::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
  attend(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out,
         [first, head_dim](const uint8_t* row, float* buf) { widen_q8_0(row, first, head_dim, buf); });
}

}  // namespace llmpack::kernels::neon
