// NEON matmul of the codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) against int8 activation blocks, as x86/matmul_iq_avx2.cc:
// each row unpacked a chunk at a time (kernels/iq_unpack.h) into int8 weights
// with a scale per 16, then multiplied with every token, 4 tokens a pass
// sharing each weight load, rows 8 at a time so each token's 8 sums reach y
// together. The products are the including file's dot16 (arm/widen_dot_neon.h
// in matmul_iq_neon.cc for every aarch64 CPU: |w| <= 62 and |a| <= 127, so
// two products fit an int16 lane; arm/sdot_neon.h in
// matmul_iq_dotprod_neon.cc). Functions in an unnamed namespace, a copy per
// including file.
#pragma once

#include "kernels/arm/neon_internal.h"
#include "kernels/iq_unpack.h"

namespace llmpack::kernels::neon {
namespace {  // NOLINT(build/namespaces): a copy per file

inline int8x16_t two_u64(uint64_t lo, uint64_t hi) {
  return vreinterpretq_s8_u64(vcombine_u64(vcreate_u64(lo), vcreate_u64(hi)));
}

// The vector steps of kernels/iq_unpack.h's unpackers.
struct NeonUnpack {
  static float half(uint16_t h) { return half_to_float(h); }
  static void put_signed(int8_t* q, const uint64_t (&mag)[4], const uint64_t (&neg)[4]) {
    for (int i = 0; i < 2; ++i) {
      const int8x16_t m = two_u64(mag[2 * i], mag[2 * i + 1]), n = two_u64(neg[2 * i], neg[2 * i + 1]);
      vst1q_s8(q + 16 * i, vsubq_s8(veorq_s8(m, n), n));
    }
  }
  static void put_iq1(int8_t* q, const uint64_t (&grid)[4], const uint64_t (&delta)[4]) {
    for (int i = 0; i < 2; ++i) {
      const int8x16_t g = two_u64(grid[2 * i], grid[2 * i + 1]), d = two_u64(delta[2 * i], delta[2 * i + 1]);
      vst1q_s8(q + 16 * i, vaddq_s8(vshlq_n_s8(g, 3), d));
    }
  }
  static void finish_chunk(IqUnpacked&, int64_t) {}  // the signed products need no offset sums
};

// Sums over the chunk's n_blocks blocks (activation blocks b0..) for kTokens
// tokens t0.. at once; token t's blocks are act[t * n_sub ..]. A block costs
// a token two dot16 (the including file's: widening or sdot), then either
// (kJoinInIntegers) an integer multiply and multiply-add by the halves'
// scales and one float step, or a float step per half. llvm-mca's models
// (docs/PERFORMANCE.md section 45) favour the first with sdot and the second
// with widening products.
template <int kTokens, bool kJoinInIntegers>
void iq_dot_chunk(const IqUnpacked& u, int64_t n_blocks, const ActBlock* act, int64_t n_sub, int64_t b0, int64_t t0,
               float* sums) {
  float32x4_t acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    const int8x16_t w0 = vld1q_s8(u.q + 32 * b), w1 = vld1q_s8(u.q + 32 * b + 16);
    const float f = u.factor[b / 8];  // blocks of 32, 8 a super-block
    if constexpr (kJoinInIntegers) {
      const int32_t s0 = u.iscale[2 * b], s1 = u.iscale[2 * b + 1];
      for (int t = 0; t < kTokens; ++t) {
        const ActBlock& a = act[(t0 + t) * n_sub + b0 + b];
        // |sum| <= 31 x 2 x 16 x 62 x 127: int32 holds it
        const int32x4_t block = vmlaq_n_s32(vmulq_n_s32(dot16(w0, a.q), s0), dot16(w1, a.q + 16), s1);
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(block), f * a.d);
      }
    } else {
      const float s0 = f * static_cast<float>(u.iscale[2 * b]), s1 = f * static_cast<float>(u.iscale[2 * b + 1]);
      for (int t = 0; t < kTokens; ++t) {
        const ActBlock& a = act[(t0 + t) * n_sub + b0 + b];
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(dot16(w0, a.q)), s0 * a.d);
        acc[t] = vfmaq_n_f32(acc[t], vcvtq_f32_s32(dot16(w1, a.q + 16)), s1 * a.d);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) sums[t] = vaddvq_f32(acc[t]);
}

template <bool kJoinInIntegers>
void iq_rows_of(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                int64_t row_end) {
  const int64_t n_sub = w.cols / 32;
  iq_rows_by_chunks<NeonUnpack>(
      w, n_tokens, y, row_begin, row_end,
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        iq_dot_chunk<kIqTokenPass, kJoinInIntegers>(u, n_blocks, act, n_sub, b0, t, sums);
      },
      [&](const IqUnpacked& u, int64_t n_blocks, int64_t b0, int64_t t, float* sums) {
        iq_dot_chunk<1, kJoinInIntegers>(u, n_blocks, act, n_sub, b0, t, sums);
      });
}

}  // namespace
}  // namespace llmpack::kernels::neon
