// The sampler chain (CONTRACT G5): repetition, presence and frequency penalties over recent tokens,
// temperature (0 = argmax), top-k, top-p, min-p, then a draw from the softmax
// with a seeded Rng. One Sampler lives as long as a conversation: its Rng
// stream and its window of recent tokens persist between calls.
// NaN logits are never drawn (nor -inf ones) while any other is left; +inf
// ones share all the probability. Logits are divided by the temperature in
// float, so one pushed past float's range by it (|logit| above about 3.4e38
// times the temperature) counts as infinite too.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "core/status.h"
#include "sampling/rng.h"

namespace llmpack {

// A bias added to one token's logit before the penalties (OpenAI's logit_bias,
// llama.cpp's --logit-bias): finite in [-100, 100], or -inf to ban the token.
struct LogitBias {
  int32_t id = 0;
  float bias = 0.0f;
};

struct SamplerParams {
  float temperature = 0.8f;    // 0 = argmax; negative is an error
  int32_t top_k = 0;           // 0 = off; keep the k most likely tokens
  float top_p = 1.0f;          // in (0, 1]; 1 = off
  float min_p = 0.0f;          // in [0, 1]; 0 = off; keep p >= min_p * p_max
  // llama.cpp's top-n-sigma, 0 = off: before the other filters, keep the
  // tokens whose (penalized) logit is at least max - n x the standard
  // deviation of the finite logits (so the set does not depend on temperature).
  float top_n_sigma = 0.0f;
  float repeat_penalty = 1.0f; // > 0; 1 = off
  int32_t repeat_last_n = 64;  // window of recent tokens the penalties look at
  // OpenAI's (and llama.cpp's) additive penalties over the same window, in
  // [-2, 2], 0 = off: a token seen c > 0 times there loses
  // presence_penalty + c * frequency_penalty from its logit (after
  // repeat_penalty's division or multiplication; negative values favour it).
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  std::vector<LogitBias> logit_bias;  // applied first; a token named twice gets both
};

// Checks ranges; the message names the field, the range and the value found.
Status validate_sampler_params(const SamplerParams& params);

// One candidate of the final distribution.
struct TokenProb {
  int32_t id = 0;
  double prob = 0.0;
};

namespace sampling_detail {
// One token that can be drawn, in sampler.cc's filter chain. The empty
// default constructor lets the vocabulary-sized buffer grow without being
// zeroed (2 MB a token at 128k).
struct Candidate {
  Candidate() {}  // NOLINT: deliberately leaves the fields unset
  Candidate(int32_t id_, float logit_, double weight_) : id(id_), logit(logit_), weight(weight_) {}
  int32_t id;
  float logit;    // temperature-scaled
  double weight;  // exp(logit - the largest logit): the unnormalized probability
};
}  // namespace sampling_detail

class Sampler {
 public:
  // `params` must have passed validate_sampler_params (create() checks it).
  Sampler(const SamplerParams& params, uint64_t seed);
  static Result<Sampler> create(const SamplerParams& params, uint64_t seed);

  // Picks the next token from logits [vocab] and records it in the window of
  // recent tokens. Empty logits, or a logit_bias token beyond them, are an error.
  Result<int32_t> sample(std::span<const float> logits);

  // Records a token that entered the sequence without being sampled (prompt).
  void accept(int32_t token);

  // The distribution sample() draws from after the whole chain, most likely
  // first, equal probabilities in logit order, then by id (one entry of
  // probability 1 at temperature 0). For tests and tools.
  std::vector<TokenProb> distribution(std::span<const float> logits) const;
  // An error when a logit_bias token lies beyond a vocabulary of `vocab_size`.
  Status check_vocabulary(size_t vocab_size) const;

  // New parameters; the Rng stream and the recent tokens carry on.
  Status set_params(const SamplerParams& params);
  const SamplerParams& params() const { return params_; }
  uint64_t seed() const { return seed_; }
  // Back to the state of a fresh Sampler with this seed.
  void reset(uint64_t seed);

 private:
  // What the chain keeps: candidates_[0, keep) in drawing order or, when
  // dense, tokens [0, keep) weighed in weights_ (masked ones are not drawn);
  // a token's probability is its weight / total. keep 0: nothing (greedy).
  struct Kept {
    size_t keep = 0;
    bool dense = false;
    double total = 1.0;
  };
  // logits with NaN masked, the biases added and the penalties applied, into penalized_.
  void penalize(std::span<const float> logits) const;
  // temperature, top-n-sigma, top-k, top-p and min-p over penalized_ (temperature > 0).
  Kept filter() const;
  // Masks (-inf) the penalized_ logits below top-n-sigma's threshold.
  void mask_below_n_sigma() const;
  Kept filter_candidates(float inv_t) const;
  Kept keep_top_p(float max_logit, double sum, int cut) const;
  struct TopPCut {
    int bin = 0;
    size_t tokens_down_to_cut = 0;
  };
  // top_p_bin of every token's scaled logit into bins_.
  void bin_vocabulary(float inv_t, float max_logit) const;
  TopPCut dense_top_p_cut(double target) const;
  size_t split_at_cut(float inv_t, int cut) const;
  template <typename Keep>
  void gather_candidates(float inv_t, size_t expected, const Keep& keep) const;
  int32_t draw(const Kept& k, double u) const;

  SamplerParams params_;
  uint64_t seed_ = 0;
  Rng rng_;
  std::deque<int32_t> recent_;
  // Scratch reused from token to token (a Sampler serves one conversation at
  // a time): allocated afresh for a 128k vocabulary, these buffers were new
  // pages, and so page faults, on every token.
  mutable std::vector<float> penalized_;
  mutable std::vector<float> weights_;  // [vocab] exp(logit - max) when no top-k
  mutable std::vector<sampling_detail::Candidate> candidates_;
  mutable std::vector<uint8_t> bins_;  // [vocab] top-p's bin of each token (top_p < 1, no top-k)
};

// Index of the largest value (the lowest index among ties); NaN never wins.
int32_t argmax(std::span<const float> values);

}  // namespace llmpack
