// The prefill matrix (CONTRACT R1-R7): for S = 128, C in {128, 512} and each
// package kind, prompts of S-1, S, S+1, 2S+1 and C-1 tokens through
// generate() and prefill(): the exact forward calls, or the specified error
// before any call; and the logits after prefill equal for every kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "runner/harness.h"

namespace llmpack::testing {
namespace {

constexpr int64_t kS = 128;

struct Expected {
  bool ok = true;
  std::vector<std::string> error_parts;  // substrings the error must contain
  std::vector<int64_t> sizes;            // tokens passed per call (padding included)
  std::vector<int64_t> positions;        // start_pos per call
  std::vector<int64_t> n_valid;          // n_valid per call (-1: unpadded)
};

// The rules of R1-R6 written out independently of the runner's code.
Expected expected_for(const FakeKind& k, int64_t P) {
  Expected e;
  if (P > k.C - 1) {
    e.ok = false;
    e.error_parts = {"position 0", "prompt of " + std::to_string(P) + " tokens",
                     "context length " + std::to_string(k.C)};
    return e;
  }
  if (!k.kv) {
    if (P > k.B) {
      e.ok = false;
      e.error_parts = {"prompt of " + std::to_string(P) + " tokens", "token bound " + std::to_string(k.B)};
      return e;
    }
    e.sizes = {P};
    e.positions = {0};
    e.n_valid = {-1};
    return e;
  }
  const int64_t chunk = k.dynamic ? std::min(k.S, k.B) : k.B;
  for (int64_t done = 0; done < P; done += chunk) {
    const int64_t n = std::min(chunk, P - done);
    e.positions.push_back(done);
    if (k.dynamic) {
      e.sizes.push_back(n);
      e.n_valid.push_back(-1);
    } else {
      e.sizes.push_back(k.B);
      e.n_valid.push_back(n < k.B ? n : -1);
    }
  }
  return e;
}

std::vector<FakeKind> kinds_for(int64_t C) {
  return {dynamic_kv(kS, C), legacy(kS, C), static_one(kS, C), static_b(kS, C, kS), static_b(kS, C, 32), no_kv(kS, C)};
}

// The logits a model gives after reading `P` prompt tokens at once.
std::vector<float> reference_logits(int64_t P) {
  FakeProgram ref(dynamic_kv(4096, 4096));
  std::vector<int64_t> tokens;
  for (char c : prompt_of(P)) tokens.push_back(char_id(c));
  auto r = ref.forward(tokens, 0, false, -1);
  EXPECT_TRUE(r.ok());
  return ref.last_logits();
}

void check_calls(const FakeProgram& program, const Expected& e, const std::string& where) {
  ASSERT_EQ(program.calls.size(), e.sizes.size()) << where;
  for (size_t i = 0; i < e.sizes.size(); ++i) {
    EXPECT_EQ(static_cast<int64_t>(program.calls[i].tokens.size()), e.sizes[i]) << where << " call " << i;
    EXPECT_EQ(program.calls[i].start_pos, e.positions[i]) << where << " call " << i;
    EXPECT_EQ(program.calls[i].n_valid, e.n_valid[i]) << where << " call " << i;
  }
}

class PrefillMatrix : public ::testing::TestWithParam<int64_t> {};

TEST_P(PrefillMatrix, R2_R6_GenerateAndPrefillMakeExactlyTheSpecifiedCalls) {
  const int64_t C = GetParam();
  for (const FakeKind& kind : kinds_for(C)) {
    for (int64_t P : {kS - 1, kS, kS + 1, 2 * kS + 1, C - 1}) {
      const Expected e = expected_for(kind, P);
      const std::vector<float> want_logits = reference_logits(P);
      for (bool via_prefill : {false, true}) {
        const std::string where = kind.name + " C=" + std::to_string(C) + " P=" + std::to_string(P) +
                                  (via_prefill ? " prefill()" : " generate()");
        Harness h(kind);
        GenerationConfig config = greedy(1);  // one token: no decode call after prefill
        config.num_bos = 0;
        Status s = via_prefill ? h.runner->prefill(prompt_of(P), config) : h.generate(prompt_of(P), config);
        if (!e.ok) {
          ASSERT_FALSE(s.ok()) << where;
          for (const auto& part : e.error_parts) {
            EXPECT_NE(s.message().find(part), std::string::npos) << where << ": " << s.message();
          }
          EXPECT_TRUE(h.program->calls.empty()) << where << ": refused only before any call";
          continue;
        }
        ASSERT_TRUE(s.ok()) << where << ": " << s.message();
        check_calls(*h.program, e, where);
        // R4/R8 with the fake: the same sequence is in the cache whatever the kind.
        EXPECT_EQ(h.program->last_logits(), want_logits) << where;
        if (!via_prefill) {
          EXPECT_EQ(h.pieces.size(), 1u) << where;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Contexts, PrefillMatrix, ::testing::Values(int64_t{128}, int64_t{512}));

// Literal cases, so the matrix's rule function is not the only witness.
TEST(Prefill, R2_PromptOfExactlyChunkIsOneCall) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(128), c).ok());
  ASSERT_EQ(h.program->calls.size(), 1u);
  EXPECT_EQ(h.program->calls[0].tokens.size(), 128u);
}

TEST(Prefill, R2_LegacyPackagePrefillsSTokensIn127Plus1) {
  Harness h(legacy(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(128), c).ok());
  ASSERT_EQ(h.program->calls.size(), 2u);
  EXPECT_EQ(h.program->calls[0].tokens.size(), 127u);
  EXPECT_EQ(h.program->calls[0].start_pos, 0);
  EXPECT_EQ(h.program->calls[1].tokens.size(), 1u);
  EXPECT_EQ(h.program->calls[1].start_pos, 127);
}

TEST(Prefill, R2_ContextMinusOneInFourCalls) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(511), c).ok());
  std::vector<size_t> sizes;
  for (const auto& call : h.program->calls) sizes.push_back(call.tokens.size());
  EXPECT_EQ(sizes, (std::vector<size_t>{128, 128, 128, 127}));
}

TEST(Prefill, R4_StaticChunkPadsLastCallWithNValid) {
  Harness h(static_b(128, 512, 128));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(129), c).ok());
  ASSERT_EQ(h.program->calls.size(), 2u);
  EXPECT_EQ(h.program->calls[1].tokens.size(), 128u);
  EXPECT_EQ(h.program->calls[1].start_pos, 128);
  EXPECT_EQ(h.program->calls[1].n_valid, 1);
  // Padding repeats the last valid token.
  const auto& t = h.program->calls[1].tokens;
  EXPECT_TRUE(std::all_of(t.begin(), t.end(), [&](int64_t x) { return x == t[0]; }));
}

TEST(Prefill, R3_StaticOneIsOneTokenPerCall) {
  Harness h(static_one(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(130), c).ok());
  ASSERT_EQ(h.program->calls.size(), 130u);
  for (size_t i = 0; i < 130; ++i) {
    ASSERT_EQ(h.program->calls[i].tokens.size(), 1u);
    ASSERT_EQ(h.program->calls[i].start_pos, static_cast<int64_t>(i));
  }
}

TEST(Prefill, R5_NoKvCacheRefusesPromptBeyondBound) {
  Harness h(no_kv(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  Status s = h.generate(prompt_of(129), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("prompt of 129 tokens exceeds forward's token bound 128"), std::string::npos)
      << s.message();
  EXPECT_TRUE(h.program->calls.empty());
}

TEST(Prefill, R5_NoKvCacheResendsWholeSequenceEachDecodeStep) {
  Harness h(no_kv(128, 512));
  GenerationConfig c = greedy(4);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(10), c).ok());
  ASSERT_EQ(h.program->calls.size(), 4u);  // prefill + 3 decode steps
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(h.program->calls[i].start_pos, 0);
    EXPECT_EQ(h.program->calls[i].tokens.size(), 10 + i);
  }
  // Each call starts with the previous call's tokens.
  for (size_t i = 1; i < 4; ++i) {
    const auto& prev = h.program->calls[i - 1].tokens;
    EXPECT_TRUE(std::equal(prev.begin(), prev.end(), h.program->calls[i].tokens.begin()));
  }
}

TEST(Prefill, R6_PromptOfContextTokensRefusedBeforeAnyCall) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  Status s = h.generate(prompt_of(512), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("position 0 + prompt of 512 tokens exceeds the context length 512"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(h.program->calls.empty());
}

TEST(Prefill, R6_ErrorNamesTheCurrentPosition) {
  Harness h(dynamic_kv(128, 128));
  GenerationConfig c = greedy(5);
  c.num_bos = 0;
  ASSERT_TRUE(h.generate(prompt_of(100), c).ok());
  EXPECT_EQ(h.runner->position(), 104);  // 100 prompt + 4 decode steps
  const size_t calls = h.program->calls.size();
  Status s = h.generate(prompt_of(30), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("position 104 + prompt of 30 tokens exceeds the context length 128"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(h.program->calls.size(), calls);
}

// D10: a prompt that breaks a fit rule (R5 or R6) and the budget (G1,
// seq_len at or below the prompt) at once gets the fit error, before any call.
TEST(Prefill, D10_FitErrorWinsOverTheBudgetError) {
  GenerationConfig c = greedy(-1);
  c.num_bos = 0;
  c.seq_len = 50;
  Harness no_cache(no_kv(128, 512));
  Status s = no_cache.generate(prompt_of(129), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("prompt of 129 tokens exceeds forward's token bound 128"), std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("seq_len"), std::string::npos) << s.message();
  EXPECT_TRUE(no_cache.program->calls.empty());
  Harness cached(dynamic_kv(128, 512));
  s = cached.generate(prompt_of(512), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("position 0 + prompt of 512 tokens exceeds the context length 512"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(s.message().find("seq_len"), std::string::npos) << s.message();
  EXPECT_TRUE(cached.program->calls.empty());
}

TEST(Prefill, R1_WarnsOnceWhenSeqLenExceedsBound) {
  Harness h(legacy(128, 512));
  GenerationConfig c = greedy(2);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.generate(prompt_of(20), c).ok());
  ASSERT_EQ(h.warnings(), 1);
  std::string warning;
  for (const auto& r : *h.logs) {
    if (r.level == LogLevel::kWarning) warning = r.message;
  }
  EXPECT_NE(warning.find("128"), std::string::npos) << warning;
  EXPECT_NE(warning.find("127"), std::string::npos) << warning;
  EXPECT_NE(warning.find("chunks of 127"), std::string::npos) << warning;
}

TEST(Prefill, R1_NoWarningWhenBoundCoversSeqLen) {
  for (const FakeKind& k : kinds_for(512)) {
    if (k.name == "legacy") continue;
    Harness h(k);
    ASSERT_TRUE(h.generate(prompt_of(20), greedy(2)).ok()) << k.name;
    EXPECT_EQ(h.warnings(), 0) << k.name;
  }
}

TEST(Prefill, R8_GreedyContinuationsAgreeAcrossKinds) {
  std::string want;
  for (const FakeKind& k : kinds_for(512)) {
    Harness h(k);
    ASSERT_TRUE(h.generate(prompt_of(40), greedy(20)).ok()) << k.name;
    const std::string got = h.text(false);
    EXPECT_EQ(got.size(), 20u) << k.name;
    if (want.empty()) want = got;
    EXPECT_EQ(got, want) << k.name;
  }
}

TEST(Prefill, R7_PrefillThenEmptyGenerateContinues) {
  Harness fresh(dynamic_kv(128, 512));
  ASSERT_TRUE(fresh.generate(prompt_of(30), greedy(8)).ok());

  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.runner->prefill(prompt_of(30), greedy(8)).ok());
  EXPECT_EQ(h.runner->position(), 31);  // BOS + 30
  ASSERT_TRUE(h.generate("", greedy(8)).ok());
  EXPECT_EQ(h.pieces, fresh.pieces);
  EXPECT_EQ(h.program->calls.size(), fresh.program->calls.size());
  ASSERT_FALSE(h.stats.empty());
  EXPECT_EQ(h.stats.back().num_generated_tokens, 8);

  // The pending token was used: nothing is pending now.
  Status again = h.generate("", greedy(8));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("no prefill() is pending"), std::string::npos) << again.message();
}

TEST(Prefill, R7_EmptyGenerateWithNothingPendingIsAnError) {
  Harness h(dynamic_kv(128, 512));
  Status s = h.generate("", greedy(8));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("empty"), std::string::npos);
  EXPECT_TRUE(h.program->calls.empty());
}

TEST(Prefill, R7_PrefillObeysCapacity) {
  Harness h(legacy(128, 128));
  GenerationConfig c = greedy(1);
  c.num_bos = 0;
  Status s = h.runner->prefill(prompt_of(128), c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("context length 128"), std::string::npos) << s.message();
  EXPECT_TRUE(h.program->calls.empty());
}

// D8: generate() with a non-empty prompt after prefill() discards the
// prediction prefill left pending: the prompt's tokens follow the prefilled
// ones directly, and the text equals that of one prompt of both.
TEST(Prefill, D8_GenerateWithAPromptAfterPrefillDiscardsThePendingToken) {
  GenerationConfig c = greedy(6);
  c.num_bos = 0;
  Harness h(dynamic_kv(128, 512));
  ASSERT_TRUE(h.runner->prefill(prompt_of(10), c).ok());
  const size_t before = h.program->calls.size();
  const std::string more = prompt_of(15).substr(10);
  ASSERT_TRUE(h.generate(more, c).ok());
  ASSERT_GT(h.program->calls.size(), before);
  const auto& first = h.program->calls[before];
  EXPECT_EQ(first.start_pos, 10);
  ASSERT_EQ(first.tokens.size(), more.size());
  for (size_t i = 0; i < more.size(); ++i) EXPECT_EQ(first.tokens[i], char_id(more[i])) << i;
  Harness whole(dynamic_kv(128, 512));
  ASSERT_TRUE(whole.generate(prompt_of(15), c).ok());
  EXPECT_EQ(h.pieces, whole.pieces);
}

TEST(Prefill, D8_ConsecutivePrefillsExtendTheSequence) {
  Harness h(dynamic_kv(128, 512));
  GenerationConfig c = greedy(4);
  c.num_bos = 0;
  ASSERT_TRUE(h.runner->prefill(prompt_of(10), c).ok());
  ASSERT_TRUE(h.runner->prefill(prompt_of(5), c).ok());
  EXPECT_EQ(h.runner->position(), 15);
  ASSERT_EQ(h.program->calls.size(), 2u);
  EXPECT_EQ(h.program->calls[1].start_pos, 10);
}

}  // namespace
}  // namespace llmpack::testing
