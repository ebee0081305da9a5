// GenerationConfig budget rules and validation (G1), Stats arithmetic (S2)
// and the PyTorchObserver key order (S1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "runner/harness.h"
#include "runner/stats.h"

namespace llmpack::testing {
namespace {

int64_t budget(int32_t max_new, int32_t seq_len, int64_t C, int64_t occupied) {
  GenerationConfig c;
  c.max_new_tokens = max_new;
  c.seq_len = seq_len;
  auto r = c.resolve_max_new_tokens(C, occupied);
  return r.ok() ? *r : -999;
}

TEST(Config, G1_Defaults) {
  GenerationConfig c;
  EXPECT_TRUE(c.echo);
  EXPECT_EQ(c.max_new_tokens, -1);
  EXPECT_EQ(c.seq_len, -1);
  EXPECT_FLOAT_EQ(c.temperature, 0.8f);
  EXPECT_EQ(c.top_k, 0);
  EXPECT_FLOAT_EQ(c.top_p, 1.0f);
  EXPECT_FLOAT_EQ(c.min_p, 0.0f);
  EXPECT_FLOAT_EQ(c.repeat_penalty, 1.0f);
  EXPECT_FALSE(c.seed.has_value());
  EXPECT_FALSE(c.ignore_eos);
  EXPECT_FALSE(c.warming);
  EXPECT_EQ(c.num_bos, -1);
  EXPECT_EQ(c.num_eos, 0);
  EXPECT_TRUE(c.stop.empty());
  EXPECT_TRUE(c.validate().ok());
}

TEST(Config, G1_BudgetBothUnsetIsContextMinusPos) {
  EXPECT_EQ(budget(-1, -1, 512, 100), 412);
}

TEST(Config, G1_BudgetOnlyMaxNewTokens) {
  EXPECT_EQ(budget(50, -1, 512, 100), 50);
  EXPECT_EQ(budget(500, -1, 512, 100), 412);
}

TEST(Config, G1_BudgetOnlySeqLen) {
  EXPECT_EQ(budget(-1, 300, 512, 100), 200);
  EXPECT_EQ(budget(-1, 1000, 512, 100), 412);  // capped by C
}

TEST(Config, G1_BudgetBothGivesTheSmaller) {
  EXPECT_EQ(budget(50, 300, 512, 100), 50);
  EXPECT_EQ(budget(250, 300, 512, 100), 200);
  EXPECT_EQ(budget(450, 1000, 512, 100), 412);
}

TEST(Config, G1_BudgetAtOrBelowZeroIsAnError) {
  GenerationConfig c;
  c.max_new_tokens = 0;
  auto r = c.resolve_max_new_tokens(512, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("budget 0"), std::string::npos) << r.status().message();
  c = GenerationConfig();
  c.seq_len = 80;
  r = c.resolve_max_new_tokens(512, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("budget -20"), std::string::npos) << r.status().message();
  EXPECT_EQ(budget(-1, -1, 512, 512), -999);
}

TEST(Config, G8_ValidationMessagesNameFieldAndValue) {
  GenerationConfig c;
  c.max_new_tokens = -2;
  Status s = c.validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_new_tokens"), std::string::npos);
  EXPECT_NE(s.message().find("-2"), std::string::npos);
  c = GenerationConfig();
  c.seq_len = -5;
  EXPECT_FALSE(c.validate().ok());
  c = GenerationConfig();
  c.num_bos = -2;
  EXPECT_FALSE(c.validate().ok());
  c = GenerationConfig();
  c.num_eos = -1;
  EXPECT_FALSE(c.validate().ok());
  c = GenerationConfig();
  c.stop = {"ok", ""};
  EXPECT_FALSE(c.validate().ok());
  c = GenerationConfig();
  c.min_p = 2.0f;
  s = c.validate();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("min_p"), std::string::npos);
  c = GenerationConfig();
  c.temperature = 0.0f;
  EXPECT_TRUE(c.validate().ok());
}

TEST(Stats, S1_PyTorchObserverKeysInOrder) {
  Stats s;
  s.num_prompt_tokens = 4;
  s.num_generated_tokens = 3;
  const auto j = nlohmann::ordered_json::parse(s.to_json_string());
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  const std::vector<std::string> want = {
      "prefill_token_per_sec", "decode_token_per_sec", "prompt_tokens", "generated_tokens",
      "model_load_start_ms", "model_load_end_ms", "inference_start_ms", "inference_end_ms",
      "model_execution_start_ms", "model_execution_end_ms", "prompt_eval_end_ms", "first_token_ms",
      "aggregate_sampling_time_ms", "aggregate_model_execution_time_ms", "SCALING_FACTOR_UNITS_PER_SECOND"};
  EXPECT_EQ(keys, want);
  EXPECT_EQ(j["SCALING_FACTOR_UNITS_PER_SECOND"], 1000);
  EXPECT_EQ(j["prompt_tokens"], 4);
  EXPECT_EQ(j["generated_tokens"], 3);
}

TEST(Stats, S2_RatesFromHandMadeTimestamps) {
  Stats s;
  s.model_load_start_ms = 500;
  s.model_load_end_ms = 900;
  s.inference_start_ms = 1000;
  s.prompt_eval_end_ms = 1100;  // 10 prompt tokens in 100 ms
  s.first_token_ms = 1150;
  s.inference_end_ms = 2150;    // 10 decode tokens in 1000 ms
  s.num_prompt_tokens = 10;
  s.num_generated_tokens = 11;
  s.aggregate_sampling_time_ms = 25;
  EXPECT_DOUBLE_EQ(s.prefill_tokens_per_second(), 100.0);
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_second(), 10.0);
  const auto j = nlohmann::json::parse(s.to_json_string());
  EXPECT_DOUBLE_EQ(j["prefill_token_per_sec"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j["decode_token_per_sec"].get<double>(), 10.0);
  const std::string r = s.report();
  EXPECT_NE(r.find("Prompt tokens: 10"), std::string::npos) << r;
  EXPECT_NE(r.find("Generated tokens: 11"), std::string::npos) << r;
  EXPECT_NE(r.find("Model load time: 0.400 s"), std::string::npos) << r;
  EXPECT_NE(r.find("Total inference time: 1.150 s"), std::string::npos) << r;
  EXPECT_NE(r.find("Prompt evaluation: 0.100 s (100.00 tokens/s)"), std::string::npos) << r;
  EXPECT_NE(r.find("Generation: 1.000 s (10.00 tokens/s"), std::string::npos) << r;
  EXPECT_NE(r.find("Time to first token: 0.150 s"), std::string::npos) << r;
  EXPECT_NE(r.find("Sampling time: 0.025 s"), std::string::npos) << r;
}

TEST(Stats, S2_D9_ZeroSpansGiveZeroRatesNotInfinity) {
  Stats s;
  s.num_prompt_tokens = 5;
  s.num_generated_tokens = 1;
  EXPECT_EQ(s.prefill_tokens_per_second(), 0.0);
  EXPECT_EQ(s.decode_tokens_per_second(), 0.0);
  EXPECT_NO_THROW(nlohmann::json::parse(s.to_json_string()));
}

// A clock that advances 1 ms each time it is read.
struct TickingClock {
  std::shared_ptr<double> t = std::make_shared<double>(1'000'000.0);
  double operator()() const { return *t += 1.0; }
};

TEST(Stats, S2_RunnerStatsFollowTheArithmetic) {
  Harness h(dynamic_kv(128, 512));
  h.runner->set_clock(TickingClock());
  GenerationConfig c = greedy(6);
  c.echo = true;
  ASSERT_TRUE(h.generate("hello", c).ok());
  ASSERT_EQ(h.stats.size(), 1u);
  const Stats& s = h.stats[0];
  // Every generated token emitted, the echo excluded, prefill's token included.
  EXPECT_EQ(s.num_generated_tokens, static_cast<int64_t>(h.pieces.size()) - 1);
  EXPECT_EQ(s.num_generated_tokens, 6);
  EXPECT_EQ(s.num_prompt_tokens, 6);
  EXPECT_LT(s.model_load_start_ms, s.model_load_end_ms);
  EXPECT_LE(s.model_load_end_ms, s.inference_start_ms);
  EXPECT_LT(s.inference_start_ms, s.model_execution_start_ms);
  EXPECT_LT(s.model_execution_start_ms, s.prompt_eval_end_ms);
  EXPECT_LT(s.prompt_eval_end_ms, s.first_token_ms);
  EXPECT_LT(s.first_token_ms, s.model_execution_end_ms);
  EXPECT_LT(s.model_execution_end_ms, s.inference_end_ms);
  // 6 forward calls, each read the clock before and after: 1 ms each.
  EXPECT_EQ(s.aggregate_model_execution_time_ms, 6);
  // 6 samples, 1 ms each.
  EXPECT_EQ(s.aggregate_sampling_time_ms, 6);
  EXPECT_DOUBLE_EQ(s.decode_tokens_per_second(), 5.0 * 1000.0 / (s.inference_end_ms - s.first_token_ms));
  EXPECT_DOUBLE_EQ(s.prefill_tokens_per_second(), 6.0 * 1000.0 / (s.prompt_eval_end_ms - s.inference_start_ms));
  EXPECT_EQ(h.runner->stats().num_generated_tokens, 6);
}

}  // namespace
}  // namespace llmpack::testing
