#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace llmpack {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

using sampling_detail::Candidate;

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
  for (size_t i = 0; i < logits.size(); ++i) {
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
// every +inf counts as the maximum.
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
// top_p, a partition puts the bins above it first and that bin next, and
// only that bin is sorted. A flat distribution (a 150k vocabulary with most
// of its tokens inside top_p) then costs two passes instead of a sort.
constexpr int kTopPBins = 256;
constexpr float kTopPBinsPerUnit = 8.0f;

int top_p_bin(const Candidate& c, float max_logit) {
  if (c.logit == max_logit) return 0;  // +inf logits too
  const float below = max_logit - c.logit;
  return below < kTopPBins / kTopPBinsPerUnit ? static_cast<int>(below * kTopPBinsPerUnit) : kTopPBins - 1;
}

// The bin in which the mass, summed from the top bin down, passes top_p.
int top_p_cut_bin(const std::vector<Candidate>& cands, float max_logit, double sum, float top_p) {
  double mass[kTopPBins] = {};
  for (const Candidate& c : cands) mass[top_p_bin(c, max_logit)] += c.weight / sum;
  double cum = 0.0;
  int last_used = 0;
  for (int b = 0; b < kTopPBins; ++b) {
    if (mass[b] == 0.0) continue;
    last_used = b;
    cum += mass[b];
    if (cum >= top_p) return b;
  }
  return last_used;
}

// Index after the first element of cands[from, end) at which the running
// mass `cum` reaches top_p, or 0 if none does.
size_t walk_to_top_p(const std::vector<Candidate>& cands, size_t from, size_t end, double sum, float top_p,
                     double& cum) {
  for (size_t i = from; i < end; ++i) {
    cum += cands[i].weight / sum;
    if (cum >= top_p) return i + 1;
  }
  return 0;
}

// Moves the tokens top-p keeps (the most likely ones whose mass first
// reaches top_p, or all) to the front of cands and returns how many they are.
// The bins above the cut stay in partition order; the draw reads them so.
size_t top_p_keep(std::vector<Candidate>& cands, float max_logit, double sum, float top_p) {
  const int cut = top_p_cut_bin(cands, max_logit, sum, top_p);
  const auto bin = [&](const Candidate& c) { return top_p_bin(c, max_logit); };
  const auto above_end = std::partition(cands.begin(), cands.end(), [&](const Candidate& c) { return bin(c) < cut; });
  const auto cut_end = std::partition(above_end, cands.end(), [&](const Candidate& c) { return bin(c) == cut; });
  std::sort(above_end, cut_end, more_likely);
  const size_t above = static_cast<size_t>(above_end - cands.begin());
  double cum = 0.0;
  for (size_t i = 0; i < above; ++i) cum += cands[i].weight / sum;
  if (cum >= top_p) {  // rounding put the cut above the bin: sort those and walk them
    std::sort(cands.begin(), above_end, more_likely);
    cum = 0.0;
    return walk_to_top_p(cands, 0, above, sum, top_p, cum);
  }
  size_t sorted = static_cast<size_t>(cut_end - cands.begin());
  if (size_t keep = walk_to_top_p(cands, above, sorted, sum, top_p, cum)) return keep;
  // Not reached inside the bin (rounding again): the rest most likely first.
  for (size_t want = std::max<size_t>(64, 2 * sorted);; want *= 2) {
    const size_t from = sorted;
    sorted = sort_prefix(cands, sorted, want);
    if (size_t keep = walk_to_top_p(cands, from, sorted, sum, top_p, cum)) return keep;
    if (sorted == cands.size()) return sorted;
  }
}

}  // namespace

int32_t argmax(std::span<const float> values) {
  int32_t best = 0;
  float best_value = kNegInf;
  bool found = false;
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (std::isnan(v)) continue;
    if (!found || v > best_value) {
      best = static_cast<int32_t>(i);
      best_value = v;
      found = true;
    }
  }
  return best;
}

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
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f) {
    return error_status("repeat_penalty must be a finite number > 0 (1 = off), got " +
                        std::to_string(p.repeat_penalty));
  }
  if (p.repeat_last_n < 0) {
    return error_status("repeat_last_n must be >= 0, got " + std::to_string(p.repeat_last_n));
  }
  return ok_status();
}

// The chain after the penalty: temperature, top-k, top-p, min-p. Kept
// candidates are in no particular order (token order when nothing is
// filtered); the draw reads them in that order, distribution() sorts them.
Sampler::Kept Sampler::filter() const {
  const SamplerParams& p = params_;
  std::vector<Candidate>& cands = candidates_;
  float max_logit = kNegInf;
  if (p.top_k > 0) {
    top_k_candidates(penalized_, 1.0f / p.temperature, static_cast<size_t>(p.top_k), cands, max_logit);
  } else {
    scaled_candidates(penalized_, 1.0f / p.temperature, cands, max_logit);
  }
  if (cands.empty()) return {};
  const size_t total = cands.size();
  Kept k;
  k.sum = weigh(cands, max_logit);
  k.keep = total;
  if (p.min_p > 0.0f) {  // keep p >= min_p * p_max (the most likely has weight 1)
    const double threshold = double(p.min_p) * (1.0 / k.sum);
    std::erase_if(cands, [&](const Candidate& c) { return c.weight / k.sum < threshold; });
    k.keep = cands.size();
  }
  // min-p's survivors are the most likely tokens, so top-p over them keeps
  // what top-p over all of them, then min-p, would keep.
  if (p.top_p < 1.0f) k.keep = top_p_keep(cands, max_logit, k.sum, p.top_p);
  if (k.keep < total) {  // renormalize over what is left
    double kept = 0.0;
    for (size_t i = 0; i < k.keep; ++i) kept += cands[i].weight / k.sum;
    k.kept = kept;
    k.renormalized = true;
  }
  return k;
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
  v.assign(logits.begin(), logits.end());
  for (auto& x : v) {
    if (std::isnan(x)) x = kNegInf;
  }
  if (params_.repeat_penalty == 1.0f) return;
  std::vector<int32_t> ids(recent_.begin(), recent_.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= v.size()) continue;
    float& x = v[id];
    x = x > 0.0f ? x / params_.repeat_penalty : x * params_.repeat_penalty;
  }
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits) const {
  if (logits.empty()) return {};
  penalize(logits);
  const Kept k = params_.temperature > 0.0f ? filter() : Kept{};
  if (k.keep == 0) return {{argmax(penalized_), 1.0}};  // greedy, or every logit masked
  std::vector<TokenProb> probs(k.keep);
  for (size_t i = 0; i < k.keep; ++i) probs[i] = {candidates_[i].id, k.prob(candidates_[i])};
  std::sort(probs.begin(), probs.end(), [](const TokenProb& a, const TokenProb& b) {
    return a.prob > b.prob || (a.prob == b.prob && a.id < b.id);
  });
  return probs;
}

Result<int32_t> Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return error_status("sampler: expected logits of at least one token, got none");
  if (params_.temperature == 0.0f && params_.repeat_penalty == 1.0f) {  // plain greedy: no copy to make
    const int32_t token = argmax(logits);
    accept(token);
    return token;
  }
  penalize(logits);
  const Kept k = params_.temperature > 0.0f ? filter() : Kept{};
  int32_t token = 0;
  if (k.keep == 0) {
    token = argmax(penalized_);
  } else {
    const double u = rng_.next_double();
    double cum = 0.0;
    token = candidates_[k.keep - 1].id;  // guards against rounding leaving u above the total
    for (size_t i = 0; i < k.keep; ++i) {
      cum += k.prob(candidates_[i]);
      if (u < cum) {
        token = candidates_[i].id;
        break;
      }
    }
  }
  accept(token);
  return token;
}

}  // namespace llmpack
