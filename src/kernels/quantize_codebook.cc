// Quantizers of the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S
// (layouts in iq_blocks.h): each group of 8 (or 4) weights becomes one entry
// of a fixed codebook of magnitudes, times its sub-block's scale, with the
// weights' signs stored beside it.
//
// The search, per sub-block of 32 (or 16) weights: for each of a range of
// trial scales, every group takes the codebook entry nearest its magnitudes
// (by weighted squared error), and the scale is then refitted by least
// squares to the entries picked; the trial whose refit leaves the least
// error wins, and its entries are picked again at the refitted scale. The
// super-block's d and the 4-bit scale codes follow, each code the one either
// side of its ideal value that leaves its sub-block the least error.
//
// Finding the nearest entry: a group's magnitudes are first rounded, each
// alone, to the codebook's levels (3 for IQ2, 8 for IQ3). Where that point
// is itself an entry it is the best one (the error is a sum over elements);
// otherwise the entries nearest that point, found once per codebook when it
// is first used, are the candidates (as llama.cpp's quantizers do).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/quantize_fit.h"

namespace llmpack::kernels::fit {
namespace {

// A codebook with its search tables: entries as floats, the levels their
// elements take, and for every point of levels the entries to try.
struct CodebookSearch {
  int dim = 0;                     // elements a group: 8 or 4
  std::vector<float> levels;       // ascending
  std::vector<float> midpoints;    // between neighbouring levels
  std::vector<float> entries;      // [n_entries][dim]
  std::vector<uint8_t> codes;      // [n_entries][dim]: each element's index in levels
  std::vector<uint32_t> first;     // [n_keys + 1]: key k's candidates are cands[first[k] .. first[k + 1])
  std::vector<uint16_t> cands;

  int n_entries() const { return static_cast<int>(entries.size()) / dim; }
  const float* entry(int e) const { return entries.data() + static_cast<size_t>(e) * dim; }
};

// Entries further from a point than this many of the nearest distinct
// distances are not tried for it, nor more than kMaxCandidates of them (2
// distances, as llama.cpp keeps: 3% more KLD on the stories110M shape; 6
// gained nothing over 4; PERFORMANCE section 77).
constexpr int kDistinctDistances = 4;
constexpr size_t kMaxCandidates = 64;

template <class Grid>
CodebookSearch build_search(const Grid& grid) {
  CodebookSearch cb;
  cb.dim = static_cast<int>(grid[0].size());
  for (const auto& e : grid)
    for (auto v : e) cb.entries.push_back(static_cast<float>(v));
  cb.levels = cb.entries;
  std::sort(cb.levels.begin(), cb.levels.end());
  cb.levels.erase(std::unique(cb.levels.begin(), cb.levels.end()), cb.levels.end());
  for (size_t k = 0; k + 1 < cb.levels.size(); ++k) cb.midpoints.push_back((cb.levels[k] + cb.levels[k + 1]) / 2);
  for (float v : cb.entries)
    cb.codes.push_back(static_cast<uint8_t>(std::lower_bound(cb.levels.begin(), cb.levels.end(), v) - cb.levels.begin()));
  const int n_levels = static_cast<int>(cb.levels.size());
  int n_keys = 1;
  for (int j = 0; j < cb.dim; ++j) n_keys *= n_levels;
  std::vector<std::pair<float, uint16_t>> by_distance(grid.size());
  cb.first.push_back(0);
  for (int key = 0; key < n_keys; ++key) {
    float point[8];
    for (int j = 0, k = key; j < cb.dim; ++j, k /= n_levels) point[j] = cb.levels[k % n_levels];
    for (int e = 0; e < cb.n_entries(); ++e) {
      float d2 = 0;
      for (int j = 0; j < cb.dim; ++j) d2 += (point[j] - cb.entry(e)[j]) * (point[j] - cb.entry(e)[j]);
      by_distance[e] = {d2, static_cast<uint16_t>(e)};
    }
    std::sort(by_distance.begin(), by_distance.end());
    int distinct = 0;
    for (size_t i = 0; i < by_distance.size() && cb.cands.size() - cb.first.back() < kMaxCandidates; ++i) {
      if (i == 0 || by_distance[i].first != by_distance[i - 1].first) ++distinct;
      if (distinct > kDistinctDistances || (by_distance[0].first == 0 && i > 0)) break;  // on the grid: itself
      cb.cands.push_back(by_distance[i].second);
    }
    cb.first.push_back(static_cast<uint32_t>(cb.cands.size()));
  }
  return cb;
}

// The tables, built on first use (thread-safe: function statics).
const CodebookSearch& search_iq2xxs() { static const CodebookSearch s = build_search(kIq2xxsGrid); return s; }
const CodebookSearch& search_iq2xs() { static const CodebookSearch s = build_search(kIq2xsGrid); return s; }
const CodebookSearch& search_iq2s() { static const CodebookSearch s = build_search(kIq2sGrid); return s; }
const CodebookSearch& search_iq3xxs() { static const CodebookSearch s = build_search(kIq3xxsGrid); return s; }
const CodebookSearch& search_iq3s() { static const CodebookSearch s = build_search(kIq3sGrid); return s; }

// The entry of cb that best fits targets t[dim] (weights w) at scale s:
// its index; *err gets its weighted squared error.
int nearest_entry(const CodebookSearch& cb, const float* t, const float* w, float s, float inv_s, float* err) {
  int key = 0;
  for (int j = cb.dim - 1; j >= 0; --j) {
    int level = 0;
    const float u = t[j] * inv_s;
    for (float mid : cb.midpoints) level += u > mid;
    key = key * static_cast<int>(cb.levels.size()) + level;
  }
  const uint32_t begin = cb.first[key], end = cb.first[key + 1];
  int best = cb.cands[begin];
  if (end - begin == 1) {  // on the grid
    const float* v = cb.entry(best);
    float e = 0;
    for (int j = 0; j < cb.dim; ++j) e += w[j] * (t[j] - s * v[j]) * (t[j] - s * v[j]);
    *err = e;
    return best;
  }
  // Each element's error at each level, once; an entry's error is then the
  // sum of its elements' (the same terms, summed in the same order, as
  // computing each entry's directly: the same result, in about half the time).
  float at_level[8][8];
  for (int j = 0; j < cb.dim; ++j)
    for (size_t l = 0; l < cb.levels.size(); ++l) {
      const float r = t[j] - s * cb.levels[l];
      at_level[j][l] = w[j] * r * r;
    }
  float best_err = INFINITY;
  for (uint32_t c = begin; c < end; ++c) {
    const uint8_t* code = cb.codes.data() + static_cast<size_t>(cb.cands[c]) * cb.dim;
    float e = 0;
    for (int j = 0; j < cb.dim; ++j) e += at_level[j][code[j]];
    if (e < best_err) best_err = e, best = cb.cands[c];
  }
  *err = best_err;
  return best;
}

// Every group of a sub-block t[n] (n a multiple of dim) picks its entry at
// scale s into index[n / dim]; returns the weighted error, and the sums a
// least-squares refit needs (sum w t v, sum w v^2) in *stv, *svv.
float pick_entries(const CodebookSearch& cb, const float* t, const float* w, int n, float s, uint16_t* index,
                   double* stv, double* svv) {
  const float inv_s = s > 0 ? 1.0f / s : 0.0f;
  float total = 0;
  *stv = 0, *svv = 0;
  for (int g = 0; g * cb.dim < n; ++g) {
    float e;
    const int o = g * cb.dim;
    index[g] = static_cast<uint16_t>(nearest_entry(cb, t + o, w + o, s, inv_s, &e));
    total += e;
    const float* v = cb.entry(index[g]);
    for (int j = 0; j < cb.dim; ++j) *stv += w[o + j] * t[o + j] * v[j], *svv += w[o + j] * v[j] * v[j];
  }
  return total;
}

// The scale of sub-block t[n] (the magnitudes, weights w) that leaves the
// least error: trials map its largest magnitude to 0.8 .. 1.2 of the top
// level, each refitted to the entries it picks; the best refit is tried once
// more. 0 for a sub-block of zeros.
float fit_codebook_scale(const CodebookSearch& cb, const float* t, const float* w, int n) {
  float t_max = 0, swtt = 0;
  for (int i = 0; i < n; ++i) t_max = std::max(t_max, t[i]), swtt += w[i] * t[i] * t[i];
  if (!(t_max > 0)) return 0.0f;
  uint16_t index[32];
  double stv, svv;
  float best_s = t_max / cb.levels.back(), best_err = INFINITY;
  // the error at the refit s* = stv / svv of fixed entries: sum w t^2 - stv^2 / svv
  const auto refit = [&](float s) {
    pick_entries(cb, t, w, n, s, index, &stv, &svv);
    if (!(svv > 0) || !(stv > 0)) return;
    const float fs = static_cast<float>(stv / svv), err = swtt - static_cast<float>(stv * stv / svv);
    if (err < best_err) best_err = err, best_s = fs;
  };
  constexpr int kTrials = 17;
  for (int k = 0; k < kTrials; ++k)
    refit(t_max / (cb.levels.back() * (0.8f + 0.4f * static_cast<float>(k) / (kTrials - 1))));
  refit(best_s);
  return best_s;
}

// How a type stores a sub-block's scale: d (a + b code), code 0..15, per
// `span` weights; parity: 7 sign bits a group of 8 (the eighth makes the
// negatives even), else all 8 stored.
struct CodebookFormat {
  const CodebookSearch& cb;
  int span;
  bool parity;
  float a, b;
};

// One super-block's sub-block codes, entries and signs.
struct CodebookBlock {
  float d = 0;                 // as stored (f16)
  uint8_t code[16] = {};       // per span
  uint16_t index[64] = {};     // per group (256 / dim of them)
  uint8_t signs[32] = {};      // per 8 weights: bit j set, weight j negative
};

// The targets of x[256]: magnitudes, except that where a group of 8 of a
// parity type has an odd count of negatives, its element of least w x^2
// keeps the wrong sign (its target is -|x|: the smallest level fits it best).
void make_targets(const float* x, const float* w, bool parity, float* t, uint8_t* signs) {
  for (int k = 0; k < kQKK / 8; ++k) {
    uint8_t s = 0;
    for (int j = 0; j < 8; ++j) {
      const float v = x[8 * k + j];
      t[8 * k + j] = std::fabs(v);
      if (v < 0) s = static_cast<uint8_t>(s | 1 << j);
    }
    if (parity && (__builtin_popcount(s) & 1)) {
      int flip = 0;
      for (int j = 1; j < 8; ++j)
        if (w[8 * k + j] * x[8 * k + j] * x[8 * k + j] < w[8 * k + flip] * x[8 * k + flip] * x[8 * k + flip]) flip = j;
      s = static_cast<uint8_t>(s ^ 1 << flip);
      t[8 * k + flip] = -t[8 * k + flip];
    }
    signs[k] = s;
  }
}

// floor(v) as a code 0..15 (NaN: 0).
int floor_code(float v) {
  const float f = std::floor(v);
  if (!(f >= 0.0f)) return 0;
  return f >= 15.0f ? 15 : static_cast<int>(f);
}

// Fits x[256] (weights w) in format f.
void fit_codebook_block(const CodebookFormat& f, const float* x, const float* w, CodebookBlock* out) {
  float t[kQKK];
  make_targets(x, w, f.parity, t, out->signs);
  const int n_spans = kQKK / f.span, per_span = f.span / f.cb.dim;
  float scales[16], max_scale = 0;
  for (int j = 0; j < n_spans; ++j) {
    scales[j] = fit_codebook_scale(f.cb, t + f.span * j, w + f.span * j, f.span);
    max_scale = std::max(max_scale, scales[j]);
  }
  const uint16_t d16 = f32_to_f16(max_scale / (f.a + 15 * f.b));
  out->d = f16_to_f32(d16);
  if (!(out->d > 0)) {  // zeros (or a damaged block): every code and entry 0
    out->d = 0;
    std::memset(out->code, 0, sizeof out->code);
    std::memset(out->index, 0, sizeof out->index);
    return;
  }
  for (int j = 0; j < n_spans; ++j) {
    const float* tj = t + f.span * j;
    const float* wj = w + f.span * j;
    const int lo = floor_code((scales[j] / out->d - f.a) / f.b);
    float best = INFINITY;
    for (int c = lo; c <= std::min(lo + 1, 15); ++c) {
      uint16_t index[32];
      double stv, svv;
      const float s = out->d * (f.a + f.b * static_cast<float>(c));
      const float e = pick_entries(f.cb, tj, wj, f.span, s, index, &stv, &svv);
      if (e < best) {
        best = e;
        out->code[j] = static_cast<uint8_t>(c);
        std::copy(index, index + per_span, out->index + per_span * j);
      }
    }
  }
}

// The weights of a block's searches: the importances' (search_weights), or
// without them sqrt(mean(x^2) + x^2), the same form with every importance 1.
const float* codebook_weights(const float* x, const float* imp, int64_t offset, float* w) {
  if (search_weights(x, imp, offset, kQKK, w) != nullptr) return w;
  float sum_sq = 0;
  for (int j = 0; j < kQKK; ++j) sum_sq += x[j] * x[j];
  const float sigma2 = sum_sq / kQKK;
  for (int j = 0; j < kQKK; ++j) w[j] = std::sqrt(sigma2 + x[j] * x[j]);
  return w;
}

// The formats: (0.5 + s) / 4 for IQ2, (0.5 + s) / 2 for IQ3_XXS, 1 + 2 s for IQ3_S.
CodebookFormat iq2xxs_format() { return {search_iq2xxs(), 32, true, 0.125f, 0.25f}; }
CodebookFormat iq2xs_format() { return {search_iq2xs(), 16, true, 0.125f, 0.25f}; }
CodebookFormat iq2s_format() { return {search_iq2s(), 16, false, 0.125f, 0.25f}; }
CodebookFormat iq3xxs_format() { return {search_iq3xxs(), 32, true, 0.25f, 0.5f}; }
CodebookFormat iq3s_format() { return {search_iq3s(), 32, false, 1.0f, 2.0f}; }

// Fits each super-block of x and hands it to pack(i, block).
template <class Pack>
void quantize_codebook(const CodebookFormat& f, const float* x, const float* imp, int64_t n_blocks, Pack pack) {
  float w[kQKK];
  for (int64_t i = 0; i < n_blocks; ++i, x += kQKK) {
    CodebookBlock block;
    fit_codebook_block(f, x, codebook_weights(x, imp, i * kQKK, w), &block);
    pack(i, block);
  }
}

}  // namespace

void quantize_iq2_xxs(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_XXS* out) {
  quantize_codebook(iq2xxs_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i].d = f32_to_f16(b.d);
    for (int g = 0; g < 8; ++g) {
      uint8_t bytes[8];
      uint32_t signs_and_scale = static_cast<uint32_t>(b.code[g]) << 28;
      for (int l = 0; l < 4; ++l) {
        bytes[l] = static_cast<uint8_t>(b.index[4 * g + l]);
        signs_and_scale |= static_cast<uint32_t>(b.signs[4 * g + l] & 127) << (7 * l);
      }
      std::memcpy(bytes + 4, &signs_and_scale, 4);
      std::memcpy(out[i].qs + 4 * g, bytes, 8);
    }
  });
}

void quantize_iq2_xs(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_XS* out) {
  quantize_codebook(iq2xs_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i].d = f32_to_f16(b.d);
    for (int k = 0; k < 32; ++k) out[i].qs[k] = static_cast<uint16_t>(b.index[k] | (b.signs[k] & 127) << 9);
    for (int g = 0; g < 8; ++g) out[i].scales[g] = static_cast<uint8_t>(b.code[2 * g] | b.code[2 * g + 1] << 4);
  });
}

void quantize_iq2_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ2_S* out) {
  quantize_codebook(iq2s_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i] = BlockIQ2_S{};
    out[i].d = f32_to_f16(b.d);
    for (int k = 0; k < 32; ++k) {
      out[i].qs[k] = static_cast<uint8_t>(b.index[k] & 255);
      out[i].qh[k / 4] = static_cast<uint8_t>(out[i].qh[k / 4] | (b.index[k] >> 8) << (2 * (k % 4)));
      out[i].qs[32 + k] = b.signs[k];
    }
    for (int g = 0; g < 8; ++g) out[i].scales[g] = static_cast<uint8_t>(b.code[2 * g] | b.code[2 * g + 1] << 4);
  });
}

void quantize_iq3_xxs(const float* x, const float* imp, int64_t n_blocks, BlockIQ3_XXS* out) {
  quantize_codebook(iq3xxs_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i].d = f32_to_f16(b.d);
    for (int q = 0; q < 64; ++q) out[i].qs[q] = static_cast<uint8_t>(b.index[q]);
    for (int g = 0; g < 8; ++g) {
      uint32_t signs_and_scale = static_cast<uint32_t>(b.code[g]) << 28;
      for (int l = 0; l < 4; ++l) signs_and_scale |= static_cast<uint32_t>(b.signs[4 * g + l] & 127) << (7 * l);
      std::memcpy(out[i].qs + 64 + 4 * g, &signs_and_scale, 4);
    }
  });
}

void quantize_iq3_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ3_S* out) {
  quantize_codebook(iq3s_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i] = BlockIQ3_S{};
    out[i].d = f32_to_f16(b.d);
    for (int q = 0; q < 64; ++q) {
      out[i].qs[q] = static_cast<uint8_t>(b.index[q] & 255);
      out[i].qh[q / 8] = static_cast<uint8_t>(out[i].qh[q / 8] | (b.index[q] >> 8) << (q % 8));
    }
    std::memcpy(out[i].signs, b.signs, sizeof out[i].signs);
    for (int g = 0; g < 8; ++g) out[i].scales[g / 2] = static_cast<uint8_t>(out[i].scales[g / 2] | b.code[g] << (4 * (g % 2)));
  });
}

}  // namespace llmpack::kernels::fit
