// The row walk of kernels::quantize_row_q8_0 shared by its SIMD paths: whole
// blocks of 32 straight from x, a short last block from a zero-padded copy
// (zeros raise no maximum and quantize to 0, so it matches the reference,
// which scales a short block by its own elements and pads it with q = 0).
#pragma once

#include <cstdint>
#include <cstring>

#include "kernels/quant_blocks.h"

namespace llmpack::kernels {

// block(x32, out) quantizes 32 floats into one BlockQ8_0.
template <typename BlockFn>
void quantize_q8_0_blocks(const float* x, int64_t n, void* out, BlockFn block) {
  auto* blocks = static_cast<BlockQ8_0*>(out);
  int64_t b = 0;
  for (; (b + 1) * kQK <= n; ++b) block(x + b * kQK, blocks + b);
  if (b * kQK < n) {
    float padded[kQK] = {};
    std::memcpy(padded, x + b * kQK, static_cast<size_t>(n - b * kQK) * sizeof(float));
    block(padded, blocks + b);
  }
}

}  // namespace llmpack::kernels
