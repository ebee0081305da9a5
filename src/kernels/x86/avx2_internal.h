// Per-family AVX2 matmul entry points, combined by x86/matmul_avx2.cc.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace llmpack::kernels::avx2 {

// One 32-element block of activations quantized to int8: x[i] ~ q[i] * d,
// qsum = sum of q (for the min terms of Q4_0 / Q4_K / Q8_0 packs), qsum_lo =
// sum of q[0..15] (Q6_K's 16-element sub-blocks).
struct ActBlock {
  float d;
  int32_t qsum;
  int32_t qsum_lo;
  int32_t pad;  // keeps q 16-byte aligned in the scratch array
  int8_t q[32];
};
static_assert(sizeof(ActBlock) == 48);

// Per-token float arrays after the ActBlocks (every quantized matmul), for
// vector loads where decode needs several blocks' values at once; token t's
// start at act_floats(...) + t * kActFloatsPerBlock * n_sub:
//   [b]              d of block b
//   [n_sub + b]      d * qsum (the offset and min terms)
//   [2 n_sub + 2b]   d * qsum_lo, and at + 1 d * (qsum - qsum_lo): the sums of
//                    elements 0..15 and 16..31 (Q6_K's 16-element scales)
constexpr int64_t kActFloatsPerBlock = 4;
inline float* act_floats(ActBlock* act, int64_t n_tokens, int64_t n_sub) {
  return reinterpret_cast<float*>(act + n_tokens * n_sub);
}
inline const float* act_floats(const ActBlock* act, int64_t n_tokens, int64_t n_sub) {
  return reinterpret_cast<const float*>(act + n_tokens * n_sub);
}

// Decode's Q4_0 kernel (n_tokens < kPackedMinTokens) reads the activations
// again, re-laid for pairs of blocks, after the act floats; prepare writes
// them for every quantized type (one preparation serves a group). Per token,
// over the first paired_blocks(n_sub) blocks: for blocks A = 2i, B = 2i + 1,
//   q[2i]     = [A.q 0..15 | B.q 0..15]   (32 int8)
//   q[2i + 1] = [A.q 16..31 | B.q 16..31]
// then d[paired_blocks] and dsum[paired_blocks] (d * qsum), each 8 blocks in
// the lane order kPairLaneBlock, the order the kernel's integer sums land in.
inline int64_t paired_blocks(int64_t n_sub) { return n_sub / 8 * 8; }
constexpr int64_t kPairedBytesPerBlock = 32 + 2 * sizeof(float);
constexpr int kPairLaneBlock[8] = {0, 2, 4, 6, 1, 3, 5, 7};
struct PairedActs {
  const int8_t* q;  // [paired_blocks][32]
  const float* d;
  const float* dsum;
};
// Bytes from the first ActBlock to token t's paired copy.
inline int64_t paired_offset(int64_t n_tokens, int64_t n_sub, int64_t t) {
  return n_tokens * n_sub * static_cast<int64_t>(sizeof(ActBlock) + kActFloatsPerBlock * sizeof(float)) +
         t * paired_blocks(n_sub) * kPairedBytesPerBlock;
}
inline uint8_t* paired_region(ActBlock* act, int64_t n_tokens, int64_t n_sub, int64_t t) {
  return reinterpret_cast<uint8_t*>(act) + paired_offset(n_tokens, n_sub, t);
}
inline PairedActs paired_acts(const ActBlock* act, int64_t n_tokens, int64_t n_sub, int64_t t) {
  const uint8_t* base = reinterpret_cast<const uint8_t*>(act) + paired_offset(n_tokens, n_sub, t);
  const int64_t n = paired_blocks(n_sub);
  const auto* d = reinterpret_cast<const float*>(base + 32 * n);
  return {reinterpret_cast<const int8_t*>(base), d, d + n};
}

// One token's prepared activations as the AVX2 decode kernels read them:
// blocks a[n_sub], scales ad[n_sub], ad * qsum in adq[n_sub], half sums
// hs[2 n_sub] (act_floats), and the paired copy (Q4_0). (The AVX-512 decode
// has its own struct of the first four: switching it to this one made GCC 12
// inline its tiles differently and report a false -Wuninitialized inside
// its own avx512fintrin.h.)
struct TokenActs {
  const ActBlock* a;
  const float* ad;
  const float* adq;
  const float* hs;
  PairedActs paired;
};
inline TokenActs token_acts(const ActBlock* act, int64_t n_tokens, int64_t n_sub, int64_t t) {
  const float* f = act_floats(act, n_tokens, n_sub) + kActFloatsPerBlock * t * n_sub;
  return {act + t * n_sub, f, f + n_sub, f + 2 * n_sub, paired_acts(act, n_tokens, n_sub, t)};
}

// Decode of one IQ4_XS row of n_blocks 32-element blocks against one token
// (x86/matmul_lowbit_avx2.cc).
float iq4xs_row(const uint8_t* row, int64_t n_blocks, const TokenActs& t);

// Quantizes one token's activations x[cols] (cols a multiple of 32) into
// out[cols / 32].
void quantize_activations(const float* x, int64_t cols, ActBlock* out);

// Writes one token's paired copy (see PairedActs) from its ActBlocks and act
// floats f (d at f[b], d * qsum at f[n_sub + b]).
void pair_activations(const ActBlock* act, const float* f, int64_t n_sub, uint8_t* out);
// Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS weights
// against activations quantized by
// quantize_activations: act[t * (w.cols / 32) + b].
void matmul_rows_quant(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

// Prefill path of matmul_rows_quant (every type it takes): rows packed 8 at a
// time into row-interleaved panels on the stack, tiles of 8 rows x 4 tokens.
bool packed_supports(DType dtype);
void matmul_rows_packed(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y,
                        int64_t row_begin, int64_t row_end);
// The codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M),
// every token count: each row unpacked a chunk at a time to int8 weights and
// multiplied with all tokens (x86/matmul_iq_avx2.cc).
bool iq_supports(DType dtype);
void matmul_rows_iq(const WeightMatrix& w, const ActBlock* act, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end);

// Fewest tokens for which packing pays off (below it rows stream, as in decode).
constexpr int64_t kPackedMinTokens = 4;

// The codebook types' activations: one scale per 256 elements (a super-block
// of their weights), so their kernels sum a super-block's products in
// integers and turn to float once per super-block and token (llama.cpp's
// Q8_K choice for them too). Written after the paired copies, 64-byte
// aligned from the scratch's start, when the preparation is for a codebook
// type (matmul_group makes both kinds when its group mixes them): token t's
// super-block s at super_acts(...)[t * (cols / 256) + s]. For decode (fewer
// than kIqRegisterDecodeBelow tokens) q holds the int8 a; for prefill the
// unsigned bytes a + 128 (a ^ 0x80), vpmaddubsw's unsigned operand.
struct ActSuper {
  float d;
  int32_t pad[7];  // q at 32 bytes
  int8_t q[256];
};
static_assert(sizeof(ActSuper) == 288);
inline int64_t super_acts_offset(int64_t n_tokens, int64_t n_sub) {
  const int64_t paired_tokens = n_tokens < kPackedMinTokens ? n_tokens : kPackedMinTokens - 1;  // as scratch_bytes
  const int64_t end = n_tokens * n_sub * static_cast<int64_t>(sizeof(ActBlock) + kActFloatsPerBlock * sizeof(float)) +
                      paired_tokens * paired_blocks(n_sub) * kPairedBytesPerBlock;
  return (end + 63) / 64 * 64;
}
inline const ActSuper* super_acts(const ActBlock* act, int64_t n_tokens, int64_t n_sub) {
  return reinterpret_cast<const ActSuper*>(reinterpret_cast<const uint8_t*>(act) + super_acts_offset(n_tokens, n_sub));
}

// From this many tokens the codebook types' activations are stored as
// a + 128 (quantize_activations_super's offset), the form the unpacking
// prefill kernels read; below it as a. The register kernels read either.
constexpr int64_t kIqRegisterDecodeBelow = 4;
// Below this many tokens the AVX2 path does not unpack the codebook rows to
// memory: the rows are decoded with every group of 32 weights built in
// registers, once for up to 4 tokens a pass (x86/iq_decode_avx2.cc), rows
// [row_begin, row_end) of y [n_tokens, w.rows], token t's activations at
// tokens + t * (w.cols / 256). On a Zen 4's AVX2 path it beat the unpacking
// at 4 and 6 tokens (1B IQ2_XXS pp4 52-67 against 30-31 t/s), won or lost by
// turns at 8 and lost from 12 on (docs/PERFORMANCE.md section 83).
constexpr int64_t kIqRegisterTokensBelow = 8;
void iq_decode_rows(const WeightMatrix& w, const ActSuper* tokens, int64_t n_tokens, float* y, int64_t row_begin,
                    int64_t row_end);

// Quantizes one token's activations x[cols] (cols a multiple of 256) into
// out[cols / 256]; with `offset` each byte holds a + 128 (unsigned), as the
// prefill kernels (kIqRegisterDecodeBelow tokens or more) multiply them.
void quantize_activations_super(const float* x, int64_t cols, bool offset, ActSuper* out);

// F32, F16 and BF16 weights: register-blocked tiles of 4 rows x up to 3 tokens.
void matmul_rows_float(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
                       int64_t row_begin, int64_t row_end);

}  // namespace llmpack::kernels::avx2
