// KV-cache rows for the attention tests: f32, f16 or q8_0 rows encoded as
// KvCache stores them, and a double-precision attention over what they hold.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/half.h"
#include "kernels/quant_blocks.h"
#include "unit/kernels/test_util.h"

namespace llmpack::kernels::testing {

enum class Elem { kF16, kQ8_0, kF32 };

inline size_t row_bytes(Elem e, int64_t elems) {
  if (e == Elem::kF32) return static_cast<size_t>(elems) * 4;
  return e == Elem::kF16 ? static_cast<size_t>(elems) * 2
                         : static_cast<size_t>((elems + kQK - 1) / kQK) * sizeof(BlockQ8_0);
}

// Encodes one row of `elems` floats as the KV cache does: f16 halves, or
// q8_0 blocks with d = amax / 127 and a zero-padded short last block.
// (f32: the floats as they are.) deq[elems] receives the values the encoding holds.
inline void encode_row(Elem e, const float* x, int64_t elems, uint8_t* out, float* deq) {
  if (e == Elem::kF32) {
    std::memcpy(out, x, static_cast<size_t>(elems) * 4);
    std::memcpy(deq, x, static_cast<size_t>(elems) * 4);
    return;
  }
  if (e == Elem::kF16) {
    for (int64_t i = 0; i < elems; ++i) {
      const uint16_t h = f32_to_f16(x[i]);
      std::memcpy(out + 2 * i, &h, 2);
      deq[i] = f16_to_f32(h);
    }
    return;
  }
  for (int64_t b = 0; b * kQK < elems; ++b) {
    const int64_t len = std::min<int64_t>(kQK, elems - b * kQK);
    float amax = 0;
    for (int64_t i = 0; i < len; ++i) amax = std::max(amax, std::fabs(x[b * kQK + i]));
    BlockQ8_0 block{};
    block.d = f32_to_f16(amax / 127.0f);
    const float d = f16_to_f32(block.d), inv = d > 0 ? 1.0f / d : 0.0f;
    for (int64_t i = 0; i < len; ++i) {
      const float q = std::clamp(std::nearbyint(x[b * kQK + i] * inv), -127.0f, 127.0f);
      block.qs[i] = static_cast<int8_t>(q);
      deq[b * kQK + i] = d * block.qs[i];
    }
    std::memcpy(out + b * sizeof(BlockQ8_0), &block, sizeof(block));
  }
}

// n_ctx rows of `elems` elements, row j at j * stride bytes. The buffer ends
// right after the last row, so an over-read shows up under ASan.
struct Rows {
  int64_t stride = 0;
  std::vector<uint8_t> k, v;
  std::vector<float> k_f32, v_f32;  // the floats encoded, [n_ctx][elems]
  std::vector<float> k_deq, v_deq;  // what the rows hold, [n_ctx][elems]
};

inline Rows make_rows(Elem e, int64_t n_ctx, int64_t elems, int64_t pad_bytes, uint32_t seed) {
  Rows r;
  const size_t rb = row_bytes(e, elems);
  r.stride = static_cast<int64_t>(rb) + pad_bytes;
  const size_t total = static_cast<size_t>((n_ctx - 1) * r.stride) + rb;
  r.k.assign(total, 0xAB);  // padding holds garbage the kernels must not read
  r.v.assign(total, 0xCD);
  r.k_f32 = random_floats(n_ctx * elems, seed);
  r.v_f32 = random_floats(n_ctx * elems, seed + 1);
  r.k_deq.resize(r.k_f32.size());
  r.v_deq.resize(r.v_f32.size());
  for (int64_t j = 0; j < n_ctx; ++j) {
    encode_row(e, &r.k_f32[j * elems], elems, &r.k[j * r.stride], &r.k_deq[j * elems]);
    encode_row(e, &r.v_f32[j * elems], elems, &r.v[j * r.stride], &r.v_deq[j * elems]);
  }
  return r;
}

// softmax(q . k_j * scale) weighted sum of v_j in double; head elements
// [first, first + head_dim) of rows of `elems` floats.
inline std::vector<double> attention_fp64(const std::vector<float>& q, const std::vector<float>& k,
                                   const std::vector<float>& v, int64_t elems, int64_t first,
                                   int64_t n_ctx, int64_t head_dim, float scale) {
  std::vector<double> s(n_ctx);
  double mx = -1e300, sum = 0;
  for (int64_t j = 0; j < n_ctx; ++j) {
    double d = 0;
    for (int64_t i = 0; i < head_dim; ++i) d += double(q[i]) * k[j * elems + first + i];
    s[j] = d * scale;
    mx = std::max(mx, s[j]);
  }
  for (auto& x : s) sum += (x = std::exp(x - mx));
  std::vector<double> out(head_dim, 0.0);
  for (int64_t i = 0; i < head_dim; ++i)
    for (int64_t j = 0; j < n_ctx; ++j) out[i] += s[j] / sum * v[j * elems + first + i];
  return out;
}

}  // namespace llmpack::kernels::testing
