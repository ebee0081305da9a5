// Scalar reference of the non-matmul kernels.
#include <algorithm>
#include <cmath>
#include <limits>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "kernels/reference/reference.h"

namespace llmpack::kernels::ref {

void rmsnorm(float* out, const float* x, const float* weight, int64_t n, float eps) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  const double mean = n > 0 ? sum_sq / static_cast<double>(n) : 0.0;
  const float inv = static_cast<float>(1.0 / std::sqrt(mean + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void rope(float* x, int64_t head_dim, int64_t rot_dim, int64_t pos, const float* inv_freq,
          RopeStyle style) {
  (void)head_dim;  // dims [rot_dim, head_dim) pass through unchanged
  const int64_t half = rot_dim / 2;
  for (int64_t i = 0; i < half; ++i) {
    const float theta = static_cast<float>(pos) * inv_freq[i];
    const float c = std::cos(theta);
    const float s = std::sin(theta);
    const int64_t a = style == RopeStyle::kAdjacentPairs ? 2 * i : i;
    const int64_t b = style == RopeStyle::kAdjacentPairs ? 2 * i + 1 : i + half;
    const float x0 = x[a];
    const float x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
  }
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max_v = x[0];
  for (int64_t i = 1; i < n; ++i) max_v = std::fmax(max_v, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_v);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

ExpWeights exp_weights(const float* x, float scale, float* out, int64_t n) {
  ExpWeights w{-std::numeric_limits<float>::infinity(), 0.0};
  for (int64_t i = 0; i < n; ++i) w.max = std::max(w.max, out[i] = x[i] * scale);
  if (!std::isfinite(w.max)) return w;
  for (int64_t i = 0; i < n; ++i) {
    const float a = out[i] - w.max;  // the product rounded first, never fused
    out[i] = a < kExpWeightFloor ? 0.0f : std::exp(a);
    w.sum += out[i];
  }
  return w;
}

void swiglu(float* out, const float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void attention_head(const float* q, const float* k, const float* v, int64_t kv_stride,
                    int64_t n_ctx, int64_t head_dim, float scale, float* scores, float* out) {
  for (int64_t j = 0; j < n_ctx; ++j) {
    const float* kj = k + j * kv_stride;
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * kj[d];
    scores[j] = static_cast<float>(dot) * scale;
  }
  softmax(scores, n_ctx);
  for (int64_t d = 0; d < head_dim; ++d) {
    double acc = 0.0;
    for (int64_t j = 0; j < n_ctx; ++j) acc += static_cast<double>(scores[j]) * v[j * kv_stride + d];
    out[d] = static_cast<float>(acc);
  }
}

void convert_to_f16(const float* x, int64_t n, uint16_t* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = f32_to_f16(x[i]);
}

void quantize_row_q8_0(const float* x, int64_t n, void* out) {
  auto* blocks = static_cast<BlockQ8_0*>(out);
  for (int64_t b = 0; b * kQK < n; ++b) {
    const float* xb = x + b * kQK;
    const int64_t len = std::min<int64_t>(kQK, n - b * kQK);
    float amax = 0.0f;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(xb[i]));
    const float d = amax / 127.0f;
    const float inv = d > 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = f32_to_f16(d);
    for (int64_t i = 0; i < kQK; ++i) {
      const float q = i < len ? std::nearbyint(xb[i] * inv) : 0.0f;
      blocks[b].qs[i] = static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
    }
  }
}

}  // namespace llmpack::kernels::ref
