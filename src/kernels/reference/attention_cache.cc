// Reference attention over f16 and q8_0 KV-cache rows (kernels.h): each
// element is decoded where it is read, sums run in double, like
// ref::attention_head on the dequantized rows.
#include <cstddef>
#include <cstring>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {
namespace {

const uint8_t* row_at(const void* base, int64_t row_stride_bytes, int64_t j) {
  return static_cast<const uint8_t*>(base) + j * row_stride_bytes;
}

float f16_elem(const uint8_t* row, int64_t i) {
  uint16_t h;
  std::memcpy(&h, row + 2 * i, 2);
  return f16_to_f32(h);
}

// Element e of a run of BlockQ8_0 starting at `row`: d * q, exact in f32.
float q8_0_elem(const uint8_t* row, int64_t e) {
  const uint8_t* block = row + (e / kQK) * sizeof(BlockQ8_0);
  uint16_t d;
  std::memcpy(&d, block, 2);
  const auto q = static_cast<int8_t>(block[offsetof(BlockQ8_0, qs) + e % kQK]);
  return f16_to_f32(d) * static_cast<float>(q);
}

// The shared shape of both kernels; elem(row, i) is element i of the head.
template <typename Elem>
void attend(const float* q, const void* k, const void* v, int64_t row_stride_bytes, int64_t n_ctx,
            int64_t head_dim, float scale, float* scores, float* out, Elem elem) {
  for (int64_t j = 0; j < n_ctx; ++j) {
    const uint8_t* kj = row_at(k, row_stride_bytes, j);
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * elem(kj, d);
    scores[j] = static_cast<float>(dot) * scale;
  }
  softmax(scores, n_ctx);
  for (int64_t d = 0; d < head_dim; ++d) {
    double acc = 0.0;
    for (int64_t j = 0; j < n_ctx; ++j)
      acc += static_cast<double>(scores[j]) * elem(row_at(v, row_stride_bytes, j), d);
    out[d] = static_cast<float>(acc);
  }
}

}  // namespace

void attention_head_f16(const float* q, const uint16_t* k, const uint16_t* v,
                        int64_t row_stride_bytes, int64_t n_ctx, int64_t head_dim, float scale,
                        float* scores, float* out) {
  attend(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out, f16_elem);
}

void attention_head_q8_0(const float* q, const void* k, const void* v, int64_t row_stride_bytes,
                         int64_t first, int64_t n_ctx, int64_t head_dim, float scale,
                         float* scores, float* out) {
  attend(q, k, v, row_stride_bytes, n_ctx, head_dim, scale, scores, out,
         [first](const uint8_t* row, int64_t d) { return q8_0_elem(row, first + d); });
}

}  // namespace llmpack::kernels::ref
