#include "sampling/sampler.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "kernels/kernels.h"

namespace llmpack {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using sampling_detail::Candidate;

// Four floats as one value (GCC's and Clang's vector extension): loops over
// them compile to the baseline's SIMD on every target. Written plainly, GCC
// kept argmax's float max reduction scalar (it may not reorder NaN and
// signed-zero cases) and top-k's any-of test over 16 logits scalar too.
// x > m ? x : m never takes a NaN x.
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));


bool more_likely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The tokens that can be drawn (masked ones dropped), their logits scaled by
// 1 / temperature, and the largest of those logits.
void scaled_candidates(const std::vector<float>& logits, float inv_t, std::vector<Candidate>& cands,
                       float& max_logit) {
  cands.clear();
  max_logit = kNegInf;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;  // masked: never sampled
    const float l = logits[i] * inv_t;
    cands.push_back({static_cast<int32_t>(i), l, 0.0});
    max_logit = std::max(max_logit, l);
  }
}

// scaled_candidates restricted to the k most likely, picked by a heap whose
// top is the least likely kept: most tokens cost one comparison, and no array
// of the whole vocabulary is written (a 128k one is 2 MB to partition).
void top_k_candidates(const std::vector<float>& logits, float inv_t, size_t k, std::vector<Candidate>& heap,
                      float& max_logit) {
  heap.clear();
  max_logit = kNegInf;
  const size_t n = logits.size();
  constexpr size_t kBlock = 16;
  for (size_t i = 0; i < n; ++i) {
    // Once the heap is full, a block of logits none of which beats its top
    // (a later token ties and loses) is skipped in one vectorized test.
    if (heap.size() == k && i % kBlock == 0 && i + kBlock <= n) {
      const float least = heap.front().logit;
      const Float4 least4 = {least, least, least, least};
      Int4 beats{};
      for (size_t j = 0; j < kBlock; j += 4) {
        Float4 x;
        std::memcpy(&x, logits.data() + i + j, sizeof x);
        beats |= x * inv_t > least4;
      }
      if (!(beats[0] | beats[1] | beats[2] | beats[3])) {
        i += kBlock - 1;
        continue;
      }
    }
    if (logits[i] == kNegInf) continue;
    const Candidate c{static_cast<int32_t>(i), logits[i] * inv_t, 0.0};
    if (heap.size() < k) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), more_likely);
    } else if (more_likely(c, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), more_likely);
      heap.back() = c;
      std::push_heap(heap.begin(), heap.end(), more_likely);
    } else {
      continue;
    }
    max_logit = std::max(max_logit, c.logit);
  }
}

// Sets each weight and returns their sum. +inf logits: exp(inf - inf) is NaN;
// every +inf counts as the maximum. (The paths that weigh by hand: top-k's
// few candidates and infinite logits; the rest is kernels::exp_weights.)
double weigh(std::vector<Candidate>& cands, float max_logit) {
  double sum = 0.0;
  for (Candidate& c : cands) {
    c.weight = c.logit == max_logit ? 1.0 : std::exp(double(c.logit) - max_logit);
    sum += c.weight;
  }
  return sum;
}

// Extends the sorted (most likely first) prefix of cands from `sorted` to
// `want` elements, where cands[0, sorted) are already the most likely, in
// order; returns the new length (top_p_keep's fallback, where rounding left
// the cut below its bin: the rest sorted in growing pieces, never all at once
// unless needed; a full sort of a 128k vocabulary took about 10 ms).
size_t sort_prefix(std::vector<Candidate>& cands, size_t sorted, size_t want) {
  want = std::min(want, cands.size());
  if (want <= sorted) return sorted;
  const auto first = cands.begin() + static_cast<std::ptrdiff_t>(sorted);
  const auto last = cands.begin() + static_cast<std::ptrdiff_t>(want);
  if (want < cands.size()) std::nth_element(first, last, cands.end(), more_likely);
  std::sort(first, last, more_likely);
  return want;
}

// Top-p without sorting the vocabulary. Which tokens it keeps depends only on
// the order at the cut: a histogram of the logits' distance below the top
// one (bins of 1/8 in logit units) says in which bin the kept mass passes
// top_p, a partition puts the bins above it first and that bin next, and a
// weighted selection finds the cut inside that bin. A flat distribution (a
// 150k vocabulary with most of its tokens inside top_p) then costs a few
// passes instead of a sort.
// Masses are unnormalized weights: top_p of the whole is top_p * sum.
constexpr int kTopPBins = 256;
constexpr float kTopPBinsPerUnit = 8.0f;
using TopPMass = std::array<double, kTopPBins>;

// A scaled logit's bin: its distance below the top in eighths, the last bin
// taking everything from 255/8 below on (-inf too); +inf logits, whose distance
// is NaN, go in the first, as the top. Passes over the whole vocabulary take
// their bins from Sampler::bin_vocabulary, which computes the same in vectors:
// GCC compiles this clamp followed by a conversion to a branch, and a trained
// model's bulk of tokens sits near the last bin's edge (stories260K's median
// token lies 28-34 below its top at temperature 0.8), so that branch
// mispredicted for a large share of the vocabulary: on 152k normal logits
// (sd 3) each pass took about 1 ms.
int top_p_bin(float logit, float max_logit) {
  constexpr float kLast = static_cast<float>(kTopPBins - 1);
  const float below = (max_logit - logit) * kTopPBinsPerUnit;
  const int bin = static_cast<int>(below < kLast ? below : kLast);  // NaN: kLast, then 0 below
  return logit == max_logit ? 0 : bin;
}

// The bin in which the mass, summed from the top bin down, passes `target`.
int top_p_cut_bin(const TopPMass& mass, double target) {
  double cum = 0.0;
  int last_used = 0;
  for (int b = 0; b < kTopPBins; ++b) {
    if (mass[b] == 0.0) continue;
    last_used = b;
    cum += mass[b];
    if (cum >= target) return b;
  }
  return last_used;
}

int top_p_cut_bin(const std::vector<Candidate>& cands, float max_logit, double target) {
  TopPMass mass{};
  for (const Candidate& c : cands) mass[top_p_bin(c.logit, max_logit)] += c.weight;
  return top_p_cut_bin(mass, target);
}

// Index after the first element of cands[from, end) at which the running
// mass `cum` reaches target, or 0 if none does.
size_t walk_to_top_p(const std::vector<Candidate>& cands, size_t from, size_t end, double target, double& cum) {
  for (size_t i = from; i < end; ++i) {
    cum += cands[i].weight;
    if (cum >= target) return i + 1;
  }
  return 0;
}

// The most likely of a, b and c (distinct candidates): neither end.
const Candidate& median_of_three(const Candidate& a, const Candidate& b, const Candidate& c) {
  if (more_likely(a, b)) return more_likely(b, c) ? b : (more_likely(a, c) ? c : a);
  return more_likely(a, c) ? a : (more_likely(b, c) ? c : b);
}

// Rearranges cands[first, last) so that its most likely tokens come first
// and returns the end of the shortest such run whose mass, added to cum,
// reaches target (0 if the whole range does not; cum then holds it all). A
// weighted quickselect: each step partitions around a median of three and
// goes on in the side where target is passed, so the cut bin of a flat
// vocabulary (10k tokens and more) costs a few passes instead of a sort.
size_t select_to_top_p(std::vector<Candidate>& cands, size_t first, size_t last, double target, double& cum) {
  const auto at = [&](size_t i) { return cands.begin() + static_cast<std::ptrdiff_t>(i); };
  while (last - first > 32) {
    const Candidate pivot = median_of_three(cands[first], cands[first + (last - first) / 2], cands[last - 1]);
    // [first, mid): at least as likely as the pivot (never empty, never all)
    const size_t mid = static_cast<size_t>(
        std::partition(at(first), at(last), [&](const Candidate& c) { return !more_likely(pivot, c); }) -
        cands.begin());
    double upper = 0.0;
    for (size_t i = first; i < mid; ++i) upper += cands[i].weight;
    if (cum + upper >= target) {
      last = mid;
    } else {
      cum += upper;
      first = mid;
    }
  }
  std::sort(at(first), at(last), more_likely);
  return walk_to_top_p(cands, first, last, target, cum);
}

// Moves the tokens top-p keeps (the most likely ones whose mass first
// reaches target = top_p * sum, or all) to the front of cands and returns
// how many they are; `cut` is the bin where the histogram says that mass is
// reached. cands holds at least every token of the bins down to the cut.
// The bins above the cut stay in partition order; the draw reads them so.
// top_p_keep once cands is split: the bins above the cut in [0, above), the
// cut bin in [above, cut_end), the rest after.
size_t top_p_keep_split(std::vector<Candidate>& cands, size_t above, size_t cut_end, double target) {
  double cum = 0.0;
  for (size_t i = 0; i < above; ++i) cum += cands[i].weight;
  if (cum >= target) {  // rounding put the cut above the bin: sort those and walk them
    std::sort(cands.begin(), cands.begin() + static_cast<std::ptrdiff_t>(above), more_likely);
    cum = 0.0;
    return walk_to_top_p(cands, 0, above, target, cum);
  }
  size_t sorted = cut_end;
  if (size_t keep = select_to_top_p(cands, above, sorted, target, cum)) return keep;
  // Not reached inside the bin (rounding again): the rest most likely first.
  for (size_t want = std::max<size_t>(64, 2 * sorted);; want *= 2) {
    const size_t from = sorted;
    sorted = sort_prefix(cands, sorted, want);
    if (size_t keep = walk_to_top_p(cands, from, sorted, target, cum)) return keep;
    if (sorted == cands.size()) return sorted;
  }
}

size_t top_p_keep(std::vector<Candidate>& cands, int cut, float max_logit, double target) {
  const auto bin = [&](const Candidate& c) { return top_p_bin(c.logit, max_logit); };
  const auto above_end = std::partition(cands.begin(), cands.end(), [&](const Candidate& c) { return bin(c) < cut; });
  const auto cut_end = std::partition(above_end, cands.end(), [&](const Candidate& c) { return bin(c) == cut; });
  return top_p_keep_split(cands, static_cast<size_t>(above_end - cands.begin()),
                          static_cast<size_t>(cut_end - cands.begin()), target);
}

// The largest value that is not NaN; -inf when there is none.
float max_not_nan(std::span<const float> values) {
  const size_t n = values.size();
  Float4 acc[4];
  for (Float4& a : acc) a = Float4{kNegInf, kNegInf, kNegInf, kNegInf};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t j = 0; j < 4; ++j) {
      Float4 x;
      std::memcpy(&x, values.data() + i + 4 * j, sizeof x);
      acc[j] = x > acc[j] ? x : acc[j];
    }
  }
  float best = kNegInf;
  for (const Float4& a : acc) {
    for (int lane = 0; lane < 4; ++lane) best = a[lane] > best ? a[lane] : best;
  }
  for (; i < n; ++i) best = values[i] > best ? values[i] : best;
  return best;
}

// The sum of 256 weights in double, four lanes of four: the adds of one lane
// do not wait on another's.
double block_weight(const float* w) {
  typedef double Double4 __attribute__((vector_size(32)));
  Double4 acc[4] = {};
  for (size_t i = 0; i < 256; i += 16) {
    for (size_t j = 0; j < 4; ++j) {
      Float4 x;
      std::memcpy(&x, w + i + 4 * j, sizeof x);
      acc[j] += __builtin_convertvector(x, Double4);
    }
  }
  const Double4 s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

double kept_weight(const std::vector<Candidate>& cands, size_t keep) {
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) sum += cands[i].weight;
  return sum;
}

}  // namespace

// Two passes that compilers vectorize (one pass with a branch per value
// stayed scalar: about 90 us over a 152k vocabulary): the largest value, then
// the first index holding it, found a block at a time. All NaN: 0.
int32_t argmax(std::span<const float> values) {
  const float best = max_not_nan(values);
  constexpr size_t kBlock = 64;
  for (size_t from = 0; from < values.size(); from += kBlock) {
    const size_t to = std::min(values.size(), from + kBlock);
    int hit = 0;
    for (size_t k = from; k < to; ++k) hit |= static_cast<int>(values[k] == best);
    if (!hit) continue;
    for (size_t k = from; k < to; ++k) {
      if (values[k] == best) return static_cast<int32_t>(k);
    }
  }
  return 0;
}

namespace {
// Whether any penalty changes a logit.
bool penalizes(const SamplerParams& p) {
  return p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f ||
         !p.logit_bias.empty();
}
}  // namespace

Status validate_sampler_params(const SamplerParams& p) {
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f) {
    return error_status("temperature must be a finite number >= 0 (0 = greedy), got " +
                        std::to_string(p.temperature));
  }
  if (p.top_k < 0) {
    return error_status("top_k must be >= 0 (0 = off), got " + std::to_string(p.top_k));
  }
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) {
    return error_status("top_p must be in (0, 1] (1 = off), got " + std::to_string(p.top_p));
  }
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) {
    return error_status("min_p must be in [0, 1] (0 = off), got " + std::to_string(p.min_p));
  }
  if (!(p.top_n_sigma >= 0.0f && std::isfinite(p.top_n_sigma))) {
    return error_status("top_n_sigma must be a finite number >= 0 (0 = off), got " + std::to_string(p.top_n_sigma));
  }
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f) {
    return error_status("repeat_penalty must be a finite number > 0 (1 = off), got " +
                        std::to_string(p.repeat_penalty));
  }
  if (p.repeat_last_n < 0) {
    return error_status("repeat_last_n must be >= 0, got " + std::to_string(p.repeat_last_n));
  }
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f)) {
    return error_status("presence_penalty must be in [-2, 2] (0 = off), got " + std::to_string(p.presence_penalty));
  }
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f)) {
    return error_status("frequency_penalty must be in [-2, 2] (0 = off), got " +
                        std::to_string(p.frequency_penalty));
  }
  for (const LogitBias& b : p.logit_bias) {
    if (b.id < 0) return error_status("logit_bias: token ids are >= 0, got " + std::to_string(b.id));
    if (!((b.bias >= -100.0f && b.bias <= 100.0f) || b.bias == kNegInf))
      return error_status("logit_bias of token " + std::to_string(b.id) +
                          " must be in [-100, 100] or -inf (never drawn), got " + std::to_string(b.bias));
  }
  return ok_status();
}

// The chain after the penalty: temperature, top-k, top-p, min-p. Kept
// candidates are in no particular order (token order when nothing is
// filtered); the draw reads them in that order, distribution() sorts them.
// Without top-k the vocabulary is weighed by kernels::exp_weights (one SIMD
// pass; glibc's exp over a 150k vocabulary took about 0.5 ms a token) and
// only the tokens a filter may keep become candidates.
// The mean and the (population) standard deviation of the finite logits, in
// double, summed in token order (two passes); with an infinite logit nothing
// is masked (infinite logits take all the probability anyway).
void Sampler::mask_below_n_sigma() const {
  std::vector<float>& v = penalized_;
  float mx = kNegInf;
  double sum = 0;
  size_t n = 0;
  for (float x : v) {
    if (x == kNegInf) continue;
    if (!std::isfinite(x)) return;
    mx = std::max(mx, x), sum += x, ++n;
  }
  if (n == 0) return;
  const double mean = sum / static_cast<double>(n);
  double var = 0;
  for (float x : v)
    if (x != kNegInf) var += (x - mean) * (x - mean);
  const double threshold = mx - params_.top_n_sigma * std::sqrt(var / static_cast<double>(n));
  for (float& x : v)
    if (x < threshold) x = kNegInf;
}

Sampler::Kept Sampler::filter() const {
  const SamplerParams& p = params_;
  if (p.top_n_sigma > 0.0f) mask_below_n_sigma();
  const float inv_t = 1.0f / p.temperature;
  if (p.top_k > 0 || !std::isfinite(inv_t)) return filter_candidates(inv_t);
  const size_t n = penalized_.size();
  weights_.resize(n);
  const kernels::ExpWeights w =
      kernels::exp_weights(penalized_.data(), inv_t, weights_.data(), static_cast<int64_t>(n));
  if (w.max == kNegInf) return {};  // every token masked
  if (!std::isfinite(w.max)) return filter_candidates(inv_t);  // an infinite logit: weighed by hand
  if (p.min_p == 0.0f && p.top_p == 1.0f) return {n, true, w.sum};
  if (p.min_p > 0.0f) {
    // min-p keeps weight >= min_p (the most likely weighs 1; masked tokens
    // weigh 0); top-p's cut is then found among min-p's survivors
    size_t survivors = 0;
    for (float weight : weights_) survivors += static_cast<size_t>(weight >= p.min_p);
    gather_candidates(inv_t, survivors, [&](size_t i) { return weights_[i] >= p.min_p; });
    return keep_top_p(w.max, w.sum, -1);
  }
  // top-p alone keeps nothing below the bin where its mass is reached
  const double target = double(p.top_p) * w.sum;
  bin_vocabulary(inv_t, w.max);
  const TopPCut cut = dense_top_p_cut(target);
  if (cut.tokens_down_to_cut < n / 8) {  // few: gathered by a branch, then split
    gather_candidates(inv_t, cut.tokens_down_to_cut, [&](size_t i) {
      return (penalized_[i] != kNegInf) & (bins_[i] <= cut.bin);
    });
    return keep_top_p(w.max, w.sum, cut.bin);
  }
  const size_t above = split_at_cut(inv_t, cut.bin);
  const size_t keep = top_p_keep_split(candidates_, above, candidates_.size(), target);
  return {keep, false, kept_weight(candidates_, keep)};
}

// The tokens of the bins above top-p's cut into candidates_[0, above) and
// those of the cut bin after them, without branches: each token is written
// at the front and at the back of the buffer, and each end advances only
// for its own tokens; the back run then moves next to the front one.
// Returns `above`. Two partitions of a flat vocabulary's candidates cost
// more than the rest of top-p together.
size_t Sampler::split_at_cut(float inv_t, int cut) const {
  const size_t n = penalized_.size();
  std::vector<Candidate>& cands = candidates_;
  cands.resize(n);
  size_t front = 0, back = 0;  // back: tokens at cands[n - back, n)
  for (size_t i = 0; i < n; ++i) {
    const Candidate c(static_cast<int32_t>(i), penalized_[i] * inv_t, weights_[i]);
    const int b = bins_[i];
    const bool drawable = penalized_[i] != kNegInf;
    cands[front] = c;
    front += static_cast<size_t>(drawable & (b < cut));
    cands[n - 1 - back] = c;
    back += static_cast<size_t>(drawable & (b == cut));
  }
  std::copy(cands.begin() + static_cast<std::ptrdiff_t>(n - back), cands.end(),
            cands.begin() + static_cast<std::ptrdiff_t>(front));
  cands.resize(front + back);
  return front;
}

// candidates_ = the tokens for which keep(i) holds, in token order; about
// `expected` of them. Where few are kept (a peaked distribution) a rarely
// taken branch is cheapest; where many are (a flat one), every token is
// written and the count advanced only for kept ones, so that no branch
// mispredicts.
template <typename Keep>
void Sampler::gather_candidates(float inv_t, size_t expected, const Keep& keep) const {
  const size_t n = penalized_.size();
  std::vector<Candidate>& cands = candidates_;
  cands.clear();
  if (expected < n / 8) {
    for (size_t i = 0; i < n; ++i) {
      if (keep(i)) cands.emplace_back(static_cast<int32_t>(i), penalized_[i] * inv_t, weights_[i]);
    }
    return;
  }
  cands.resize(n);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    cands[count] = {static_cast<int32_t>(i), penalized_[i] * inv_t, weights_[i]};
    count += static_cast<size_t>(keep(i));
  }
  cands.resize(count);
}

// top_p_bin of each token, four at a time in vectors (see top_p_bin: lanes
// cannot branch). The same arithmetic, so the same bins.
void Sampler::bin_vocabulary(float inv_t, float max_logit) const {
  const size_t n = penalized_.size();
  bins_.resize(n);
  const Float4 top = {max_logit, max_logit, max_logit, max_logit};
  const float last = static_cast<float>(kTopPBins - 1);
  const Float4 last4 = {last, last, last, last};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    Float4 logit;
    std::memcpy(&logit, penalized_.data() + i, sizeof logit);
    logit = logit * inv_t;
    const Float4 below = (top - logit) * kTopPBinsPerUnit;
    const Int4 bin = __builtin_convertvector(below < last4 ? below : last4, Int4);
    const Int4 binned = logit == top ? Int4{} : bin;
    for (size_t j = 0; j < 4; ++j) bins_[i + j] = static_cast<uint8_t>(binned[j]);
  }
  for (; i < n; ++i) bins_[i] = static_cast<uint8_t>(top_p_bin(penalized_[i] * inv_t, max_logit));
}

// top_p_cut_bin over the whole vocabulary's weights_ and bins_, and how many
// tokens lie in the bins down to the cut. Four histograms, so that
// neighbouring tokens in one bin do not wait on each other's add.
Sampler::TopPCut Sampler::dense_top_p_cut(double target) const {
  std::array<TopPMass, 4> part{};
  std::array<uint32_t, kTopPBins> tokens{};
  const size_t n = penalized_.size();
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    for (size_t j = 0; j < 4; ++j) {
      const int b = bins_[i + j];
      part[j][b] += weights_[i + j];
      ++tokens[b];
    }
  }
  for (; i < n; ++i) {
    const int b = bins_[i];
    part[0][b] += weights_[i];
    ++tokens[b];
  }
  for (int b = 0; b < kTopPBins; ++b) part[0][b] += (part[1][b] + part[2][b]) + part[3][b];
  TopPCut cut;
  cut.bin = top_p_cut_bin(part[0], target);
  for (int b = 0; b <= cut.bin; ++b) cut.tokens_down_to_cut += tokens[b];  // masked ones too: an estimate
  return cut;
}

// Candidates picked and weighed one by one: top-k's heap, or logits that
// scale to infinity.
Sampler::Kept Sampler::filter_candidates(float inv_t) const {
  const SamplerParams& p = params_;
  std::vector<Candidate>& cands = candidates_;
  float max_logit = kNegInf;
  if (p.top_k > 0) {
    top_k_candidates(penalized_, inv_t, static_cast<size_t>(p.top_k), cands, max_logit);
  } else {
    scaled_candidates(penalized_, inv_t, cands, max_logit);
  }
  if (cands.empty()) return {};
  const double sum = weigh(cands, max_logit);
  if (p.min_p > 0.0f) {  // keep p >= min_p * p_max (the most likely has weight 1)
    std::erase_if(cands, [&](const Candidate& c) { return c.weight < double(p.min_p); });
  }
  return keep_top_p(max_logit, sum, -1);
}

// top-p over candidates_ (min-p's survivors are the most likely tokens, so
// top-p over them keeps what top-p over all of them, then min-p, would
// keep), then the kept weight. `cut` is top-p's bin if already known, else -1.
Sampler::Kept Sampler::keep_top_p(float max_logit, double sum, int cut) const {
  std::vector<Candidate>& cands = candidates_;
  size_t keep = cands.size();
  if (params_.top_p < 1.0f) {
    const double target = double(params_.top_p) * sum;
    if (cut < 0) cut = top_p_cut_bin(cands, max_logit, target);
    keep = top_p_keep(cands, cut, max_logit, target);
  }
  return {keep, false, kept_weight(cands, keep)};
}

Sampler::Sampler(const SamplerParams& params, uint64_t seed) : params_(params), seed_(seed), rng_(seed) {}

Result<Sampler> Sampler::create(const SamplerParams& params, uint64_t seed) {
  Status s = validate_sampler_params(params);
  if (!s.ok()) return s;
  return Sampler(params, seed);
}

Status Sampler::set_params(const SamplerParams& params) {
  LLMPACK_RETURN_IF_ERROR(validate_sampler_params(params));
  params_ = params;
  while (recent_.size() > static_cast<size_t>(params_.repeat_last_n)) recent_.pop_front();
  return ok_status();
}

void Sampler::reset(uint64_t seed) {
  seed_ = seed;
  rng_.reseed(seed);
  recent_.clear();
}

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n == 0) return;
  recent_.push_back(token);
  while (recent_.size() > static_cast<size_t>(params_.repeat_last_n)) recent_.pop_front();
}

// llama.cpp-style penalty: each distinct recent token's logit is divided by
// the penalty when positive and multiplied when negative (both lower it).
void Sampler::penalize(std::span<const float> logits) const {
  std::vector<float>& v = penalized_;
  v.resize(logits.size());
  // x != x is NaN's test: a select the compiler vectorizes (std::isnan's branch kept it scalar)
  std::transform(logits.begin(), logits.end(), v.begin(), [](float x) { return x != x ? kNegInf : x; });
  const SamplerParams& p = params_;
  if (!penalizes(p)) return;
  for (const LogitBias& b : p.logit_bias) {  // ids checked against the vocabulary
    float& x = v[b.id];
    x = b.bias == kNegInf ? kNegInf : x + b.bias;  // banned even if +inf (inf + -inf would be NaN)
  }
  std::vector<int32_t> ids(recent_.begin(), recent_.end());
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size();) {  // each distinct id once, with its count in the window
    const int32_t id = ids[i];
    size_t count = 0;
    for (; i < ids.size() && ids[i] == id; ++i) ++count;
    if (id < 0 || static_cast<size_t>(id) >= v.size() || v[id] == kNegInf) continue;  // masked stays masked
    float& x = v[id];
    if (p.repeat_penalty != 1.0f) x = x > 0.0f ? x / p.repeat_penalty : x * p.repeat_penalty;
    x -= p.presence_penalty + static_cast<float>(count) * p.frequency_penalty;
  }
}

// Most likely first; equal weights (two close logits can share a float
// weight, far ones underflow to 0) in logit order, then by id.
Status Sampler::check_vocabulary(size_t vocab_size) const {
  for (const LogitBias& b : params_.logit_bias)
    if (static_cast<size_t>(b.id) >= vocab_size)
      return error_status("logit_bias names token " + std::to_string(b.id) + ", beyond the vocabulary of " +
                          std::to_string(vocab_size) + " tokens");
  return ok_status();
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits) const {
  if (logits.empty() || !check_vocabulary(logits.size()).ok()) return {};
  penalize(logits);
  const Kept k = params_.temperature > 0.0f ? filter() : Kept{};
  if (k.keep == 0) return {{argmax(penalized_), 1.0}};  // greedy, or every logit masked
  std::vector<Candidate> kept;
  if (k.dense) {
    const float inv_t = 1.0f / params_.temperature;
    for (size_t i = 0; i < k.keep; ++i) {
      if (penalized_[i] != kNegInf) kept.push_back({static_cast<int32_t>(i), penalized_[i] * inv_t, weights_[i]});
    }
  } else {
    kept.assign(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(k.keep));
  }
  std::sort(kept.begin(), kept.end(), [](const Candidate& a, const Candidate& b) {
    return a.weight > b.weight || (a.weight == b.weight && more_likely(a, b));
  });
  std::vector<TokenProb> probs;
  probs.reserve(kept.size());
  for (const Candidate& c : kept) probs.push_back({c.id, c.weight / k.total});
  return probs;
}

// The token where the running weight first passes u * total.
int32_t Sampler::draw(const Kept& k, double u) const {
  const double target = u * k.total;
  double cum = 0.0;
  if (k.dense) {
    // blocks whose weight the target lies past are skipped whole; the block
    // that holds it is walked token by token (one add after another over a
    // 152k vocabulary took about 60 us a token)
    constexpr size_t kBlock = 256;
    for (size_t from = 0; from < k.keep; from += kBlock) {
      const size_t to = std::min(k.keep, from + kBlock);
      if (to - from == kBlock) {
        const double block = block_weight(weights_.data() + from);
        if (target >= cum + block) {
          cum += block;
          continue;
        }
      }
      for (size_t i = from; i < to; ++i) {
        cum += weights_[i];
        if (target < cum) return static_cast<int32_t>(i);
      }
    }
    // rounding left the target above the total: the last token that can be drawn
    size_t last = k.keep - 1;
    while (last > 0 && penalized_[last] == kNegInf) --last;
    return static_cast<int32_t>(last);
  }
  for (size_t i = 0; i < k.keep; ++i) {
    cum += candidates_[i].weight;
    if (target < cum) return candidates_[i].id;
  }
  return candidates_[k.keep - 1].id;
}

Result<int32_t> Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return error_status("sampler: expected logits of at least one token, got none");
  LLMPACK_RETURN_IF_ERROR(check_vocabulary(logits.size()));
  if (params_.temperature == 0.0f && !penalizes(params_)) {  // plain greedy: no copy to make
    const int32_t token = argmax(logits);
    accept(token);
    return token;
  }
  penalize(logits);
  const Kept k = params_.temperature > 0.0f ? filter() : Kept{};
  const int32_t token = k.keep == 0 ? argmax(penalized_) : draw(k, rng_.next_double());
  accept(token);
  return token;
}

}  // namespace llmpack
