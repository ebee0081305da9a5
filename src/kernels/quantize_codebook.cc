// Quantizers of the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S and IQ1_M (layouts in iq_blocks.h): each group of 8 (or 4) weights
// becomes one entry of a fixed codebook of magnitudes, times its sub-block's
// scale, with the weights' signs stored beside it (IQ1: an entry of -1, 0
// and +1, shifted by +-1/8, carries its own signs).
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
// is first used, are the candidates (as llama.cpp's quantizers do), and
// kernels::codebook_least_error picks the first of least error among them.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "core/half.h"
#include "kernels/iq_blocks.h"
#include "kernels/kernels.h"
#include "kernels/quantize_fit.h"

namespace llmpack::kernels::fit {
namespace {

typedef int32_t Int4 __attribute__((vector_size(16)));  // what a Float4 comparison gives

// A codebook's search tables (what a search reads; build_search makes them
// from the entries): the levels the entries' elements take, and for every
// point of levels the entries to try.
struct CodebookSearch {
  int dim = 0;                     // elements a group: 8 or 4
  std::vector<float> levels;       // ascending
  std::vector<float> midpoints;    // between neighbouring levels
  float levels8[8] = {};            // levels, padded to 8 (kernels::CodebookCandidates)
  Int4 place[2] = {};               // n_levels^j for elements j = 0..3, 4..7: a point's key
  // Key k's count[k] candidates (1: the point is itself an entry) in blocks
  // of 8 from byte first[k] of `blocks`, each block their 8 entry indices
  // (uint16) and then their codes as kernels::codebook_least_error reads them
  // ([dim][8]); the last block padded. Ids and codes side by side, so that the
  // winner's are read from the lines the search has just read.
  std::vector<uint32_t> first;     // [n_keys]
  std::vector<uint8_t> count;      // [n_keys]
  std::vector<uint8_t> blocks;

  static constexpr int kIdBytes = 16;
  int block_bytes() const { return kIdBytes + 8 * dim; }
  // Appends key k's candidate list (after the previous key's); codes:
  // [entries][dim], each element's index in levels.
  void add_candidates(const std::vector<uint16_t>& list, const std::vector<uint8_t>& codes);
};

void CodebookSearch::add_candidates(const std::vector<uint16_t>& list, const std::vector<uint8_t>& codes) {
  first.push_back(static_cast<uint32_t>(blocks.size()));
  count.push_back(static_cast<uint8_t>(list.size()));
  const size_t base = blocks.size();
  blocks.resize(base + (list.size() + 7) / 8 * block_bytes(), 0);
  for (size_t i = 0; i < list.size(); ++i) {
    uint8_t* block = blocks.data() + base + (i / 8) * block_bytes();
    std::memcpy(block + 2 * (i % 8), &list[i], 2);
    for (int j = 0; j < dim; ++j) block[kIdBytes + 8 * j + i % 8] = codes[static_cast<size_t>(list[i]) * dim + j];
  }
}

// Entries further from a point than this many of the nearest distinct
// distances are not tried for it, nor more than kMaxCandidates of them (2
// distances, as llama.cpp keeps: 3% more KLD on the stories110M shape; 6
// gained nothing over 4; PERFORMANCE section 77).
constexpr int kDistinctDistances = 4;
constexpr size_t kMaxCandidates = 64;

// The search of `grid`, every value plus `shift` (IQ1's delta).
template <class Grid>
CodebookSearch build_search(const Grid& grid, float shift = 0.0f, int distances = kDistinctDistances) {
  CodebookSearch cb;
  cb.dim = static_cast<int>(grid[0].size());
  std::vector<float> entries;  // [n_entries][dim]
  for (const auto& e : grid)
    for (auto v : e) entries.push_back(static_cast<float>(v) + shift);
  const int n_entries = static_cast<int>(grid.size());
  const auto entry = [&](int e) { return entries.data() + static_cast<size_t>(e) * cb.dim; };
  cb.levels = entries;
  std::sort(cb.levels.begin(), cb.levels.end());
  cb.levels.erase(std::unique(cb.levels.begin(), cb.levels.end()), cb.levels.end());
  for (size_t k = 0; k + 1 < cb.levels.size(); ++k) cb.midpoints.push_back((cb.levels[k] + cb.levels[k + 1]) / 2);
  for (int l = 0; l < 8; ++l) cb.levels8[l] = cb.levels[std::min<size_t>(l, cb.levels.size() - 1)];
  for (int j = 0, p = 1; j < cb.dim; ++j, p *= static_cast<int>(cb.levels.size())) cb.place[j / 4][j % 4] = p;
  std::vector<uint8_t> codes;  // [n_entries][dim]
  for (float v : entries) {
    const auto level = std::lower_bound(cb.levels.begin(), cb.levels.end(), v);
    codes.push_back(static_cast<uint8_t>(level - cb.levels.begin()));
  }
  const int n_levels = static_cast<int>(cb.levels.size());
  int n_keys = 1;
  for (int j = 0; j < cb.dim; ++j) n_keys *= n_levels;
  std::vector<float> d2(grid.size());
  std::vector<std::pair<float, uint16_t>> by_distance;
  std::vector<uint16_t> list;
  for (int key = 0; key < n_keys; ++key) {
    float point[8];
    for (int j = 0, k = key; j < cb.dim; ++j, k /= n_levels) point[j] = cb.levels[k % n_levels];
    std::array<float, kDistinctDistances> nearest;  // the smallest distinct distances, ascending
    nearest.fill(INFINITY);
    const size_t last = static_cast<size_t>(distances) - 1;
    for (int e = 0; e < n_entries; ++e) {
      float sum = 0;
      for (int j = 0; j < cb.dim; ++j) sum += (point[j] - entry(e)[j]) * (point[j] - entry(e)[j]);
      d2[e] = sum;
      const auto end = nearest.begin() + last + 1;
      if (sum < nearest[last] && std::find(nearest.begin(), end, sum) == end) {
        nearest[last] = sum;
        std::sort(nearest.begin(), end);
      }
    }
    // only the entries out to the last of those are sorted (IQ1's 2048 entries
    // for 6561 points: a whole sort each took most of a second)
    by_distance.clear();
    for (int e = 0; e < n_entries; ++e)
      if (d2[e] <= nearest[last]) by_distance.emplace_back(d2[e], static_cast<uint16_t>(e));
    std::sort(by_distance.begin(), by_distance.end());
    int distinct = 0;
    list.clear();
    for (size_t i = 0; i < by_distance.size() && list.size() < kMaxCandidates; ++i) {
      if (i == 0 || by_distance[i].first != by_distance[i - 1].first) ++distinct;
      if (distinct > distances || (by_distance[0].first == 0 && i > 0)) break;  // on the grid: itself
      list.push_back(by_distance[i].second);
    }
    cb.add_candidates(list, codes);
  }
  return cb;
}

// The tables, built on first use (thread-safe: function statics).
const CodebookSearch& search_iq2xxs() { static const CodebookSearch s = build_search(kIq2xxsGrid); return s; }
const CodebookSearch& search_iq2xs() { static const CodebookSearch s = build_search(kIq2xsGrid); return s; }
const CodebookSearch& search_iq2s() { static const CodebookSearch s = build_search(kIq2sGrid); return s; }
const CodebookSearch& search_iq3xxs() { static const CodebookSearch s = build_search(kIq3xxsGrid); return s; }
const CodebookSearch& search_iq3s() { static const CodebookSearch s = build_search(kIq3sGrid); return s; }
// IQ1's codebook holds a third of its lattice's points: 2 distances (up to
// 64 entries each) lose 0.3% of KLD against 4 and take half the time.
constexpr int kIq1Distances = 2;
const CodebookSearch& search_iq1_up() {
  static const CodebookSearch s = build_search(kIq1sGrid, kIq1Delta, kIq1Distances);
  return s;
}
const CodebookSearch& search_iq1_down() {
  static const CodebookSearch s = build_search(kIq1sGrid, -kIq1Delta, kIq1Distances);
  return s;
}

// The codebooks a group may take its entry from: one, or IQ1's two deltas
// (table 0: +1/8, table 1: -1/8).
struct Tables {
  const CodebookSearch* cb[2] = {};
  int n = 1;
};

// Each element's level is the number of midpoints t[j] * inv_s lies above (0
// for NaN); the key is sum_j level_j n_levels^j. Four elements at a time.
int point_key(const CodebookSearch& cb, const float* t, float inv_s) {
  Int4 key = {};
  for (int h = 0; h < cb.dim; h += 4) {
    Float4 u;
    std::memcpy(&u, t + h, sizeof u);
    u *= inv_s;
    Int4 level = {};
    for (float mid : cb.midpoints) level -= u > Float4{mid, mid, mid, mid};  // true is -1
    key += level * cb.place[h / 4];
  }
  return key[0] + key[1] + key[2] + key[3];
}

// A group's entry: its index, and its codes (element j's level at codes[8 j]).
struct Pick {
  int entry;
  const uint8_t* codes;
};

// The entry of cb that best fits targets t[dim] (weights w) at scale s;
// *err gets its weighted squared error.
Pick nearest_entry(const CodebookSearch& cb, const float* t, const float* w, float s, float inv_s, float* err) {
  const int key = point_key(cb, t, inv_s);
  const uint8_t* block = cb.blocks.data() + cb.first[key];
  int c = 0;
  if (cb.count[key] == 1) {  // on the grid
    float e = 0;
    for (int j = 0; j < cb.dim; ++j) {
      const float v = cb.levels[block[CodebookSearch::kIdBytes + 8 * j]];
      e += w[j] * (t[j] - s * v) * (t[j] - s * v);
    }
    *err = e;
  } else {
    const kernels::CodebookCandidates candidates{cb.levels8, block + CodebookSearch::kIdBytes, cb.block_bytes(),
                                                 cb.count[key], cb.dim};
    c = kernels::codebook_least_error(candidates, t, w, s, err);
    block += (c / 8) * cb.block_bytes();
  }
  uint16_t entry;
  std::memcpy(&entry, block + 2 * (c % 8), 2);
  return {entry, block + CodebookSearch::kIdBytes + c % 8};
}

// Every group of a sub-block t[n] (n a multiple of dim) picks its entry at
// scale s into index[n / dim] (and its table, of two, into which[n / dim]);
// returns the weighted error, and the sums a least-squares refit needs
// (sum w t v, sum w v^2) in *stv, *svv.
float pick_entries(const Tables& tables, const float* t, const float* w, int n, float s, uint16_t* index,
                   uint8_t* which, double* stv, double* svv) {
  const float inv_s = s > 0 ? 1.0f / s : 0.0f;
  const int dim = tables.cb[0]->dim;
  float total = 0;
  // the sums in locals: through the pointers, which[] (bytes, which may alias
  // anything) sent each add to memory and back (a third of the export's time)
  double sum_tv = 0, sum_vv = 0;
  for (int g = 0; g * dim < n; ++g) {
    const int o = g * dim;
    float e = INFINITY;
    Pick best{};
    for (uint8_t k = 0; k < tables.n; ++k) {
      float ek;
      const Pick pick = nearest_entry(*tables.cb[k], t + o, w + o, s, inv_s, &ek);
      if (k == 0 || ek < e) e = ek, best = pick, index[g] = static_cast<uint16_t>(pick.entry), which[g] = k;
    }
    total += e;
    const float* levels = tables.cb[which[g]]->levels.data();
    for (int j = 0; j < dim; ++j) {
      const float v = levels[best.codes[8 * j]];
      sum_tv += w[o + j] * t[o + j] * v, sum_vv += w[o + j] * v * v;
    }
  }
  *stv = sum_tv, *svv = sum_vv;
  return total;
}

// Trial scales of a sub-block map its largest |target| to `lo` .. `hi` of the
// codebook's top level, `count` of them.
struct TrialRange {
  float lo, hi;
  int count;
};

// The scale of sub-block t[n] (weights w) that leaves the least error: each
// trial scale refitted to the entries it picks; the best refit is tried once
// more. 0 for a sub-block of zeros; *err gets the error.
float fit_codebook_scale(const Tables& tables, const TrialRange& r, const float* t, const float* w, int n,
                         float* err) {
  float t_max = 0, swtt = 0;
  const bool signed_entries = tables.cb[0]->levels.front() < 0;  // IQ1: targets of either sign
  for (int i = 0; i < n; ++i)
    t_max = std::max(t_max, signed_entries ? std::fabs(t[i]) : t[i]), swtt += w[i] * t[i] * t[i];
  *err = swtt;
  if (!(t_max > 0)) return 0.0f;
  uint16_t index[32];
  uint8_t which[32];
  double stv, svv;
  const float top = tables.cb[0]->levels.back();
  float best_s = t_max / top, best_err = INFINITY;
  // the error at the refit s* = stv / svv of fixed entries: sum w t^2 - stv^2 / svv
  const auto refit = [&](float s) {
    pick_entries(tables, t, w, n, s, index, which, &stv, &svv);
    if (!(svv > 0) || !(stv > 0)) return;
    const float fs = static_cast<float>(stv / svv), e = swtt - static_cast<float>(stv * stv / svv);
    if (e < best_err) best_err = e, best_s = fs;
  };
  for (int k = 0; k < r.count; ++k)
    refit(t_max / (top * (r.lo + (r.hi - r.lo) * static_cast<float>(k) / static_cast<float>(r.count - 1))));
  refit(best_s);
  if (best_err < INFINITY) *err = best_err;
  return best_s;
}

// How a type stores a sub-block's scale: d (a + b code), code 0..max_code,
// per `span` weights; parity: 7 sign bits a group of 8 (the eighth makes the
// negatives even), else all 8 stored. IQ1 (alt set): signed entries, no
// signs, each value shifted by +1/8 (cb) or -1/8 (alt), the shift chosen per
// span (IQ1_S) or per group (IQ1_M).
struct CodebookFormat {
  const CodebookSearch& cb;
  int span;
  bool parity;
  float a, b;
  int max_code = 15;
  TrialRange trials = {0.8f, 1.2f, 17};
  const CodebookSearch* alt = nullptr;
  bool shift_per_group = false;
};

// One super-block's sub-block codes, entries and signs.
struct CodebookBlock {
  float d = 0;                 // as stored (f16)
  uint8_t code[16] = {};       // per span
  uint16_t index[64] = {};     // per group (256 / dim of them)
  uint8_t which[64] = {};      // per group: IQ1's shift, 0 (+1/8) or 1 (-1/8)
  uint8_t signs[32] = {};      // per 8 weights: bit j set, weight j negative
};

// The tables span j of a block may use: IQ1_S's one chosen shift, IQ1_M's two.
Tables span_tables(const CodebookFormat& f, uint8_t shift) {
  Tables t;
  t.cb[0] = shift == 0 ? &f.cb : f.alt;
  if (f.alt != nullptr && f.shift_per_group) t.cb[1] = f.alt, t.n = 2;
  return t;
}

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

// floor(v) as a code 0..top (NaN: 0).
int floor_code(float v, int top) {
  const float f = std::floor(v);
  if (!(f >= 0.0f)) return 0;
  return f >= static_cast<float>(top) ? top : static_cast<int>(f);
}

// A span's scale (and, for IQ1_S, its shift: the one that fits it better).
float fit_span(const CodebookFormat& f, const float* t, const float* w, uint8_t* shift) {
  float err = 0, err_alt = INFINITY;
  *shift = 0;
  const float s = fit_codebook_scale(span_tables(f, 0), f.trials, t, w, f.span, &err);
  if (f.alt == nullptr || f.shift_per_group) return s;
  const float s_alt = fit_codebook_scale(span_tables(f, 1), f.trials, t, w, f.span, &err_alt);
  if (!(err_alt < err)) return s;
  *shift = 1;
  return s_alt;
}

// Fits x[256] (weights w) in format f.
void fit_codebook_block(const CodebookFormat& f, const float* x, const float* w, CodebookBlock* out) {
  float t[kQKK];
  if (f.alt != nullptr)
    std::copy(x, x + kQKK, t);  // IQ1: the entries carry the signs
  else
    make_targets(x, w, f.parity, t, out->signs);
  const int n_spans = kQKK / f.span, per_span = f.span / f.cb.dim;
  float scales[16], max_scale = 0;
  uint8_t shift[16];
  for (int j = 0; j < n_spans; ++j) {
    scales[j] = fit_span(f, t + f.span * j, w + f.span * j, &shift[j]);
    max_scale = std::max(max_scale, scales[j]);
  }
  const uint16_t d16 = f32_to_f16(max_scale / (f.a + static_cast<float>(f.max_code) * f.b));
  out->d = f16_to_f32(d16);
  if (!(out->d > 0)) {  // zeros (or a damaged block): every code and entry 0
    out->d = 0;
    return;
  }
  for (int j = 0; j < n_spans; ++j) {
    const float* tj = t + f.span * j;
    const float* wj = w + f.span * j;
    const int lo = floor_code((scales[j] / out->d - f.a) / f.b, f.max_code);
    const Tables tables = span_tables(f, shift[j]);
    float best = INFINITY;
    for (int c = lo; c <= std::min(lo + 1, f.max_code); ++c) {
      uint16_t index[32];
      uint8_t which[32];
      double stv, svv;
      const float s = out->d * (f.a + f.b * static_cast<float>(c));
      const float e = pick_entries(tables, tj, wj, f.span, s, index, which, &stv, &svv);
      if (e < best) {
        best = e;
        out->code[j] = static_cast<uint8_t>(c);
        std::copy(index, index + per_span, out->index + per_span * j);
        for (int g = 0; g < per_span; ++g)  // the table index as IQ1's shift bit
          out->which[per_span * j + g] = tables.cb[which[g]] == &f.cb ? 0 : 1;
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
// IQ1: d (2 s + 1) (entry + shift), s 0..7. Ternary entries fit best with the
// largest |x| well past the top level (about 1.5x for normal weights), so the
// trials reach further (13 of them: 25 gave the same KLD in twice the time).
constexpr TrialRange kIq1Trials = {0.6f, 2.4f, 13};
CodebookFormat iq1s_format() {
  return {search_iq1_up(), 32, false, 1.0f, 2.0f, 7, kIq1Trials, &search_iq1_down(), false};
}
CodebookFormat iq1m_format() {
  return {search_iq1_up(), 16, false, 1.0f, 2.0f, 7, kIq1Trials, &search_iq1_down(), true};
}

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

void quantize_iq1_s(const float* x, const float* imp, int64_t n_blocks, BlockIQ1_S* out) {
  quantize_codebook(iq1s_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i] = BlockIQ1_S{};
    out[i].d = f32_to_f16(b.d);
    for (int g = 0; g < 8; ++g) {
      uint32_t qh = static_cast<uint32_t>(b.code[g]) << 12 | static_cast<uint32_t>(b.which[4 * g]) << 15;
      for (int l = 0; l < 4; ++l) {
        out[i].qs[4 * g + l] = static_cast<uint8_t>(b.index[4 * g + l] & 255);
        qh |= static_cast<uint32_t>(b.index[4 * g + l] >> 8) << (3 * l);
      }
      out[i].qh[g] = static_cast<uint16_t>(qh);
    }
  });
}

// IQ1_M keeps d's 16 bits in the top nibbles of its four scale words.
void quantize_iq1_m(const float* x, const float* imp, int64_t n_blocks, BlockIQ1_M* out) {
  quantize_codebook(iq1m_format(), x, imp, n_blocks, [&](int64_t i, const CodebookBlock& b) {
    out[i] = BlockIQ1_M{};
    const uint16_t d16 = f32_to_f16(b.d);
    for (int k = 0; k < 32; ++k) {
      out[i].qs[k] = static_cast<uint8_t>(b.index[k] & 255);
      const int nibble = (b.index[k] >> 8) | b.which[k] << 3;
      out[i].qh[k / 2] = static_cast<uint8_t>(out[i].qh[k / 2] | nibble << (4 * (k % 2)));
    }
    uint16_t sc[4] = {};
    for (int h = 0; h < 16; ++h) sc[h / 4] = static_cast<uint16_t>(sc[h / 4] | b.code[h] << (3 * (h % 4)));
    for (int q = 0; q < 4; ++q) sc[q] = static_cast<uint16_t>(sc[q] | ((d16 >> (4 * q)) & 15) << 12);
    std::memcpy(out[i].scales, sc, sizeof sc);
  });
}

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
    for (int g = 0; g < 8; ++g)
      out[i].scales[g / 2] = static_cast<uint8_t>(out[i].scales[g / 2] | b.code[g] << (4 * (g % 2)));
  });
}

}  // namespace llmpack::kernels::fit
