// What the SIMD prefill attention kernels (x86/attention_tokens_avx2.cc,
// x86/attention_tokens_avx512.cc, arm/attention_tokens_neon.cc) share: the
// scratch layout of a tile of up to 32 queries that share a kv head, and the
// walk over tiles and blocks of 32 keys with a running softmax per query. The
// vector work of a block (scores, softmax, value sums) and the decoding of
// f16 / q8_0 cache rows are each file's own.
//
// Layouts in the per-thread scratch (lane = query):
//   qt[head_dim][32]  the tile's queries, transposed and pre-scaled
//   st[32][32]        scores, then probabilities, of one block of keys
//   o[32][head_dim]   running sums of probability-weighted values
//   kb[32][head_dim]  key rows decoded to f32 (f16, q8_0 caches; f32 keys are read in place)
//   vb[32][head_dim]  value rows as f32 when copied together (see attend_tiles)
//
// Everything here has internal linkage: each kernel file compiles its own
// copy with its own ISA flags (one shared inline copy could be the AVX-512
// one on an AVX2 machine). Nothing here is ISA-specific.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/kernels.h"

namespace llmpack::kernels::attention_tile {
namespace {

constexpr int kTile = 32;          // queries per tile
constexpr int kKeys = 32;          // keys per block
constexpr float kMasked = -1e30f;  // a score no query can see (exp gives 0)

struct Scratch {
  float* qt;
  float* st;
  float* o;
  float* kb;
  float* vb;
  float* m;     // [kTile] running max per query
  float* l;     // [kTile] running sum of exp per query
  float* corr;  // [kTile] this block's rescale factor per query
  float* nctx;  // [kTile] positions each query sees (0 for padding lanes)
  float* bmax;  // [kTile] the block's highest score per query, kept by the score pass

  // Each array is a multiple of 32 floats long, so each is as aligned as s.
  Scratch(float* s, int64_t hd) {
    qt = s, s += hd * kTile;
    st = s, s += kKeys * kTile;
    o = s, s += kTile * hd;
    kb = s, s += kKeys * hd;
    vb = s, s += kKeys * hd;
    m = s, s += kTile;
    l = s, s += kTile;
    corr = s, s += kTile;
    nctx = s, s += kTile;
    bmax = s;
  }
  // The floats a kernel needs, with room to align the start to 64 bytes.
  static size_t floats(int64_t hd) { return static_cast<size_t>(4 * kTile * hd + kKeys * kTile + 5 * kTile) + 16; }
};

// The scratch of attention_tokens' caller, aligned to `align` bytes.
inline Scratch aligned_scratch(float* scratch, int64_t hd, uintptr_t align) {
  return Scratch(reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + align - 1) & ~(align - 1)), hd);
}

// Rows of f32: row j at p + j * stride (the cache's own floats, or rows
// decoded into a buffer).
struct Rows {
  const float* p;
  int64_t stride;
  const float* row(int64_t j) const { return p + j * stride; }
};

// Elements [kv.first, kv.first + hd) of one cache row as f32 into buf[hd].
// Each ISA file gives its own (avx2::attention_decode_row, neon::attention_decode_row).
using DecodeRowFn = void (*)(const KvHead& kv, const uint8_t* row, int64_t hd, float* buf);

// A tile: queries qi in [q0, q0 + n) of the (token, head) order.
struct TileArgs {
  const float* q;
  int64_t q_stride, group, start_pos, hd;
  float scale;
  float* out;
  int64_t out_stride;
  DecodeRowFn decode_row;
};

// Rows [j0, j0 + n) of a kv head's keys or values (base: kv.k or kv.v) as
// f32: an f32 cache's own floats when in_place allows, else decoded into
// buf[n][hd].
inline Rows block_rows(const TileArgs& a, const KvHead& kv, const void* base, int64_t j0, int n, float* buf,
                       bool in_place) {
  const auto* rows = static_cast<const uint8_t*>(base) + j0 * kv.row_stride_bytes;
  if (in_place && kv.elem == CacheElem::kF32 && kv.row_stride_bytes % 4 == 0)
    return {reinterpret_cast<const float*>(rows) + kv.first, kv.row_stride_bytes / 4};
  for (int j = 0; j < n; ++j) a.decode_row(kv, rows + j * kv.row_stride_bytes, a.hd, buf + j * a.hd);
  return {buf, a.hd};
}

// Fills the tile's queries (padding lanes zero, seeing no position) and
// clears its running max, sum and outputs; returns the positions the tile's
// last query sees.
inline int64_t start_tile(const TileArgs& a, int64_t q0, int n, const Scratch& s) {
  int64_t n_keys_all = 0;
  for (int i = 0; i < kTile; ++i) {
    s.m[i] = kMasked, s.l[i] = 0.0f, s.nctx[i] = 0.0f;
    if (i >= n) {  // a padding lane (each valid lane's column is written whole below)
      for (int64_t d = 0; d < a.hd; ++d) s.qt[d * kTile + i] = 0.0f;
      continue;
    }
    const int64_t qi = q0 + i, t = qi / a.group, h = qi % a.group;
    const float* qv = a.q + t * a.q_stride + h * a.hd;
    for (int64_t d = 0; d < a.hd; ++d) s.qt[d * kTile + i] = qv[d] * a.scale;
    s.nctx[i] = static_cast<float>(a.start_pos + t + 1);
    n_keys_all = std::max(n_keys_all, a.start_pos + t + 1);
  }
  std::fill(s.o, s.o + kTile * a.hd, 0.0f);
  return n_keys_all;
}

// Every tile of n_queries queries, each through its keys a block at a time:
// block(k_rows, v_rows, j0, n_keys, n, all_visible) scores the block, updates
// the running softmax and adds the value sums; then each query's sums over
// its total. all_visible: every valid query of the tile sees every key of the
// block (the block ends at or before the first query's position + 1; later
// queries see more), so its scores need no causal mask. Padding lanes'
// queries are zero and their sums are never written out, so they need none.
// values_in_place: read f32 value rows where they are when the cache keeps
// a head's rows together (the AVX-512 kernel, 5-7% faster so in the attention
// driver; the AVX2 kernel measured 3-4% slower and copies them,
// docs/PERFORMANCE.md section 24).
template <class Block>
void attend_tiles(const TileArgs& a, const KvHead& kv, int64_t n_queries, const Scratch& s, bool values_in_place,
                  Block block) {
  for (int64_t q0 = 0; q0 < n_queries; q0 += kTile) {
    const int n = static_cast<int>(std::min<int64_t>(kTile, n_queries - q0));
    const int64_t n_keys_all = start_tile(a, q0, n, s);
    const int64_t n_keys_first = a.start_pos + q0 / a.group + 1;  // positions the tile's first query sees
    for (int64_t j0 = 0; j0 < n_keys_all; j0 += kKeys) {
      const int nk = static_cast<int>(std::min<int64_t>(kKeys, n_keys_all - j0));
      // Keys are read a few rows side by side, in place; the value pass reads
      // 32 rows over and over, so unless they lie together (a head's rows,
      // one head apart) they are copied together first (in a cache of whole
      // rows they are 2 KiB apart, and 32 such rows fall into 2 of L1's 64 sets).
      const bool v_together = values_in_place && kv.row_stride_bytes == a.hd * 4;
      const Rows k_rows = block_rows(a, kv, kv.k, j0, nk, s.kb, /*in_place=*/true);
      const Rows v_rows = block_rows(a, kv, kv.v, j0, nk, s.vb, v_together);
      const bool all_visible = j0 + nk <= n_keys_first;
      block(k_rows, v_rows, j0, nk, n, all_visible);
    }
    for (int i = 0; i < n; ++i) {
      const int64_t qi = q0 + i, t = qi / a.group, h = qi % a.group;
      float* dst = a.out + t * a.out_stride + h * a.hd;
      const float inv = 1.0f / s.l[i];
      for (int64_t d = 0; d < a.hd; ++d) dst[d] = s.o[i * a.hd + d] * inv;
    }
  }
}

}  // namespace
}  // namespace llmpack::kernels::attention_tile
