// AVX2 rotation of RoPE (kernels/rope.cc computes the cos/sin table); call
// only when the CPU has AVX2.
#pragma once

#include <cstdint>

namespace llmpack::kernels::avx2 {

// Rotates the pairs of one head by angles whose cos/sin are cos[i], sin[i],
// i < half: pairs (x[2i], x[2i+1]) when `adjacent`, else (x[i], x[i + half]).
// Each product and sum is rounded as the scalar reference rounds it (no FMA),
// so the result is bit-identical to it.
void rope_rotate(float* x, const float* cos, const float* sin, int64_t half, bool adjacent);

}  // namespace llmpack::kernels::avx2
