// AVX-VNNI decode (1 to 3 tokens) of the signed types, Q8_0, IQ4_NL and
// IQ4_XS, the avx_vnni path's decode kernels of its own (x86/avx_vnni.h);
// every other type decodes on the AVX2 kernels there.
//
// The AVX2 Q8_0 decode multiplies a block by the sign trick (vpsignb twice,
// vpmaddubsw, vpmaddwd). Here a block's quants go to vpdpbusd as its unsigned
// operand once flipped to q + 128 (one vpxor), against the signed activation
// bytes: each int32 lane gets sum (q + 128) a over 4 elements (at most
// 4 * 255 * 127, exact in float), and the 128 * qsum that adds, scaled by the
// block's ws * a.d, is taken back once per 8 blocks from the activations' d *
// qsum floats (one FMA). A block then costs a vpxor, a vpdpbusd, a convert
// and an FMA.
//
// IQ4_NL and IQ4_XS look their nibbles up in the grid + 128 (0..241), which
// is the unsigned operand as it stands, and take the 128 * qsum back the same
// way; per pair of blocks that leaves 2 lookups and 2 vpdpbusd where the sign
// trick took 2 lookups, 4 vpsignb, 2 vpmaddubsw, 2 vpmaddwd and an add.
#include <cstring>

#include "kernels/quant_blocks.h"
#include "kernels/x86/avx2_internal.h"
#include "kernels/x86/avx_vnni.h"
#include "kernels/x86/lowbit_quants.h"
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

// kIQ4Values + 128 in both 128-bit lanes: vpshufb of 32 indices gives
// vpdpbusd's unsigned operand.
inline __m256i iq4_table_plus_128() {
  const __m128i t = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4Values));
  return _mm256_broadcastsi128_si256(_mm_xor_si128(t, _mm_set1_epi8(static_cast<char>(0x80))));
}

// x86::iq4_dots8 on the grid + 128 (iq4_table_plus_128): the 8 units' int32
// sums of (v + 128) a, each at most 32 * 241 * 128, one vpdpbusd a unit.
template <class Pair>
inline __m256i iq4_offset_dots8(Pair pair, const int8_t* aq, __m256i table) {
  return x86::iq4_unit_dots8(pair, aq, table, [](__m256i acc, __m256i u, const int8_t* a) {
    return _mm256_dpbusd_avx_epi32(acc, u, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a)));
  });
}

// One IQ4_NL row (Q4_0's layout) against one token: 8 blocks a step on the
// paired activations (scales gathered as Q4_0's), row . x =
// sum_b ws_b a.d_b (sum (v + 128) a) - 128 sum_b ws_b a.d_b a.qsum_b; the
// last n_blocks % 8 one at a time on the plain activations.
float iq4nl_row(const uint8_t* row, int64_t n_blocks, const TokenActs& t) {
  constexpr int64_t kB = sizeof(BlockIQ4_NL);
  const avx2::PairedActs& pa = t.paired;
  const __m256i table = iq4_table_plus_128();
  __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps();
  const int64_t n_paired = avx2::paired_blocks(n_blocks);
  for (int64_t b = 0; b < n_paired; b += 8) {
    const uint8_t* p = row + b * kB;
    avx2::prefetch_bytes(p + avx2::kDecodePrefetchBytes, 8 * kB);
    const __m256 ws = x86::q4_0_scales_paired(p);
    offset = _mm256_fmadd_ps(ws, _mm256_loadu_ps(pa.dsum + b), offset);
    const auto pair = [&](int i) {
      const auto* ba = reinterpret_cast<const BlockIQ4_NL*>(p + 2 * i * kB);
      const auto* bb = reinterpret_cast<const BlockIQ4_NL*>(p + (2 * i + 1) * kB);
      return _mm256_loadu2_m128i(reinterpret_cast<const __m128i*>(bb->qs), reinterpret_cast<const __m128i*>(ba->qs));
    };
    const __m256i dots = iq4_offset_dots8(pair, pa.q + b * 32, table);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(ws, _mm256_loadu_ps(pa.d + b)), acc);
  }
  float tail_offset = 0.0f;
  for (int64_t b = n_paired; b < n_blocks; ++b) {
    const auto* blk = reinterpret_cast<const BlockIQ4_NL*>(row + b * kB);
    const __m256i u = _mm256_shuffle_epi8(table, x86::q4_quants(blk->qs));
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.a[b].q));
    const __m256 prod = _mm256_cvtepi32_ps(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, a));
    const float ws = _cvtsh_ss(blk->d);
    acc = _mm256_fmadd_ps(prod, _mm256_set1_ps(ws * t.ad[b]), acc);
    tail_offset += ws * t.adq[b];
  }
  return avx2::hsum(_mm256_fmadd_ps(offset, _mm256_set1_ps(-128.0f), acc)) - 128.0f * tail_offset;
}

// One IQ4_XS row against one token, a super-block (8 units) a step: unit j's
// weight scale is d (scale_j - 32), and its offset share 128 times that by
// a.d_j a.qsum_j.
float iq4xs_row(const uint8_t* row_bytes, int64_t n_blocks, const TokenActs& t) {
  const auto* row = reinterpret_cast<const BlockIQ4_XS*>(row_bytes);
  const __m256i table = iq4_table_plus_128();
  __m256 acc = _mm256_setzero_ps(), offset = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_blocks / 8; ++sb) {
    const BlockIQ4_XS& b = row[sb];
    avx2::prefetch_bytes(reinterpret_cast<const char*>(&b) + avx2::kDecodePrefetchBytes, sizeof(b));
    const __m256 ws = _mm256_mul_ps(_mm256_cvtepi32_ps(x86::iq4xs_scales8(b)), _mm256_set1_ps(_cvtsh_ss(b.d)));
    offset = _mm256_fmadd_ps(ws, _mm256_loadu_ps(t.paired.dsum + 8 * sb), offset);
    const auto pair = [&](int i) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs + 32 * i)); };
    const __m256i dots = iq4_offset_dots8(pair, t.paired.q + sb * 8 * 32, table);
    acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), _mm256_mul_ps(ws, _mm256_loadu_ps(t.paired.d + 8 * sb)), acc);
  }
  return avx2::hsum(_mm256_fmadd_ps(offset, _mm256_set1_ps(-128.0f), acc));
}

// y[t, r] = kRow(row r, token t); kBytesPer8: a row's bytes per 8 blocks of 32.
template <int64_t kBytesPer8, float (*kRow)(const uint8_t*, int64_t, const TokenActs&)>
void rows_of(const WeightMatrix& w, const avx2::ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
             int64_t row_end) {
  const int64_t n_sub = w.cols / kQK;
  const int64_t stride = n_sub * kBytesPer8 / 8;
  TokenActs tokens[avx2::kPackedMinTokens];
  for (int64_t t = 0; t < n_tokens; ++t) tokens[t] = avx2::token_acts(act, n_tokens, n_sub, t);
  const auto* base = static_cast<const uint8_t*>(w.data);
  for (int64_t r = row_begin; r < row_end; ++r)
    for (int64_t t = 0; t < n_tokens; ++t) y[t * w.rows + r] = kRow(base + r * stride, n_sub, tokens[t]);
}

}  // namespace

bool decode_supports(DType dtype, int64_t n_tokens) {
  const bool signed_type = dtype == DType::kQ8_0 || dtype == DType::kIQ4_NL || dtype == DType::kIQ4_XS;
  return signed_type && n_tokens >= 1 && n_tokens < avx2::kPackedMinTokens;
}

void decode_rows(const WeightMatrix& w, const void* scratch, int64_t n_tokens, float* y, int64_t row_begin,
                 int64_t row_end) {
  const auto* act = static_cast<const avx2::ActBlock*>(scratch);
  switch (w.dtype) {
    case DType::kQ8_0:
      return rows_of<8 * sizeof(BlockQ8_0), q8_0_row>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_NL:
      return rows_of<8 * sizeof(BlockIQ4_NL), iq4nl_row>(w, act, n_tokens, y, row_begin, row_end);
    case DType::kIQ4_XS:
      return rows_of<sizeof(BlockIQ4_XS), iq4xs_row>(w, act, n_tokens, y, row_begin, row_end);
    default:
      return;  // decode_supports said no
  }
}

}  // namespace llmpack::kernels::avx_vnni
