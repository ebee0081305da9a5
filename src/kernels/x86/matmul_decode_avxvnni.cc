// AVX-VNNI decode (1 to 3 tokens) of Q8_0 rows, the avx_vnni path's one
// decode kernel of its own (x86/avx_vnni.h); every other type decodes on the
// AVX2 kernels there.
//
// The AVX2 Q8_0 decode multiplies a block by the sign trick (vpsignb twice,
// vpmaddubsw, vpmaddwd). Here a block's quants go to vpdpbusd as its unsigned
// operand once flipped to q + 128 (one vpxor), against the signed activation
// bytes: each int32 lane gets sum (q + 128) a over 4 elements (at most
// 4 * 255 * 127, exact in float), and the 128 * qsum that adds, scaled by the
// block's ws * a.d, is taken back once per 8 blocks from the activations' d *
// qsum floats (one FMA). A block then costs a vpxor, a vpdpbusd, a convert
// and an FMA.
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/avx_vnni.h"
#include "kernels/x86/simd_avx2.h"

namespace llmpack::kernels::avx_vnni {
namespace {

using avx2::TokenActs;

// The 8 blocks' weight scales d of a step (Q8_0's 34-byte blocks).
inline __m256 step_scales(const uint8_t* p) {
  uint16_t d16[8];
  for (int j = 0; j < 8; ++j) std::memcpy(&d16[j], p + j * sizeof(BlockQ8_0), sizeof(uint16_t));
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(d16)));
}

// sum over the block's 32 lanes of (q + 128) * a, as 8 int32 lanes.
inline __m256i offset_dot(const uint8_t* block, const int8_t* aq) {
  const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + offsetof(BlockQ8_0, qs)));
  const __m256i u = _mm256_xor_si256(q, _mm256_set1_epi8(static_cast<char>(0x80)));
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(aq));
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, a);
}

// One Q8_0 row against one token: row . x = sum_b ws_b a.d_b (sum (q + 128) a
// - 128 a.qsum_b), 8 blocks a step, then the last n_blocks % 8 one at a time.
float q8_0_row(const uint8_t* row, int64_t n_blocks, const TokenActs& t) {
  constexpr int64_t kB = sizeof(BlockQ8_0);
  __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, offset = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 8 <= n_blocks; b += 8) {
    const uint8_t* p = row + b * kB;
    avx2::prefetch_bytes(p + avx2::kDecodePrefetchBytes, 8 * kB);  // runs on into the next rows
    const __m256 ws = step_scales(p);
    offset = _mm256_fmadd_ps(ws, _mm256_loadu_ps(t.adq + b), offset);
    alignas(32) float scale[8];
    _mm256_store_ps(scale, _mm256_mul_ps(ws, _mm256_loadu_ps(t.ad + b)));
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) {
      const __m256 prod = _mm256_cvtepi32_ps(offset_dot(p + j * kB, t.a[b + j].q));
      acc[j & 1] = _mm256_fmadd_ps(prod, _mm256_broadcast_ss(scale + j), acc[j & 1]);
    }
  }
  float tail_offset = 0.0f;
  for (; b < n_blocks; ++b) {
    const uint8_t* p = row + b * kB;
    uint16_t d16;
    std::memcpy(&d16, p, sizeof(d16));
    const float ws = _cvtsh_ss(d16);
    const __m256 prod = _mm256_cvtepi32_ps(offset_dot(p, t.a[b].q));
    acc[0] = _mm256_fmadd_ps(prod, _mm256_set1_ps(ws * t.ad[b]), acc[0]);
    tail_offset += ws * t.adq[b];
  }
  return avx2::hsum(_mm256_add_ps(acc[0], acc[1])) - 128.0f * (avx2::hsum(offset) + tail_offset);
}

}  // namespace

bool decode_supports(DType dtype, int64_t n_tokens) {
  return dtype == DType::kQ8_0 && n_tokens >= 1 && n_tokens < avx2::kPackedMinTokens;
}

void decode_rows(const WeightMatrix& w, const void* scratch, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  const auto* act = static_cast<const avx2::ActBlock*>(scratch);
  const int64_t n_sub = w.cols / kQK;
  const int64_t stride = n_sub * static_cast<int64_t>(sizeof(BlockQ8_0));
  TokenActs tokens[avx2::kPackedMinTokens];
  for (int64_t t = 0; t < n_tokens; ++t) tokens[t] = avx2::token_acts(act, n_tokens, n_sub, t);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t t = 0; t < n_tokens; ++t) y[t * w.rows + r] = q8_0_row(base + r * stride, n_sub, tokens[t]);
}

}  // namespace llmpack::kernels::avx_vnni
