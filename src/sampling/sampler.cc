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
// order; returns the new length. Only as much as the filters need is sorted:
// a full sort of a 128k vocabulary took about 10 ms a token.
size_t sort_prefix(std::vector<Candidate>& cands, size_t sorted, size_t want) {
  want = std::min(want, cands.size());
  if (want <= sorted) return sorted;
  const auto first = cands.begin() + static_cast<std::ptrdiff_t>(sorted);
  const auto last = cands.begin() + static_cast<std::ptrdiff_t>(want);
  if (want < cands.size()) std::nth_element(first, last, cands.end(), more_likely);
  std::sort(first, last, more_likely);
  return want;
}

// The top-p prefix is found without sorting the vocabulary: a histogram of
// the logits' distance below the top one (bins of 1/8 in logit units) says
// which bins hold it, a partition moves their candidates to the front, and
// only those are sorted.
constexpr int kTopPBins = 256;
constexpr float kTopPBinsPerUnit = 8.0f;

int top_p_bin(const Candidate& c, float max_logit) {
  if (c.logit == max_logit) return 0;  // +inf logits too
  const float below = max_logit - c.logit;
  return below < kTopPBins / kTopPBinsPerUnit ? static_cast<int>(below * kTopPBinsPerUnit) : kTopPBins - 1;
}

// The last bin the prefix needs: whole bins from the top until their mass
// passes top_p, and one bin more, so that summing in another order cannot
// leave the prefix outside.
int top_p_last_bin(const std::vector<Candidate>& cands, float max_logit, double sum, float top_p) {
  double mass[kTopPBins] = {};
  for (const Candidate& c : cands) mass[top_p_bin(c, max_logit)] += c.weight / sum;
  double cum = 0.0;
  for (int b = 0; b < kTopPBins; ++b) {
    if (cum >= top_p) return b;
    cum += mass[b];
  }
  return kTopPBins - 1;
}

// How many of the most likely candidates top-p keeps: the smallest prefix
// whose mass reaches top_p (all of them if none does), sorting that prefix.
size_t top_p_prefix(std::vector<Candidate>& cands, float max_logit, double sum, float top_p, size_t& sorted) {
  const int last_bin = top_p_last_bin(cands, max_logit, sum, top_p);
  const auto front_end = std::partition(cands.begin(), cands.end(),
                                        [&](const Candidate& c) { return top_p_bin(c, max_logit) <= last_bin; });
  std::sort(cands.begin(), front_end, more_likely);  // every candidate after front_end is less likely
  sorted = static_cast<size_t>(front_end - cands.begin());
  double cum = 0.0;
  size_t i = 0;
  for (size_t want = std::max<size_t>(64, 4 * sorted);; want *= 4) {
    for (; i < sorted; ++i) {
      cum += cands[i].weight / sum;
      if (cum >= top_p) return i + 1;
    }
    if (sorted == cands.size()) return sorted;
    sorted = sort_prefix(cands, sorted, want);
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

// The chain after the penalty: temperature, top-k, top-p, min-p. With a
// filter the kept candidates run most likely first, else in token order.
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
  if (p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f) {
    if (p.min_p > 0.0f) {
      // Only tokens within min_p of the top one survive min-p (the most
      // likely has weight 1): drop the rest now, with a margin far wider than
      // rounding, so that the exact test below sees every survivor.
      const double floor = double(p.min_p) * (1.0 - 1e-6);
      std::erase_if(cands, [&](const Candidate& c) { return c.weight < floor; });
    }
    size_t sorted = 0;
    k.keep = p.top_p < 1.0f ? top_p_prefix(cands, max_logit, k.sum, p.top_p, sorted) : cands.size();
    sort_prefix(cands, sorted, k.keep);
    if (p.min_p > 0.0f) {
      const double threshold = double(p.min_p) * (cands[0].weight / k.sum);
      size_t m = 1;
      while (m < k.keep && cands[m].weight / k.sum >= threshold) ++m;
      k.keep = m;
    }
  }
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
