// Decode attention over an f16 or q8_0 KV cache on NEON (kernels.h
// attention_head_f16 / attention_head_q8_0), and over any cache for the
// query heads that share a kv head (attention_query_group): each key and
// value row's head is widened to f32 in a stack buffer (4 lanes at a time:
// vcvt_f32_f16 for f16, int8 -> int32 -> f32 times the block's scale for
// q8_0; f32 rows are read where they are), then dotted or accumulated. A
// group reads and widens each row once for all its queries, not once per
// query, and each query's arithmetic is the one it gets alone. Heads over
// kMaxHead elements take the scalar reference (a group, one query at a time).
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

// A kv head's rows as f32: row(j, buf) is row j's head, in the cache (f32)
// or widened into buf[head_dim] (f16, q8_0).
template <class Widen>
struct WidenedRows {
  const void* base;
  int64_t stride;
  Widen widen;
  const float* row(int64_t j, float* buf) const {
    widen(row_at(base, stride, j), buf);
    return buf;
  }
};
struct F32Rows {
  const float* base;
  int64_t stride;  // floats
  const float* row(int64_t j, float*) const { return base + j * stride; }
};

// n_q queries (query g at q + g * head_dim, its scores at scores + g *
// n_ctx, its output at out + g * head_dim) over the same rows: each row is
// fetched once for all of them.
template <class Rows>
void attend(const float* q, int64_t n_q, const Rows& k, const Rows& v, int64_t n_ctx, int64_t head_dim,
            float scale, float* scores, float* out) {
  float buf[kMaxHead];
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* kj = k.row(j, buf);
    for (int64_t g = 0; g < n_q; ++g) scores[g * n_ctx + j] = dot_f32(q + g * head_dim, kj, head_dim) * scale;
  }
  for (int64_t g = 0; g < n_q; ++g) softmax(scores + g * n_ctx, n_ctx);
  std::fill(out, out + n_q * head_dim, 0.0f);
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* vj = v.row(j, buf);
    for (int64_t g = 0; g < n_q; ++g) {
      float* o = out + g * head_dim;
      const float p = scores[g * n_ctx + j];
      int64_t d = 0;
      for (; d + 4 <= head_dim; d += 4) vst1q_f32(o + d, vfmaq_n_f32(vld1q_f32(o + d), vld1q_f32(vj + d), p));
      for (; d < head_dim; ++d) o[d] += p * vj[d];
    }
  }
}

template <class Widen>
void attend_widened(const float* q, int64_t n_q, const void* k, const void* v, int64_t row_stride_bytes,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out, Widen widen) {
  attend(q, n_q, WidenedRows<Widen>{k, row_stride_bytes, widen}, WidenedRows<Widen>{v, row_stride_bytes, widen},
         n_ctx, head_dim, scale, scores, out);
}

auto f16_widener(int64_t head_dim) {
  // rows start on even bytes (kernels.h), as 16-bit loads need
  return [head_dim](const uint8_t* row, float* buf) {
    widen_f16(reinterpret_cast<const uint16_t*>(row), head_dim, buf);
  };
}
auto q8_0_widener(int64_t first, int64_t head_dim) {
  return [first, head_dim](const uint8_t* row, float* buf) { widen_q8_0(row, first, head_dim, buf); };
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
  attend_widened(q, 1, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out, f16_widener(head_dim));
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t first,
                         int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  if (head_dim > kMaxHead)
    return ref::attention_head_q8_0(q, k, v, row_stride_bytes, first, n_ctx, head_dim, scale, scores, out);
  attend_widened(q, 1, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out, q8_0_widener(first, head_dim));
}

void attention_query_group(const float* q, int64_t n_queries, const KvHead& kv, int64_t n_ctx, int64_t head_dim,
                           float scale, float* scores, float* out) {
  if (head_dim > kMaxHead) {
    for (int64_t g = 0; g < n_queries; ++g)
      attention_query(q + g * head_dim, kv, n_ctx, head_dim, scale, scores + g * n_ctx, out + g * head_dim);
    return;
  }
  const int64_t s = kv.row_stride_bytes;
  switch (kv.elem) {
    case CacheElem::kF32: {
      const auto* k = static_cast<const float*>(kv.k) + kv.first;
      const auto* v = static_cast<const float*>(kv.v) + kv.first;
      const int64_t stride = s / static_cast<int64_t>(sizeof(float));
      return attend(q, n_queries, F32Rows{k, stride}, F32Rows{v, stride}, n_ctx, head_dim, scale, scores, out);
    }
    case CacheElem::kF16: {
      const auto* k = static_cast<const uint8_t*>(kv.k) + 2 * kv.first;
      const auto* v = static_cast<const uint8_t*>(kv.v) + 2 * kv.first;
      return attend_widened(q, n_queries, k, v, s, n_ctx, head_dim, scale, scores, out, f16_widener(head_dim));
    }
    case CacheElem::kQ8_0:
      return attend_widened(q, n_queries, kv.k, kv.v, s, n_ctx, head_dim, scale, scores, out,
                            q8_0_widener(kv.first, head_dim));
  }
}

}  // namespace llmpack::kernels::neon
