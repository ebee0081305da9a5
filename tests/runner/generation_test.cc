// Generation behaviour with the fakes (CONTRACT G2-G8, R9).
#include <gtest/gtest.h>

#include <algorithm>

#include <atomic>
#include <thread>

#include "core/utf8.h"
#include "runner/harness.h"
#include "runner/stop_string_filter.h"

namespace llmpack::testing {
namespace {

constexpr const char* kPrompt = "hi there";  // BOS + 8 tokens = 9 positions
constexpr int64_t kP = 9;

TEST(Generation, G2_CallbackFiresMaxNewTokensTimesPlusEcho) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(5);
  c.echo = true;
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  ASSERT_EQ(h.pieces.size(), 6u);
  EXPECT_EQ(h.pieces[0], kPrompt);
  for (size_t i = 1; i < 6; ++i) EXPECT_EQ(h.pieces[i].size(), 1u) << i;
  ASSERT_EQ(h.stats.size(), 1u);
  EXPECT_EQ(h.stats[0].num_generated_tokens, 5);
  EXPECT_EQ(h.stats[0].num_prompt_tokens, kP);
  EXPECT_EQ(h.program->calls.size(), 5u);  // prefill + 4 decode steps
}

TEST(Generation, G2_WithoutEchoOnlyGeneratedPieces) {
  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.generate(kPrompt, greedy(7)).ok());
  EXPECT_EQ(h.pieces.size(), 7u);
  EXPECT_EQ(h.text(false).find(kPrompt), std::string::npos);
}

TEST(Generation, G1_DefaultBosFollowsTokenizerRule) {
  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.generate(kPrompt, greedy(1)).ok());
  ASSERT_EQ(h.program->calls.size(), 1u);
  EXPECT_EQ(h.program->calls[0].tokens.front(), kBos);
  EXPECT_EQ(h.program->calls[0].tokens.size(), 9u);
  // num_eos appends EOS ids; num_bos 2 adds two BOS.
  Harness h2(dynamic_kv(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 2;
  c.num_eos = 1;
  ASSERT_TRUE(h2.generate(kPrompt, c).ok());
  const auto& t = h2.program->calls[0].tokens;
  ASSERT_EQ(t.size(), 11u);
  EXPECT_EQ(t[0], kBos);
  EXPECT_EQ(t[1], kBos);
  EXPECT_EQ(t.back(), kEos);
}

TEST(Generation, G1_BudgetFromContextWhenUnset) {
  Harness h(dynamic_kv(16, 32));
  GenerationConfig c = greedy(-1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate("abcd", c).ok());
  EXPECT_EQ(h.pieces.size(), 28u);  // C - P = 32 - 4
  // Last decode writes position 4 + 26 = 30 <= C - 1.
  EXPECT_EQ(h.program->calls.back().start_pos, 30);
}

TEST(Generation, G1_SeqLenLimitsPromptPlusOutput) {
  Harness h(dynamic_kv(16, 64));
  GenerationConfig c = greedy(-1);
  c.num_bos = 0;
  c.seq_len = 10;
  ASSERT_TRUE(h.generate("abcd", c).ok());
  EXPECT_EQ(h.pieces.size(), 6u);
}

TEST(Generation, G1_BudgetZeroIsAnErrorBeforeAnyCall) {
  Harness h(dynamic_kv(16, 64));
  GenerationConfig c = greedy(0);
  Status s = h.generate("abcd", c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("budget 0"), std::string::npos) << s.message();
  c = greedy(-1);
  c.num_bos = 0;
  c.seq_len = 4;  // the prompt alone fills it
  s = h.generate("abcd", c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("seq_len 4"), std::string::npos) << s.message();
  EXPECT_TRUE(h.program->calls.empty());
}

// D5: num_bos = -1 (the model's rule) puts BOS at position 0 only: the
// prompt of a second generate() continues the sequence without one.
TEST(Generation, D5_ContinuationPromptGetsNoBos) {
  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.generate(kPrompt, greedy(2)).ok());
  ASSERT_EQ(h.program->calls.front().tokens.front(), kBos);
  const int64_t pos = h.runner->position();
  const size_t before = h.program->calls.size();
  ASSERT_TRUE(h.generate(kPrompt, greedy(2)).ok());
  ASSERT_GT(h.program->calls.size(), before);
  const auto& prompt_call = h.program->calls[before];
  EXPECT_GE(prompt_call.start_pos, pos - 1);
  const std::vector<int64_t> prompt_ids = [] {
    std::vector<int64_t> ids;
    for (const char* c = kPrompt; *c != 0; ++c) ids.push_back(char_id(*c));
    return ids;
  }();
  // the call ends with the prompt's 8 tokens, and no BOS is anywhere in it
  ASSERT_GE(prompt_call.tokens.size(), prompt_ids.size());
  EXPECT_TRUE(std::equal(prompt_ids.begin(), prompt_ids.end(), prompt_call.tokens.end() - prompt_ids.size()));
  EXPECT_EQ(std::count(prompt_call.tokens.begin(), prompt_call.tokens.end(), int64_t{kBos}), 0);
}

TEST(Generation, G3_EosAsFirstGeneratedTokenEndsAtOnce) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kEos;
  GenerationConfig c = greedy(10);
  c.echo = true;
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  ASSERT_EQ(h.pieces.size(), 1u);  // the echo only
  EXPECT_EQ(h.program->calls.size(), 1u);
  EXPECT_EQ(h.stats[0].num_generated_tokens, 0);
}

TEST(Generation, G3_EosSetIsProgramTokenizerAndEndOfTurn) {
  Harness probe(dynamic_kv(128, 512));
  ASSERT_TRUE(probe.runner->load().ok());
  EXPECT_EQ(probe.runner->eos_ids(), (std::vector<int32_t>{kEos, kEot, kProgramEos}));
  for (int32_t eos : {kEos, kEot, kProgramEos}) {
    Harness h(dynamic_kv(128, 512));
    h.program->forced[kP + 2] = eos;  // after three generated tokens
    ASSERT_TRUE(h.generate(kPrompt, greedy(10)).ok()) << eos;
    EXPECT_EQ(h.pieces.size(), 3u) << eos;
    EXPECT_EQ(h.stats[0].num_generated_tokens, 3) << eos;
    EXPECT_EQ(h.text(false).size(), 3u) << "EOS text emitted for " << eos << ": " << h.text(false);
  }
}

TEST(Generation, G3_D4_IgnoreEosRunsTheWholeBudgetWithoutEosText) {
  Harness h(dynamic_kv(128, 512));
  h.program->force_all = kEos;
  GenerationConfig c = greedy(6);
  c.ignore_eos = true;
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  EXPECT_EQ(h.pieces.size(), 6u);
  EXPECT_EQ(h.text(false), "");  // "</s>" is never emitted
  EXPECT_EQ(h.stats[0].num_generated_tokens, 6);
}

TEST(Generation, G4_StopStringSplitAcrossTokensIsNotEmitted) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kHello;
  h.program->forced[kP] = kSt;
  h.program->forced[kP + 1] = kOp;
  GenerationConfig c = greedy(20);
  c.stop = {"Stop"};
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  EXPECT_EQ(h.text(false), "Hello");
  EXPECT_EQ(h.program->calls.size(), 3u);  // ended when "op" completed the match
  EXPECT_EQ(h.stats[0].num_generated_tokens, 3);
}

TEST(Generation, G4_D3_StopPrefixThatDivergesIsEmitted) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kSt;
  h.program->forced[kP] = kStar;
  GenerationConfig c = greedy(5);
  c.stop = {"Stop"};
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  ASSERT_EQ(h.pieces.size(), 5u);
  EXPECT_EQ(h.pieces[0], "");  // "St" held back while it could still match
  EXPECT_EQ(h.pieces[1], "St*");
  EXPECT_EQ(h.text(false).substr(0, 3), "St*");
}

TEST(Generation, G4_D3_HeldTextIsReleasedWithTheLastPiece) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kSt;
  GenerationConfig c = greedy(1);
  c.stop = {"Stop"};
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  ASSERT_EQ(h.pieces.size(), 1u);  // G2 holds with stop strings too
  EXPECT_EQ(h.pieces[0], "St");
}

TEST(Generation, G4_StopStringInsideOneToken) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kHello;
  GenerationConfig c = greedy(5);
  c.stop = {"ell"};
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  EXPECT_EQ(h.text(false), "H");
  EXPECT_EQ(h.program->calls.size(), 1u);
}

TEST(Generation, G4_PiecesNeverSplitUtf8) {
  Harness h(dynamic_kv(128, 512));
  h.program->forced[kP - 1] = kByteC3;
  h.program->forced[kP] = kByteA9;
  ASSERT_TRUE(h.generate(kPrompt, greedy(4)).ok());
  ASSERT_EQ(h.pieces.size(), 4u);
  EXPECT_EQ(h.pieces[0], "");
  EXPECT_EQ(h.pieces[1], "\xC3\xA9");
  for (const auto& p : h.pieces) EXPECT_EQ(utf8_first_invalid(p), std::string_view::npos);
}

TEST(Generation, StopStringFilterHoldsOnlyPossiblePrefixes) {
  StopStringFilter f({"</s>", "END"});
  auto o = f.push("abc<");
  EXPECT_EQ(o.text, "abc");
  EXPECT_FALSE(o.matched);
  o = f.push("/x");
  EXPECT_EQ(o.text, "</x");
  o = f.push("EN");
  EXPECT_EQ(o.text, "");
  EXPECT_EQ(f.held(), "EN");
  o = f.push("Dtail");
  EXPECT_TRUE(o.matched);
  EXPECT_EQ(o.text, "");
  StopStringFilter g({"ab"});
  EXPECT_EQ(g.push("xa").text, "x");
  EXPECT_EQ(g.flush(), "a");
}

TEST(Generation, G5_FixedSeedSameTextDifferentSeedDifferentText) {
  auto run = [](uint64_t seed) {
    Harness h(dynamic_kv(128, 512));
    GenerationConfig c = greedy(40);
    c.temperature = 1.0f;
    c.seed = seed;
    EXPECT_TRUE(h.generate(kPrompt, c).ok());
    return h.text(false);
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Generation, G5_NegativeTemperatureIsAnErrorBeforeAnyCall) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(5);
  c.temperature = -1.0f;
  Status s = h.generate(kPrompt, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("temperature"), std::string::npos);
  EXPECT_TRUE(h.program->calls.empty());
  c = greedy(5);
  c.top_p = 1.5f;
  s = h.generate(kPrompt, c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("top_p"), std::string::npos);
}

TEST(Generation, G6_D7_ResetMakesNextGenerateEqualAFreshRunners) {
  GenerationConfig c = greedy(12);
  c.temperature = 0.9f;
  c.seed = 7;
  c.repeat_penalty = 1.3f;
  Harness fresh(dynamic_kv(128, 512));
  ASSERT_TRUE(fresh.generate("second", c).ok());

  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.generate("first prompt", c).ok());
  h.runner->reset();
  EXPECT_EQ(h.runner->position(), 0);
  EXPECT_GE(h.program->resets, 1);
  const size_t before = h.program->calls.size();
  ASSERT_TRUE(h.generate("second", c).ok());
  EXPECT_EQ(h.pieces, fresh.pieces);
  ASSERT_EQ(h.program->calls.size() - before, fresh.program->calls.size());
  for (size_t i = 0; i < fresh.program->calls.size(); ++i) {
    EXPECT_EQ(h.program->calls[before + i].start_pos, fresh.program->calls[i].start_pos);
    EXPECT_EQ(h.program->calls[before + i].tokens, fresh.program->calls[i].tokens);
  }
}

// D7: one sampler for the runner's life. Its random stream carries on into
// the next generate() when the seed is the same, and starts afresh when a
// different seed is given. The first generate() of each runner is forced to
// the same 4 tokens (every draw still taken), so the second ones see the same
// sequence and differ only by the stream they draw from.
TEST(Generation, D7_SameSeedCarriesTheStreamOnADifferentSeedStartsItAfresh) {
  const auto second_reply = [](uint64_t first_seed, uint64_t second_seed) {
    Harness h(dynamic_kv(128, 512));
    GenerationConfig c = greedy(4);
    c.temperature = 3.0f;  // flat: two streams give the same 8 tokens with negligible chance
    c.seed = first_seed;
    h.program->force_all = kHello;
    EXPECT_TRUE(h.generate(kPrompt, c).ok());
    h.program->force_all = -1;
    h.pieces.clear();
    c.seed = second_seed;
    c.max_new_tokens = 8;
    EXPECT_TRUE(h.generate(" and", c).ok());
    return h.pieces;
  };
  const auto carried = second_reply(7, 7), fresh = second_reply(5, 7), fresh_again = second_reply(9, 7);
  ASSERT_EQ(carried.size(), 8u);
  EXPECT_EQ(fresh, fresh_again);  // a new seed: the same stream whatever came before
  EXPECT_NE(carried, fresh);      // the same seed: the stream went on from the first reply's draws
  EXPECT_EQ(carried, second_reply(7, 7));
}

TEST(Generation, G7_WarmupEmitsNothingAndResets) {
  Harness fresh(dynamic_kv(128, 512));
  ASSERT_TRUE(fresh.generate(kPrompt, greedy(5)).ok());

  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.runner->warmup("warm up", 4).ok());
  EXPECT_FALSE(h.program->calls.empty());
  EXPECT_EQ(h.runner->position(), 0);
  EXPECT_GE(h.program->resets, 1);
  ASSERT_TRUE(h.generate(kPrompt, greedy(5)).ok());
  EXPECT_EQ(h.pieces, fresh.pieces);
}

TEST(Generation, G7_WarmingConfigSuppressesCallbacks) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(5);
  c.echo = true;
  c.warming = true;
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  EXPECT_TRUE(h.pieces.empty());
  EXPECT_TRUE(h.stats.empty());
}

TEST(Generation, G8_PromptTokenizingToNothingIsAnError) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(5);
  c.num_bos = 0;
  Status s = h.generate("\r", c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenized to no tokens"), std::string::npos) << s.message();
  EXPECT_TRUE(h.program->calls.empty());
}

TEST(Generation, G8_TokenizerErrorsAreReturned) {
  Harness h(dynamic_kv(128, 512));
  Status s = h.generate("tab\there", greedy(5));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tokenizing the prompt"), std::string::npos) << s.message();
}

TEST(Generation, LoadIsIdempotentAndReadsLimits) {
  Harness h(legacy(128, 512));
  EXPECT_FALSE(h.runner->is_loaded());
  ASSERT_TRUE(h.runner->load().ok());
  ASSERT_TRUE(h.runner->load().ok());
  EXPECT_TRUE(h.runner->is_loaded());
  EXPECT_EQ(h.runner->limits().max_seq_len, 128);
  EXPECT_EQ(h.runner->limits().max_context_len, 512);
  EXPECT_EQ(h.runner->limits().token_bound, 127);
  EXPECT_TRUE(h.runner->limits().dynamic_shape);
}

TEST(Generation, R9_D6_StopDuringPrefillIsHonouredBetweenChunks) {
  Harness h(dynamic_kv(8, 512));
  h.program->on_forward = [&](size_t n) {
    if (n == 2) h.runner->stop();
  };
  GenerationConfig c = greedy(10);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(40), c).ok());
  EXPECT_EQ(h.program->calls.size(), 2u);  // 5 chunks planned
  EXPECT_TRUE(h.pieces.empty());
  ASSERT_EQ(h.stats.size(), 1u);
  EXPECT_EQ(h.stats[0].num_generated_tokens, 0);
  EXPECT_EQ(h.runner->position(), 0);  // the unfinished prompt is not kept
}

TEST(Generation, R9_D6_StopDuringLastPrefillChunkIsNotLost) {
  Harness h(dynamic_kv(128, 512));
  h.program->on_forward = [&](size_t n) {
    if (n == 1) h.runner->stop();
  };
  ASSERT_TRUE(h.generate(kPrompt, greedy(10)).ok());
  EXPECT_EQ(h.program->calls.size(), 1u);
  EXPECT_TRUE(h.pieces.empty());
}

// D6, the prefill() half: stopped between chunks, prefill() returns an error
// that says so, keeps nothing of the prompt and leaves nothing pending.
TEST(Generation, R9_D6_StoppedPrefillIsAnErrorAndKeepsNothing) {
  Harness h(dynamic_kv(8, 512));
  h.program->on_forward = [&](size_t n) {
    if (n == 2) h.runner->stop();
  };
  GenerationConfig c = greedy(10);
  c.num_bos = 0;
  Status s = h.runner->prefill(prompt_of(40), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("stopped by stop()"), std::string::npos) << s.message();
  EXPECT_EQ(h.program->calls.size(), 2u);
  EXPECT_EQ(h.runner->position(), 0);
  EXPECT_FALSE(h.generate("", c).ok());  // no prediction pending
}

TEST(Generation, R9_StopFromAnotherThreadDuringDecode) {
  Harness h(dynamic_kv(128, 4096));
  std::atomic<int> calls{0};
  h.program->sleep_ms = 1;
  h.program->on_forward = [&](size_t) { calls.fetch_add(1); };
  std::thread stopper([&] {
    while (calls.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    h.runner->stop();
  });
  GenerationConfig c = greedy(-1);
  ASSERT_TRUE(h.generate(kPrompt, c).ok());
  stopper.join();
  const int64_t generated = h.stats.at(0).num_generated_tokens;
  EXPECT_GE(generated, 20);
  EXPECT_LT(generated, 4096 - kP);
  EXPECT_EQ(static_cast<int64_t>(h.pieces.size()), generated);
}

TEST(Generation, R9_StopFromAnotherThreadDuringPrefill) {
  Harness h(static_one(128, 1024));
  std::atomic<int> calls{0};
  h.program->sleep_ms = 1;
  h.program->on_forward = [&](size_t) { calls.fetch_add(1); };
  std::thread stopper([&] {
    while (calls.load() < 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    h.runner->stop();
  });
  GenerationConfig c = greedy(10);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(600), c).ok());
  stopper.join();
  EXPECT_LT(h.program->calls.size(), 600u);
  EXPECT_TRUE(h.pieces.empty());
  // The next generate starts clean: stop() does not leak into it.
  ASSERT_TRUE(h.generate(kPrompt, greedy(3)).ok());
  EXPECT_EQ(h.pieces.size(), 3u);
}

}  // namespace
}  // namespace llmpack::testing
