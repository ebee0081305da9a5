#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace llmpack {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

struct Candidate {
  int32_t id;
  float logit;
};

bool more_likely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// The chain after the penalty: temperature, top-k, top-p, min-p, normalized.
// `logits` are penalized, NaN-free, and the temperature is > 0.
std::vector<TokenProb> filtered(const std::vector<float>& logits, const SamplerParams& p) {
  std::vector<Candidate> cands;
  cands.reserve(logits.size());
  const float inv_t = 1.0f / p.temperature;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] == kNegInf) continue;  // masked: never sampled
    cands.push_back({static_cast<int32_t>(i), logits[i] * inv_t});
  }
  if (cands.empty()) return {};

  const bool need_sorted = p.top_k > 0 || p.top_p < 1.0f || p.min_p > 0.0f;
  if (p.top_k > 0 && static_cast<size_t>(p.top_k) < cands.size()) {
    std::nth_element(cands.begin(), cands.begin() + p.top_k, cands.end(), more_likely);
    cands.resize(p.top_k);
  }
  if (need_sorted) std::sort(cands.begin(), cands.end(), more_likely);

  float max_logit = kNegInf;
  for (const auto& c : cands) max_logit = std::max(max_logit, c.logit);
  std::vector<TokenProb> probs(cands.size());
  double sum = 0.0;
  for (size_t i = 0; i < cands.size(); ++i) {
    // +inf logits: exp(inf - inf) is NaN; treat every +inf as the maximum.
    const double e = cands[i].logit == max_logit ? 1.0 : std::exp(double(cands[i].logit) - max_logit);
    probs[i] = {cands[i].id, e};
    sum += e;
  }
  for (auto& tp : probs) tp.prob /= sum;

  size_t keep = probs.size();
  if (p.top_p < 1.0f) {
    // The smallest prefix whose mass reaches top_p (at least one token).
    double cum = 0.0;
    for (size_t i = 0; i < probs.size(); ++i) {
      cum += probs[i].prob;
      if (cum >= p.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  if (p.min_p > 0.0f) {
    const double threshold = double(p.min_p) * probs[0].prob;
    size_t m = 1;
    while (m < keep && probs[m].prob >= threshold) ++m;
    keep = m;
  }
  if (keep < probs.size()) {
    probs.resize(keep);
    double kept = 0.0;
    for (const auto& tp : probs) kept += tp.prob;
    for (auto& tp : probs) tp.prob /= kept;
  }
  return probs;
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
std::vector<float> Sampler::penalized(std::span<const float> logits) const {
  std::vector<float> v(logits.begin(), logits.end());
  for (auto& x : v) {
    if (std::isnan(x)) x = kNegInf;
  }
  if (params_.repeat_penalty == 1.0f) return v;
  std::vector<int32_t> ids(recent_.begin(), recent_.end());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= v.size()) continue;
    float& x = v[id];
    x = x > 0.0f ? x / params_.repeat_penalty : x * params_.repeat_penalty;
  }
  return v;
}

std::vector<TokenProb> Sampler::distribution(std::span<const float> logits) const {
  if (logits.empty()) return {};
  const std::vector<float> v = penalized(logits);
  std::vector<TokenProb> probs;
  if (params_.temperature > 0.0f) probs = filtered(v, params_);
  if (probs.empty()) return {{argmax(v), 1.0}};  // greedy, or every logit masked
  std::sort(probs.begin(), probs.end(), [](const TokenProb& a, const TokenProb& b) {
    return a.prob > b.prob || (a.prob == b.prob && a.id < b.id);
  });
  return probs;
}

Result<int32_t> Sampler::sample(std::span<const float> logits) {
  if (logits.empty()) return error_status("sampler: expected logits of at least one token, got none");
  const std::vector<float> v = penalized(logits);
  int32_t token = 0;
  std::vector<TokenProb> probs;
  if (params_.temperature > 0.0f) probs = filtered(v, params_);
  if (probs.empty()) {
    token = argmax(v);
  } else {
    const double u = rng_.next_double();
    double cum = 0.0;
    token = probs.back().id;  // guards against rounding leaving u above the total
    for (const auto& tp : probs) {
      cum += tp.prob;
      if (u < cum) {
        token = tp.id;
        break;
      }
    }
  }
  accept(token);
  return token;
}

}  // namespace llmpack
