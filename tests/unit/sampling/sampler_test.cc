// Sampler chain tests (CONTRACT G5): argmax at temperature 0, seeded
// determinism, top-k/top-p/min-p filters on hand-made distributions, draw
// frequencies, repetition penalty, parameter validation.
#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "kernels/kernels.h"
#include "sampling/rng.h"

namespace llmpack {
namespace {

SamplerParams params_with(float temperature) {
  SamplerParams p;
  p.temperature = temperature;
  return p;
}

// Logits whose softmax (at temperature 1) is exactly `probs`.
std::vector<float> logits_of(const std::vector<double>& probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(p > 0 ? static_cast<float>(std::log(p)) : -1e30f);
  return out;
}

TEST(Sampler, G5_TemperatureZeroIsArgmax) {
  Sampler s(params_with(0.0f), 123);
  const std::vector<float> logits = {0.1f, 2.5f, -1.0f, 2.4f, 0.0f};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(*s.sample(logits), 1);
  const std::vector<float> other = {5.0f, 2.5f, -1.0f, 2.4f, 0.0f};
  EXPECT_EQ(*s.sample(other), 0);
}

TEST(Sampler, ArgmaxTiesPickLowestIdAndSkipsNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> logits = {nan, 1.0f, 3.0f, 3.0f};
  EXPECT_EQ(argmax(logits), 2);
  Sampler s(params_with(0.0f), 1);
  EXPECT_EQ(*s.sample(logits), 2);
}

// argmax reads its values in vectors and blocks: over lengths around the
// vector (16) and block (64) sizes, NaN anywhere (on the maximum's slot too),
// ties in different blocks and infinities, it agrees with a plain scan.
int32_t argmax_by_scan(const std::vector<float>& v) {
  int32_t best = -1;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!std::isnan(v[i]) && (best < 0 || v[i] > v[best])) best = static_cast<int32_t>(i);
  }
  return best < 0 ? 0 : best;
}

TEST(Sampler, ArgmaxAgreesWithAScanAcrossVectorsAndBlocks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  uint32_t x = 99;
  const auto next = [&] { return x = x * 1664525u + 1013904223u; };
  for (size_t n : {1, 2, 15, 16, 17, 31, 63, 64, 65, 127, 128, 129, 1000, 4099}) {
    for (int trial = 0; trial < 8; ++trial) {
      std::vector<float> v(n);
      for (float& f : v) f = static_cast<float>(next() >> 16) / 4096.0f - 8.0f;
      if (trial % 2 == 1) {
        for (size_t k = 0; k < 3; ++k) v[next() % n] = nan;
      }
      if (trial >= 2) {  // the same value twice, possibly in two blocks
        const float top = 9.0f;
        v[next() % n] = top;
        v[next() % n] = top;
      }
      if (trial == 4) v[next() % n] = inf;
      if (trial == 5) v[argmax_by_scan(v)] = nan;  // the maximum's slot NaN: the runner-up wins
      if (trial == 6) std::fill(v.begin(), v.end(), -inf);
      if (trial == 7) {
        std::fill(v.begin(), v.end(), nan);
        if (n > 2) v[n - 2] = -inf;  // all NaN but one -inf: that one
      }
      ASSERT_EQ(argmax(v), argmax_by_scan(v)) << "n " << n << ", trial " << trial;
    }
  }
  EXPECT_EQ(argmax(std::vector<float>(100, nan)), 0);  // nothing to pick: 0
}

TEST(Sampler, EmptyLogitsAreAnError) {
  Sampler s(params_with(0.8f), 1);
  auto r = s.sample(std::span<const float>());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("logits"), std::string::npos);
}

TEST(Sampler, G5_SameSeedSameSequence) {
  std::vector<float> logits(50);
  for (int i = 0; i < 50; ++i) logits[i] = std::sin(i * 0.7f);
  Sampler a(params_with(1.0f), 42), b(params_with(1.0f), 42), c(params_with(1.0f), 43);
  std::vector<int32_t> sa, sb, sc;
  for (int i = 0; i < 200; ++i) {
    sa.push_back(*a.sample(logits));
    sb.push_back(*b.sample(logits));
    sc.push_back(*c.sample(logits));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(Sampler, ResetRestartsTheStream) {
  std::vector<float> logits(20, 0.0f);
  Sampler s(params_with(1.0f), 7);
  std::vector<int32_t> first, second;
  for (int i = 0; i < 50; ++i) first.push_back(*s.sample(logits));
  s.reset(7);
  for (int i = 0; i < 50; ++i) second.push_back(*s.sample(logits));
  EXPECT_EQ(first, second);
}

TEST(Sampler, RngIsPlatformIndependent) {
  // Fixed values pin the PCG32 stream so a change of generator is noticed.
  Rng a(0), b(0);
  EXPECT_EQ(a.next_u32(), b.next_u32());
  Rng r(42);
  std::vector<uint32_t> got;
  for (int i = 0; i < 3; ++i) got.push_back(r.next_u32());
  Rng r2(42);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r2.next_u32(), got[i]);
  for (int i = 0; i < 1000; ++i) {
    const double u = r.next_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
}

TEST(Sampler, TopKOneIsArgmax) {
  SamplerParams p = params_with(1.5f);
  p.top_k = 1;
  Sampler s(p, 9);
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = std::cos(i * 1.3f);
  const int32_t best = argmax(logits);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(*s.sample(logits), best);
}

TEST(Sampler, TopKKeepsTheKMostLikely) {
  SamplerParams p = params_with(1.0f);
  p.top_k = 2;
  Sampler s(p, 1);
  auto d = s.distribution(logits_of({0.1, 0.4, 0.2, 0.3}));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 1);
  EXPECT_EQ(d[1].id, 3);
  EXPECT_NEAR(d[0].prob, 0.4 / 0.7, 1e-6);
  EXPECT_NEAR(d[1].prob, 0.3 / 0.7, 1e-6);
}

TEST(Sampler, TopPKeepsSmallestPrefixReachingP) {
  SamplerParams p = params_with(1.0f);
  p.top_p = 0.75f;  // 0.5 < 0.75, 0.5 + 0.3 >= 0.75: keep two
  Sampler s(p, 1);
  auto d = s.distribution(logits_of({0.3, 0.05, 0.5, 0.15}));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 2);
  EXPECT_EQ(d[1].id, 0);
  EXPECT_NEAR(d[0].prob, 0.5 / 0.8, 1e-6);
  EXPECT_NEAR(d[1].prob, 0.3 / 0.8, 1e-6);

  p.top_p = 0.4f;  // the first token alone reaches it
  ASSERT_TRUE(s.set_params(p).ok());
  d = s.distribution(logits_of({0.3, 0.05, 0.5, 0.15}));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].id, 2);
  EXPECT_DOUBLE_EQ(d[0].prob, 1.0);
}

TEST(Sampler, MinPDropsTokensBelowFractionOfMax) {
  SamplerParams p = params_with(1.0f);
  p.min_p = 0.5f;  // threshold 0.5 * 0.4 = 0.2: keep 0.4, 0.3, 0.22; drop 0.08
  Sampler s(p, 1);
  auto d = s.distribution(logits_of({0.22, 0.08, 0.4, 0.3}));
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].id, 2);
  EXPECT_EQ(d[1].id, 3);
  EXPECT_EQ(d[2].id, 0);
  EXPECT_NEAR(d[2].prob, 0.22 / 0.92, 1e-5);
}

TEST(Sampler, TemperatureSharpensBeforeFilters) {
  // At T = 0.5 the probabilities become p^2 / sum p^2.
  Sampler s(params_with(0.5f), 1);
  auto d = s.distribution(logits_of({0.25, 0.75}));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].id, 1);
  EXPECT_NEAR(d[0].prob, 0.5625 / 0.625, 1e-5);
}

TEST(Sampler, DrawFrequenciesMatchProbabilities) {
  const std::vector<double> probs = {0.5, 0.25, 0.15, 0.1};
  Sampler s(params_with(1.0f), 2024);
  const auto logits = logits_of(probs);
  const int n = 40000;
  std::vector<int> counts(4, 0);
  for (int i = 0; i < n; ++i) counts[*s.sample(logits)]++;
  for (int i = 0; i < 4; ++i) {
    // 5 standard deviations of a binomial: passes for a correct sampler,
    // fails for one that is off by a few percent (e.g. argmax or uniform).
    const double sd = std::sqrt(n * probs[i] * (1 - probs[i]));
    EXPECT_NEAR(counts[i], n * probs[i], 5 * sd) << "token " << i;
  }
}

// The draw reads the kept tokens in the chain's own order (the whole
// vocabulary's weights when nothing is filtered, the kept candidates
// otherwise): each way, frequencies follow distribution().
TEST(Sampler, DrawFrequenciesFollowTheFilteredDistribution) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const std::vector<float> logits = {0.1f, 1.2f, ninf, -0.4f, 0.9f, -2.0f, 0.5f, ninf, -1.0f, 1.0f};
  struct Setting {
    int32_t top_k;
    float top_p, min_p;
  };
  for (const Setting& f : {Setting{0, 1.0f, 0.0f}, Setting{0, 0.7f, 0.0f}, Setting{0, 1.0f, 0.3f},
                           Setting{0, 0.8f, 0.2f}, Setting{4, 0.9f, 0.0f}}) {
    SamplerParams p = params_with(0.9f);
    p.top_k = f.top_k;
    p.top_p = f.top_p;
    p.min_p = f.min_p;
    Sampler s(p, 77);
    std::map<int32_t, double> want;
    for (const TokenProb& t : s.distribution(logits)) want[t.id] = t.prob;
    ASSERT_GE(want.size(), 2u);
    const int n = 30000;
    std::map<int32_t, int> counts;
    for (int i = 0; i < n; ++i) counts[*s.sample(logits)]++;
    for (const auto& [id, c] : counts) EXPECT_TRUE(want.count(id)) << "drew token " << id << ", not kept";
    for (const auto& [id, prob] : want) {
      const double sd = std::sqrt(n * prob * (1 - prob));
      EXPECT_NEAR(counts[id], n * prob, 5 * sd + 1) << "token " << id << ", top_k " << f.top_k << ", top_p "
                                                    << f.top_p << ", min_p " << f.min_p;
    }
  }
}

// Where nothing is filtered, the draw walks the whole vocabulary's weights
// and skips blocks of them at once: on a vocabulary whose mass is spread over
// every block (and a tail shorter than one), each draw is the token where the
// running weight, added one token at a time, first passes u x total, u being
// the sampler's next uniform number.
TEST(Sampler, UnfilteredDrawOverABigVocabularyPicksWhereTheRunningWeightPassesTheDraw) {
  const size_t n = 5000;  // 19 blocks of 256 and a tail of 136
  std::vector<float> logits(n);
  uint32_t x = 7;
  for (float& f : logits) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) / 16777216.0f * 6.0f;
  }
  logits[4990] = 9.0f;  // some mass in the tail
  std::vector<float> weights(n);
  const kernels::ExpWeights w = kernels::exp_weights(logits.data(), 1.0f, weights.data(), static_cast<int64_t>(n));
  Sampler s(params_with(1.0f), 31);
  Rng rng(31);
  std::vector<int> blocks_drawn(n / 256 + 1, 0);
  for (int draw = 0; draw < 3000; ++draw) {
    const double target = rng.next_double() * w.sum;
    double cum = 0.0;
    size_t want = n - 1;
    for (size_t i = 0; i < n; ++i) {
      cum += weights[i];
      if (target < cum) {
        want = i;
        break;
      }
    }
    ASSERT_EQ(*s.sample(logits), static_cast<int32_t>(want)) << "draw " << draw;
    ++blocks_drawn[want / 256];
  }
  for (size_t b = 0; b < blocks_drawn.size(); ++b) EXPECT_GT(blocks_drawn[b], 0) << "block " << b;
}

TEST(Sampler, MaskedLogitsAreNeverDrawn) {
  const float ninf = -std::numeric_limits<float>::infinity();
  Sampler s(params_with(1.0f), 5);
  const std::vector<float> logits = {ninf, 0.0f, ninf, 0.0f};
  for (int i = 0; i < 200; ++i) {
    const int32_t t = *s.sample(logits);
    EXPECT_TRUE(t == 1 || t == 3) << t;
  }
}

TEST(Sampler, RepeatPenaltyLowersRecentTokens) {
  SamplerParams p = params_with(0.0f);
  p.repeat_penalty = 2.0f;
  Sampler s(p, 1);
  // Token 0 leads (2.0 vs 1.5); once seen its logit halves to 1.0.
  const std::vector<float> logits = {2.0f, 1.5f, -1.0f};
  EXPECT_EQ(*s.sample(logits), 0);  // recorded as recent
  EXPECT_EQ(*s.sample(logits), 1);
  // Negative logits are multiplied: token 2 at -1 becomes -2 after accept.
  s.reset(1);
  s.accept(2);
  p.temperature = 1.0f;
  ASSERT_TRUE(s.set_params(p).ok());
  auto d = s.distribution(std::vector<float>{-1.0f, -1.0f, -1.0f});
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[2].id, 2);
  EXPECT_NEAR(d[2].prob, std::exp(-2.0) / (2 * std::exp(-1.0) + std::exp(-2.0)), 1e-5);
}

TEST(Sampler, RepeatPenaltyWindowForgetsOldTokens) {
  SamplerParams p = params_with(0.0f);
  p.repeat_penalty = 10.0f;
  p.repeat_last_n = 2;
  Sampler s(p, 1);
  s.accept(0);
  const std::vector<float> logits = {2.0f, 1.5f, 0.0f};
  EXPECT_EQ(*s.sample(logits), 1);  // 0 penalized to 0.2
  s.accept(2);
  s.accept(2);  // window is now {2, 2}: token 0 forgotten
  EXPECT_EQ(*s.sample(logits), 0);
}

// OpenAI's penalties, as llama.cpp applies them after repeat_penalty: a token
// seen c times in the window loses presence + c * frequency from its logit.
TEST(Sampler, G5_PresenceAndFrequencyPenaltiesSubtractByOccurrence) {
  SamplerParams p = params_with(1.0f);
  p.presence_penalty = 0.5f;
  p.frequency_penalty = 0.25f;
  Sampler s(p, 1);
  s.accept(0);
  for (int i = 0; i < 3; ++i) s.accept(1);
  const std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  // token 0: 1 - 0.5 - 0.25 = 0.25; token 1: 1 - 0.5 - 0.75 = -0.25; tokens 2, 3: 1
  const double z = std::exp(0.25) + std::exp(-0.25) + 2 * std::exp(1.0);
  std::map<int32_t, double> prob;
  for (const TokenProb& t : s.distribution(logits)) prob[t.id] = t.prob;
  EXPECT_NEAR(prob[0], std::exp(0.25) / z, 1e-6);
  EXPECT_NEAR(prob[1], std::exp(-0.25) / z, 1e-6);
  EXPECT_NEAR(prob[2], std::exp(1.0) / z, 1e-6);
  // after repeat_penalty's division: token 0 at 2 -> 2 / 2 - 0.75 = 0.25
  p.repeat_penalty = 2.0f;
  ASSERT_TRUE(s.set_params(p).ok());
  prob.clear();
  for (const TokenProb& t : s.distribution(std::vector<float>{2.0f, 1.0f, 1.0f, 1.0f})) prob[t.id] = t.prob;
  const double z2 = std::exp(0.25) + std::exp(-0.75) + 2 * std::exp(1.0);  // token 1: 1 / 2 - 0.5 - 0.75
  EXPECT_NEAR(prob[0], std::exp(0.25) / z2, 1e-6);
  EXPECT_NEAR(prob[1], std::exp(-0.75) / z2, 1e-6);
  // negative penalties favour what was seen; the window forgets as repeat_penalty's does
  p = params_with(0.0f);
  p.presence_penalty = -2.0f;
  p.repeat_last_n = 2;
  Sampler favour(p, 1);
  favour.accept(3);
  const std::vector<float> flat = {1.0f, 2.5f, 0.0f, 1.0f};
  EXPECT_EQ(*favour.sample(flat), 3);  // 1 + 2 = 3 beats 2.5; token 3 recorded again
  favour.accept(0);
  favour.accept(0);  // the window is {0, 0}: token 3 forgotten, token 0 at 3
  EXPECT_EQ(*favour.sample(flat), 0);
}

// logit_bias (OpenAI's, llama.cpp's --logit-bias) is added before the
// penalties; -inf bans a token, even one whose logit is +inf.
TEST(Sampler, G5_LogitBiasShiftsOrBansTokens) {
  SamplerParams p = params_with(1.0f);
  p.logit_bias = {{1, 1.5f}, {2, -0.5f}, {1, 0.5f}};  // token 1 named twice: both added
  Sampler s(p, 1);
  std::map<int32_t, double> prob;
  for (const TokenProb& t : s.distribution(std::vector<float>{1.0f, 1.0f, 1.0f})) prob[t.id] = t.prob;
  const double z = std::exp(1.0) + std::exp(3.0) + std::exp(0.5);
  EXPECT_NEAR(prob[0], std::exp(1.0) / z, 1e-6);
  EXPECT_NEAR(prob[1], std::exp(3.0) / z, 1e-6);
  EXPECT_NEAR(prob[2], std::exp(0.5) / z, 1e-6);
  // before repeat_penalty: token 0 at 1 + 3 = 4, halved to 2 once seen
  p.logit_bias = {{0, 3.0f}};
  p.repeat_penalty = 2.0f;
  ASSERT_TRUE(s.set_params(p).ok());
  s.accept(0);
  prob.clear();
  for (const TokenProb& t : s.distribution(std::vector<float>{1.0f, 1.0f, 1.0f})) prob[t.id] = t.prob;
  EXPECT_NEAR(prob[0], std::exp(2.0) / (std::exp(2.0) + 2 * std::exp(1.0)), 1e-6);
  // banned, greedy and sampled, whatever its logit
  const float inf = std::numeric_limits<float>::infinity();
  for (float temperature : {0.0f, 1.0f}) {
    SamplerParams ban = params_with(temperature);
    ban.logit_bias = {{0, -inf}};
    Sampler b(ban, 3);
    for (int i = 0; i < 50; ++i) EXPECT_NE(*b.sample(std::vector<float>{inf, 1.0f, 0.5f}), 0);
  }
  // a token beyond the vocabulary is an error that names it
  SamplerParams beyond = params_with(0.0f);
  beyond.logit_bias = {{3, 1.0f}};
  Sampler out(beyond, 1);
  auto r = out.sample(std::vector<float>{1.0f, 2.0f, 3.0f});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "logit_bias names token 3, beyond the vocabulary of 3 tokens");
}

TEST(Sampler, G5_ValidationRejectsOutOfRange) {
  SamplerParams p;
  p.temperature = -0.1f;
  auto r = Sampler::create(p, 1);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("temperature"), std::string::npos);
  EXPECT_NE(r.status().message().find("-0.1"), std::string::npos);

  p = SamplerParams();
  p.top_p = 0.0f;
  EXPECT_FALSE(validate_sampler_params(p).ok());
  p.top_p = 1.5f;
  EXPECT_FALSE(validate_sampler_params(p).ok());
  p = SamplerParams();
  p.min_p = -0.1f;
  EXPECT_FALSE(validate_sampler_params(p).ok());
  p = SamplerParams();
  p.top_k = -1;
  EXPECT_FALSE(validate_sampler_params(p).ok());
  p = SamplerParams();
  p.repeat_penalty = 0.0f;
  EXPECT_FALSE(validate_sampler_params(p).ok());
  for (float bad : {2.5f, -2.01f, std::numeric_limits<float>::quiet_NaN()}) {
    p = SamplerParams();
    p.presence_penalty = bad;
    EXPECT_NE(validate_sampler_params(p).message().find("presence_penalty must be in [-2, 2]"), std::string::npos);
    p = SamplerParams();
    p.frequency_penalty = bad;
    EXPECT_NE(validate_sampler_params(p).message().find("frequency_penalty must be in [-2, 2]"), std::string::npos);
  }
  p = SamplerParams();
  p.presence_penalty = -2.0f, p.frequency_penalty = 2.0f;
  EXPECT_TRUE(validate_sampler_params(p).ok());
  p = SamplerParams();
  p.logit_bias = {{-1, 1.0f}};
  EXPECT_NE(validate_sampler_params(p).message().find("logit_bias: token ids are >= 0, got -1"), std::string::npos);
  for (float bad : {100.5f, std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()}) {
    p.logit_bias = {{4, bad}};
    EXPECT_NE(validate_sampler_params(p).message().find("logit_bias of token 4 must be in [-100, 100] or -inf"),
              std::string::npos);
  }
  p.logit_bias = {{4, -std::numeric_limits<float>::infinity()}, {5, -100.0f}};
  EXPECT_TRUE(validate_sampler_params(p).ok());
  p = SamplerParams();
  p.temperature = 0.0f;
  EXPECT_TRUE(validate_sampler_params(p).ok());
  p.temperature = 100.0f;
  EXPECT_TRUE(validate_sampler_params(p).ok());
}

}  // namespace
}  // namespace llmpack

namespace llmpack {
namespace {

// The chain as the contract states it, by a full sort: the filters are
// checked against this on big vocabularies (the sampler itself sorts only
// the part it keeps).
std::vector<TokenProb> chain_by_full_sort(const std::vector<float>& logits, const SamplerParams& p) {
  struct C {
    int32_t id;
    float logit;
  };
  // top-n-sigma first: max - n x the population standard deviation of the finite logits
  double threshold = -std::numeric_limits<double>::infinity();
  const bool any_inf = std::find(logits.begin(), logits.end(), std::numeric_limits<float>::infinity()) != logits.end();
  if (p.top_n_sigma > 0.0f && !any_inf) {
    float mx = -std::numeric_limits<float>::infinity();
    double sum = 0, var = 0;
    size_t n = 0;
    for (float x : logits)
      if (std::isfinite(x)) mx = std::max(mx, x), sum += x, ++n;
    const double mean = sum / n;
    for (float x : logits)
      if (std::isfinite(x)) var += (x - mean) * (x - mean);
    threshold = mx - p.top_n_sigma * std::sqrt(var / n);
  }
  std::vector<C> c;
  for (size_t i = 0; i < logits.size(); ++i)
    if (logits[i] != -std::numeric_limits<float>::infinity() && !(logits[i] < threshold))
      c.push_back({int32_t(i), logits[i] * (1.0f / p.temperature)});
  std::sort(c.begin(), c.end(), [](const C& a, const C& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); });
  if (p.top_k > 0 && size_t(p.top_k) < c.size()) c.resize(p.top_k);
  std::vector<double> prob(c.size());
  double sum = 0;
  for (size_t i = 0; i < c.size(); ++i) sum += prob[i] = c[i].logit == c[0].logit ? 1.0 : std::exp(double(c[i].logit) - c[0].logit);
  for (double& v : prob) v /= sum;
  size_t keep = c.size();
  if (p.top_p < 1.0f) {
    double cum = 0;
    for (size_t i = 0; i < c.size(); ++i)
      if ((cum += prob[i]) >= p.top_p) {
        keep = i + 1;
        break;
      }
  }
  if (p.min_p > 0.0f) {
    size_t m = 1;
    while (m < keep && prob[m] >= p.min_p * prob[0]) ++m;
    keep = m;
  }
  double kept = 0;
  for (size_t i = 0; i < keep; ++i) kept += prob[i];
  std::vector<TokenProb> out;  // in logit order, so equal probabilities stay in logit order
  for (size_t i = 0; i < keep; ++i) out.push_back({c[i].id, prob[i] / kept});
  std::stable_sort(out.begin(), out.end(), [](const TokenProb& a, const TokenProb& b) { return a.prob > b.prob; });
  return out;
}

// Vocabularies of 32000 tokens: flat, peaked (a few tokens far above), with
// runs of equal logits, with masked tokens, and with one +inf logit.
std::vector<std::vector<float>> big_vocabularies() {
  std::vector<std::vector<float>> out;
  for (float spread : {0.3f, 2.0f, 6.0f}) {
    std::vector<float> v(32000);
    uint32_t x = 12345;
    for (auto& f : v) {
      x = x * 1664525u + 1013904223u;
      f = spread * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 6.0f;
    }
    out.push_back(v);
    auto peaked = v;
    for (int i = 0; i < 5; ++i) peaked[i * 977] += 20.0f - i;
    out.push_back(peaked);
    auto ties = v;
    for (size_t i = 0; i < ties.size(); ++i) ties[i] = std::round(ties[i] * 2.0f) / 2.0f;
    out.push_back(ties);
  }
  auto masked = out[1];
  for (size_t i = 0; i < masked.size(); i += 3) masked[i] = -std::numeric_limits<float>::infinity();
  out.push_back(masked);
  auto inf = out[0];
  inf[31999] = std::numeric_limits<float>::infinity();
  out.push_back(inf);
  return out;
}

TEST(Sampler, G5_FiltersOnABigVocabularyMatchAFullSort) {
  struct Setting {
    int32_t top_k;
    float top_p, min_p, temperature, top_n_sigma = 0.0f;
  };
  const Setting settings[] = {{0, 1.0f, 0.0f, 0.8f},   {0, 0.9f, 0.0f, 0.8f},  {0, 0.5f, 0.0f, 1.3f},
                              {0, 0.999f, 0.0f, 1.0f}, {0, 0.05f, 0.0f, 1.0f}, {40, 1.0f, 0.0f, 0.7f},
                              {40, 0.9f, 0.0f, 1.0f},  {0, 1.0f, 0.05f, 0.8f}, {0, 0.95f, 0.02f, 1.0f},
                              {200, 0.9f, 0.1f, 1.5f}, {31000, 0.7f, 0.0f, 2.0f},
                              {0, 1.0f, 0.0f, 1.0f, 1.0f}, {0, 0.9f, 0.0f, 1.5f, 2.0f}, {40, 1.0f, 0.0f, 0.8f, 0.5f},
                              {0, 1.0f, 0.05f, 1.0f, 1.5f}};
  const auto vocabularies = big_vocabularies();
  for (size_t v = 0; v < vocabularies.size(); ++v) {
    for (const Setting& s : settings) {
      SamplerParams p = params_with(s.temperature);
      p.top_k = s.top_k;
      p.top_p = s.top_p;
      p.min_p = s.min_p;
      p.top_n_sigma = s.top_n_sigma;
      const Sampler sampler(p, 1);
      const auto got = sampler.distribution(vocabularies[v]);
      const auto want = chain_by_full_sort(vocabularies[v], p);
      const std::string where = "vocabulary " + std::to_string(v) + ", top_k " + std::to_string(s.top_k) +
                                ", top_p " + std::to_string(s.top_p) + ", min_p " + std::to_string(s.min_p) +
                                ", top_n_sigma " + std::to_string(s.top_n_sigma);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].id, want[i].id) << where << ", rank " << i;
        ASSERT_NEAR(got[i].prob, want[i].prob, 1e-12 + 2e-6 * want[i].prob) << where << ", rank " << i;
      }
    }
  }
}

// llama.cpp's top-n-sigma: tokens below max - n x std of the finite logits are
// dropped before the other filters, whatever the temperature.
TEST(Sampler, G5_TopNSigmaKeepsTheTokensNearTheTop) {
  const float ninf = -std::numeric_limits<float>::infinity();
  // finite logits 4, 2, 0, -2: mean 1, standard deviation sqrt(5) = 2.236
  const std::vector<float> logits = {4.0f, 2.0f, ninf, 0.0f, -2.0f};
  for (float temperature : {1.0f, 2.0f}) {
    SamplerParams p = params_with(temperature);
    p.top_n_sigma = 1.0f;  // threshold 1.76: tokens 0 and 1
    auto d = Sampler(p, 1).distribution(logits);
    ASSERT_EQ(d.size(), 2u) << temperature;
    EXPECT_EQ(d[0].id, 0);
    EXPECT_EQ(d[1].id, 1);
    EXPECT_NEAR(d[0].prob, 1.0 / (1.0 + std::exp(-2.0 / temperature)), 1e-6);
    p.top_n_sigma = 0.5f;  // threshold 2.88: token 0 alone
    EXPECT_EQ(Sampler(p, 1).distribution(logits).size(), 1u);
    p.top_n_sigma = 1.35f;  // threshold 0.98
    EXPECT_EQ(Sampler(p, 1).distribution(logits).size(), 2u);
    p.top_n_sigma = 1.4f;  // threshold 0.87
    EXPECT_EQ(Sampler(p, 1).distribution(logits).size(), 2u);
    p.top_n_sigma = 2.0f;  // threshold -0.47: token 3 (0) too
    EXPECT_EQ(Sampler(p, 1).distribution(logits).size(), 3u);
  }
  // an infinite logit: nothing masked by it (the infinite one takes every probability)
  SamplerParams p = params_with(1.0f);
  p.top_n_sigma = 0.1f;
  const std::vector<float> with_inf = {1.0f, std::numeric_limits<float>::infinity(), 0.0f};
  auto inf = Sampler(p, 1).distribution(with_inf);
  p.top_n_sigma = 0.0f;
  auto inf_off = Sampler(p, 1).distribution(with_inf);
  ASSERT_EQ(inf.size(), inf_off.size());
  for (size_t i = 0; i < inf.size(); ++i) EXPECT_EQ(inf[i].id, inf_off[i].id);
  EXPECT_EQ(inf[0].id, 1);
  EXPECT_EQ(inf[0].prob, 1.0);
  // sampling draws only kept tokens
  p.top_n_sigma = 1.0f;
  Sampler s(p, 7);
  for (int i = 0; i < 100; ++i) {
    const int32_t t = *s.sample(logits);
    EXPECT_TRUE(t == 0 || t == 1) << t;
  }
  p.top_n_sigma = -1.0f;
  EXPECT_NE(validate_sampler_params(p).message().find("top_n_sigma must be a finite number >= 0"), std::string::npos);
}

// A trained model's shape: a few tokens far above a bulk that lies 15-40
// logits below them, so the bulk straddles the last top-p bin's edge (the
// tokens there are binned in vectors, clamped at the last bin). Cuts among
// the top tokens and deep in the bulk keep what the full sort keeps.
TEST(Sampler, TopPOnATrainedModelsShapeMatchesAFullSort) {
  std::vector<float> logits(40000);
  uint32_t x = 4242;
  for (float& f : logits) {
    x = x * 1664525u + 1013904223u;
    f = (static_cast<float>(x >> 8) / 16777216.0f - 0.5f) * 18.0f;  // the bulk: -9..9
  }
  logits[31] = 22.0f;
  logits[20000] = 21.5f;
  logits[39990] = 21.0f;
  logits[7] = -std::numeric_limits<float>::infinity();
  for (float temperature : {0.6f, 0.8f, 1.0f}) {
    for (float top_p : {0.5f, 0.9f, 0.999f, 0.99999f, 0.9999999f}) {
      SamplerParams p = params_with(temperature);
      p.top_p = top_p;
      const auto got = Sampler(p, 1).distribution(logits);
      const auto want = chain_by_full_sort(logits, p);
      const std::string where = "temperature " + std::to_string(temperature) + ", top_p " + std::to_string(top_p);
      ASSERT_EQ(got.size(), want.size()) << where;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_EQ(got[i].id, want[i].id) << where << ", rank " << i;
        ASSERT_NEAR(got[i].prob, want[i].prob, 1e-12 + 2e-6 * want[i].prob) << where << ", rank " << i;
      }
    }
  }
}

// Logits a broken or extreme model can produce (NaN, +-inf, +-3e38, denormals,
// long runs of one value) under settings from greedy to extreme temperatures:
// every draw is a token of the vocabulary, one the chain kept
// (distribution()), never a masked one (NaN, or -inf after the penalty) while
// any other is left, and greedy or top-k 1 draws the argmax. Deterministic
// pseudo-random cases, so a failure names one that can be replayed.
TEST(Sampler, ExtremeLogitsAndSettingsAlwaysDrawAKeptToken) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {nan, inf, -inf, 3e38f, -3e38f, 1e-40f, -1e-40f, 0.0f, 88.0f, -88.0f};
  const float temperatures[] = {0.0f, 1e-30f, 0.01f, 0.8f, 2.0f, 1e30f};
  const int32_t top_ks[] = {0, 0, 1, 5, 40};
  const float top_ps[] = {1.0f, 1.0f, 0.9f, 0.5f, 1e-6f};
  const float min_ps[] = {0.0f, 0.0f, 0.05f, 1.0f};
  const float penalties[] = {1.0f, 1.3f, 100.0f, 0.01f};
  const float additive[] = {0.0f, 0.0f, 1.5f, -2.0f};
  uint32_t x = 2026;
  const auto next = [&] { return x = x * 1664525u + 1013904223u; };
  for (int c = 0; c < 1500; ++c) {
    const size_t n = 1 + next() % (c % 10 == 0 ? 40000 : 300);
    std::vector<float> logits(n);
    const uint32_t mode = next() % 4;  // 0 normal-ish, 1 with specials, 2 one repeated value, 3 mostly specials
    const float repeated = specials[next() % 10];
    for (float& f : logits) {
      const float plain = (static_cast<float>(next() >> 8) / 16777216.0f - 0.5f) * 40.0f;
      const bool special = mode == 3 ? next() % 4 != 0 : mode == 1 && next() % 8 == 0;
      f = mode == 2 ? repeated : special ? specials[next() % 10] : plain;
    }
    SamplerParams p;
    p.temperature = temperatures[next() % 6];
    p.top_k = top_ks[next() % 5];
    p.top_p = top_ps[next() % 5];
    p.min_p = min_ps[next() % 4];
    p.repeat_penalty = penalties[next() % 4];
    p.presence_penalty = additive[next() % 4];
    p.frequency_penalty = additive[next() % 4];
    const float biases[] = {0.0f, 3.0f, -7.5f, -std::numeric_limits<float>::infinity()};
    for (uint32_t b = next() % 3; b > 0; --b)
      p.logit_bias.push_back({static_cast<int32_t>(next() % n), biases[next() % 4]});
    p.repeat_last_n = 8;
    Sampler s(p, c);
    std::vector<int32_t> recent;
    for (int k = 0; k < 3; ++k) {
      recent.push_back(static_cast<int32_t>(next() % n));
      s.accept(recent.back());
    }
    // the penalties as specified: each distinct recent token's logit divided by
    // repeat_penalty when positive, multiplied when not, then less presence +
    // count x frequency (a masked one stays masked)
    std::vector<float> penalized = logits;
    for (const LogitBias& b : p.logit_bias)
      penalized[b.id] = b.bias == -std::numeric_limits<float>::infinity() ? b.bias : penalized[b.id] + b.bias;
    std::map<int32_t, int> counts;
    for (int32_t id : recent) ++counts[id];
    for (const auto& [id, count] : counts) {
      float& v = penalized[id];
      if (std::isnan(v) || v == -std::numeric_limits<float>::infinity()) continue;
      v = v > 0.0f ? v / p.repeat_penalty : v * p.repeat_penalty;
      v -= p.presence_penalty + static_cast<float>(count) * p.frequency_penalty;
    }
    const auto drawable = [](float v) { return !std::isnan(v) && v != -std::numeric_limits<float>::infinity(); };
    const bool any_drawable = std::any_of(penalized.begin(), penalized.end(), drawable);
    const std::string where = "case " + std::to_string(c) + " (n " + std::to_string(n) + ", mode " +
                              std::to_string(mode) + ", temperature " + std::to_string(p.temperature) + ", top_k " +
                              std::to_string(p.top_k) + ", top_p " + std::to_string(p.top_p) + ", min_p " +
                              std::to_string(p.min_p) + ", penalty " + std::to_string(p.repeat_penalty) + ", presence " +
                              std::to_string(p.presence_penalty) + ", frequency " + std::to_string(p.frequency_penalty) + ")";
    const auto dist = s.distribution(logits);
    ASSERT_FALSE(dist.empty()) << where;
    double total = 0.0;
    std::vector<bool> kept(n, false);
    for (const TokenProb& t : dist) {
      ASSERT_TRUE(t.id >= 0 && static_cast<size_t>(t.id) < n) << where << ": id " << t.id;
      ASSERT_FALSE(kept[t.id]) << where << ": id " << t.id << " twice";
      kept[t.id] = true;
      ASSERT_TRUE(t.prob >= 0.0 && t.prob <= 1.0) << where << ": prob " << t.prob;
      if (any_drawable) {
        ASSERT_TRUE(drawable(penalized[t.id])) << where << ": kept masked id " << t.id;
      }
      total += t.prob;
    }
    ASSERT_NEAR(total, 1.0, 1e-5) << where;
    // an infinite scaled logit leaves no probability to finite ones
    std::vector<float> scaled = penalized;
    for (float& v : scaled) v *= p.temperature > 0.0f ? 1.0f / p.temperature : 1.0f;
    const bool infinite = p.temperature > 0.0f && std::find(scaled.begin(), scaled.end(), inf) != scaled.end();
    for (const TokenProb& t : dist) {
      if (infinite && t.prob > 0.0) {
        ASSERT_EQ(scaled[t.id], inf) << where << ": finite id " << t.id << " kept";
      }
    }
    auto token = s.sample(logits);
    ASSERT_TRUE(token.ok()) << where << ": " << token.status().message();
    ASSERT_TRUE(*token >= 0 && static_cast<size_t>(*token) < n) << where << ": token " << *token;
    ASSERT_TRUE(kept[*token]) << where << ": drew " << *token << ", which the chain did not keep";
    if (infinite) {
      ASSERT_EQ(scaled[*token], inf) << where << ": drew finite " << *token;
    }
    if (p.temperature == 0.0f) {
      ASSERT_EQ(*token, argmax(penalized)) << where;
    } else if (p.top_k == 1) {  // the most likely after scaling: a product past float's range ties with +inf
      ASSERT_EQ(*token, argmax(scaled)) << where;
    }
  }
}

}  // namespace
}  // namespace llmpack
